"""Instructions at URLs (config `instructions` entries that start with http:// or https://).

Each URL is fetched once per process, with a short timeout, and the text kept for every
request after (the prompt cache reads the system prompt byte for byte, so it must not
change while agent-tui runs). A copy is cached in the data dir: when the URL cannot be
fetched the copy is used, else the URL is left out; either way one warning says so.
Nothing waits on it but the first request, and that at most `FETCH_TIMEOUT` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_tui import paths

FETCH_TIMEOUT = 5.0
"""Seconds one URL may take, connection to last byte (OpenCode's is 5 s too)."""
MAX_BYTES = 1024 * 1024
"""An instruction text larger than this is refused (a page, not instructions)."""
CACHE_DIR_NAME = "instructions"


def is_url(entry: str) -> bool:
    return entry.startswith(("http://", "https://"))


@dataclass(frozen=True)
class Fetched:
    text: str | None
    """The instructions; None when neither the URL nor a cached copy gave any."""
    note: str | None = None
    """The one-line warning when the URL could not be fetched."""


_fetched: dict[Path, Fetched] = {}
"""The URL's cache path (the data dir and the URL) -> what this process sends for it."""
_pending: dict[Path, asyncio.Future[Fetched]] = {}


def cache_path(url: str) -> Path:
    digest = hashlib.sha256(url.encode()).hexdigest()[:32]
    return paths.data_dir() / CACHE_DIR_NAME / f"{digest}.md"


def url_text(url: str) -> str | None:
    """The text this process sends for `url` (None: not fetched yet, or unavailable)."""
    fetched = _fetched.get(cache_path(url))
    return fetched.text if fetched else None


async def _download(url: str) -> str:
    import httpx  # imported here: only configs with instruction URLs pay for it

    async with (
        httpx.AsyncClient(follow_redirects=True, timeout=FETCH_TIMEOUT) as client,
        client.stream("GET", url, headers={"Accept": "text/*"}) as response,
    ):
        if response.status_code >= 400:
            raise OSError(f"HTTP {response.status_code} {response.reason_phrase}")
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_BYTES:
                raise OSError(f"larger than {MAX_BYTES // 1024} KB")
        return bytes(body).decode(response.encoding or "utf-8", errors="replace")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {FETCH_TIMEOUT:g} s"
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _read_cache(path: Path) -> tuple[str, str] | None:
    """(text, the date it was cached) of a cached copy, or None."""
    try:
        text = path.read_text(encoding="utf-8")
        when = dt.datetime.fromtimestamp(path.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
    except OSError:
        return None
    return text, when


async def _fetch(url: str) -> Fetched:
    path = cache_path(url)
    try:
        async with asyncio.timeout(FETCH_TIMEOUT):
            text = await _download(url)
    except Exception as exc:  # any failure: the cached copy, or nothing; never an error
        failed = f"Instructions from {url} could not be fetched ({_reason(exc)}); "
        if (cached := await asyncio.to_thread(_read_cache, path)) is not None:
            return Fetched(cached[0], failed + f"using the copy cached {cached[1]}.")
        return Fetched(None, failed + "left out.")
    with contextlib.suppress(OSError):  # a read-only data dir only loses the fallback
        await asyncio.to_thread(paths.atomic_write, path, text.encode("utf-8"))
    return Fetched(text)


async def fetch_all(urls: list[str]) -> list[str]:
    """Fetch the URLs not fetched yet in this process, at once; return the warnings of
    those this call fetched (each URL warns once). Concurrent callers share the fetch."""
    wanted = {cache_path(url): url for url in urls if is_url(url)}
    wanted = {key: url for key, url in wanted.items() if key not in _fetched}
    for key, url in wanted.items():
        if key not in _pending or _pending[key].cancelled():  # cancelled: a closed loop's
            _pending[key] = asyncio.ensure_future(_fetch(url))
    notes: list[str] = []
    for key in wanted:
        fetched = await asyncio.shield(_pending[key])
        if key not in _fetched:
            _fetched[key] = fetched
            _pending.pop(key, None)
            if fetched.note:
                notes.append(fetched.note)
    return notes


class InstructionUrls:
    """Config `instructions` URLs, fetched once in the background for the engine's life;
    a failure is a warning (`warn`), never an error."""

    def __init__(self, entries: list[str], warn: Callable[[str], None]) -> None:
        self._urls = [entry for entry in entries if is_url(entry)]
        self._warn = warn
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Needs a running event loop: a no-op without one, when started, or with no URLs."""
        if self._task is not None or not self._urls:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._task = asyncio.create_task(self._fetch(), name="instruction-urls")

    async def _fetch(self) -> None:
        for note in await fetch_all(self._urls):
            self._warn(note)

    async def ready(self) -> None:
        """In the system prompt from the first request: until fetched (if started)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
