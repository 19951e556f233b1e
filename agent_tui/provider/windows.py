"""The context window of a model on a local server: asked, learned, remembered.

litellm's model map knows the windows of hosted models, not what a local server runs:
llama.cpp serves whatever `--ctx-size` it was started with, Ollama cuts every prompt to
its `num_ctx` (silently), LM Studio loads a model with the length set in its UI. So for a
model behind a local or self-hosted server (`openai/…` with an `api_base`, `ollama…/`,
`lm_studio/`, `hosted_vllm/`, `llamafile/`) the server is asked, all at once with short
timeouts:

- llama.cpp        `GET  /props`               default_generation_settings.n_ctx (per slot)
- Ollama           `POST /api/show`            model_info.<arch>.context_length (the model's)
                   `GET  /api/ps`              context_length of the loaded model (num_ctx)
- LM Studio        `GET  /api/v0/models/{id}`  loaded_context_length (max_context_length)
- vLLM             `GET  /v1/models`           max_model_len

The answer (or that none came) is cached for the process. Where no server answers, the
window is learned from the first overflow error (window_store.py).
`models.<id>.limit.context` in the config always wins. Nothing here imports litellm;
httpx is imported when a server is asked.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

from agent_tui.config.settings import Config
from agent_tui.errors import ConfigError
from agent_tui.provider.window_store import (
    LearnedWindow,
    read_store,
    store_path,
    window_key,
    write_learned,
)

T = TypeVar("T")
PROBE_TIMEOUT = 0.5
"""Seconds each question may take (a closed port fails at once)."""
PROBE_MAX_BYTES = 2_000_000

SERVED_PROVIDERS = frozenset(
    {"openai", "openai_like", "ollama", "ollama_chat", "lm_studio", "hosted_vllm", "llamafile"}
)
"""litellm providers that may be a server the person runs (asked when they have a base)."""
OLLAMA_PROVIDERS = frozenset({"ollama", "ollama_chat"})
DEFAULT_BASES = {
    "ollama": ("OLLAMA_API_BASE", "http://localhost:11434"),
    "ollama_chat": ("OLLAMA_API_BASE", "http://localhost:11434"),
    "lm_studio": ("LM_STUDIO_API_BASE", "http://127.0.0.1:1234/v1"),
    "hosted_vllm": ("HOSTED_VLLM_API_BASE", ""),
    "llamafile": ("LLAMAFILE_API_BASE", "http://127.0.0.1:8080/v1"),
}
"""Where litellm sends these providers' requests when the config names no base."""


@dataclass(frozen=True)
class ServerWindow:
    context: int
    """Tokens a request may use on this server (prompt and answer)."""
    source: str
    """Who said so: "llama.cpp GET /props", "learned from an overflow error", …"""
    model_window: int | None = None
    """The model's own window, when the server tells it apart (Ollama, LM Studio)."""
    settled: bool = True
    """False while Ollama or LM Studio has not loaded the model (its running window is not
    known yet: asked again at the next step)."""
    ollama: bool = False

    @property
    def truncates(self) -> bool:
        """Ollama cuts prompts longer than num_ctx without an error."""
        return self.ollama and self.settled and (self.model_window or 0) > self.context


@dataclass(frozen=True)
class Target:
    model: str
    name: str
    """The model's name on the server (the id without litellm's provider prefix)."""
    base: str
    """The API base as litellm uses it (OpenAI-compatible ones end in /v1)."""
    ollama: bool
    api_key: str | None = None
    """The configured key, sent to this base as litellm would (vLLM's --api-key guards
    /v1/models too)."""

    @property
    def root(self) -> str:
        """The server's address without the OpenAI-compatible `/v1`."""
        return re.sub(r"/v1/?$", "", self.base.rstrip("/"))

    @property
    def key(self) -> str:
        return window_key(self.model, self.base)


def configured_window(model: str, config: Config) -> int:
    """`models.<id>.limit.context` when the config sets it (0 otherwise)."""
    limit = config.limit_for(model)
    return limit.context if limit is not None else 0


def target(model: str, config: Config) -> Target | None:
    """The server to ask about `model`, or None (a hosted provider, or no base)."""
    if "/" not in model:
        return None
    provider, name = model.split("/", 1)
    if provider not in SERVED_PROVIDERS or not name:
        return None
    try:
        base, key = config.provider_for(model)
    except ConfigError:
        base, key = None, None
    if not base and provider in DEFAULT_BASES:
        variable, default = DEFAULT_BASES[provider]
        base = os.environ.get(variable) or default
    if not base:
        return None  # `openai/…` without a base is OpenAI itself
    return Target(model, name, base.rstrip("/"), provider in OLLAMA_PROVIDERS, key)


# ---- what is known ----------------------------------------------------------------------


class _Known:
    """Windows found this process: settled answers of servers, and learned ones (read
    from the data dir once per data dir)."""

    def __init__(self) -> None:
        self.probed: dict[str, ServerWindow] = {}
        self.unanswered: set[str] = set()
        """Servers that answered none of the questions (not asked again this process)."""
        self.learned: dict[str, dict[str, LearnedWindow]] = {}
        self.tasks: dict[str, asyncio.Task[ServerWindow | None]] = {}

    def learned_for(self, key: str) -> LearnedWindow | None:
        path = str(store_path())
        if path not in self.learned:
            self.learned[path] = dict(read_store().windows)
        return self.learned[path].get(key)


_known = _Known()


def known_window(model: str, config: Config) -> ServerWindow | None:
    """What a server said about `model`'s window, or what its overflow error named; None
    when the config sets the window, or nothing is known. Never does I/O beyond reading
    the small learned-windows file once."""
    if configured_window(model, config):
        return None
    found = target(model, config)
    key = found.key if found is not None else window_key(model, None)
    if key in _known.probed:
        return _known.probed[key]
    learned = _known.learned_for(key)
    if learned is not None:
        return ServerWindow(learned.context, "learned from an overflow error")
    return None


def start_probe(model: str, config: Config) -> Awaitable[ServerWindow | None] | None:
    """Ask the server now, in the background (the answer is awaited by `discover_window`);
    None when there is nothing to ask."""
    found = target(model, config)
    if found is None or configured_window(model, config):
        return None
    settled = _known.probed.get(found.key)
    if (settled is not None and settled.settled) or found.key in _known.unanswered:
        return None
    task = _known.tasks.get(found.key)
    if task is None or task.done():
        task = _known.tasks[found.key] = asyncio.create_task(_probe_and_keep(found))
    return task


async def discover_window(model: str, config: Config) -> ServerWindow | None:
    """The window of `model` as the server tells it (asked at most once per step until
    the answer is settled), else the learned one; None when unknown or configured."""
    pending = start_probe(model, config)
    if pending is not None:
        await pending
    return known_window(model, config)


async def _probe_and_keep(found: Target) -> ServerWindow | None:
    window = await probe(found)
    if window is None:
        _known.unanswered.add(found.key)
    elif window.settled or found.key not in _known.probed:
        _known.probed[found.key] = window
    return window


async def learn_window(model: str, config: Config, context: int, detail: str = "") -> bool:
    """Remember the window an overflow error named. Only when it tells something new: the
    config does not set the window, and nothing known says it is as small already.
    Returns True when it was remembered."""
    if configured_window(model, config):
        return False
    current = known_window(model, config)
    if current is not None and current.context <= context:
        return False
    found = target(model, config)
    key = found.key if found is not None else window_key(model, None)
    entry = LearnedWindow(context=context, detail=detail[:300])
    await asyncio.to_thread(write_learned, key, entry)
    _known.learned.clear()  # read again, with this entry and any another process wrote
    if found is not None:
        _known.probed[key] = ServerWindow(context, "learned from an overflow error")
    return True


# ---- asking the servers -------------------------------------------------------------------


async def probe(found: Target, timeout: float = PROBE_TIMEOUT) -> ServerWindow | None:
    """Every question a server of `found`'s kind answers, at once; the first answer in
    the order Ollama, LM Studio, vLLM, llama.cpp (only one kind answers on one port)."""
    import httpx

    headers = {"Authorization": f"Bearer {found.api_key}"} if found.api_key else None
    # Plain http needs no TLS: skipping the certificate store saves its load per probe.
    verify = found.base.startswith("https:")
    async with httpx.AsyncClient(
        timeout=timeout, trust_env=False, headers=headers, verify=verify
    ) as client:
        asks = [_ollama(client, found)]
        if not found.ollama:
            asks += [_lm_studio(client, found), _vllm(client, found), _llama_cpp(client, found)]
        return await first_answer(asks, timeout * 3)


async def first_answer(asks: list[Awaitable[T | None]], timeout: float) -> T | None:
    """The first answer that is not None, in `asks` order, of questions asked at once;
    after `timeout`, of those answered by then."""
    tasks = [asyncio.ensure_future(ask) for ask in asks]
    try:
        async with asyncio.timeout(timeout):
            answers = await asyncio.gather(*tasks)
    except TimeoutError:
        answers = [t.result() if t.done() and not t.cancelled() else None for t in tasks]
    finally:
        for task in tasks:
            task.cancel()
    return next((a for a in answers if a is not None), None)


async def json_object(
    client: Any, method: str, url: str, body: Any = None
) -> dict[str, Any] | None:
    """A local server's answer when it is a JSON object; None for anything else."""
    try:
        response = await client.request(method, url, json=body)
        if response.status_code != 200 or len(response.content) > PROBE_MAX_BYTES:
            return None
        data = response.json()
    except Exception:  # refused, timed out, not JSON: not this kind of server
        return None
    return data if isinstance(data, dict) else None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


async def _llama_cpp(client: Any, found: Target) -> ServerWindow | None:
    data = await json_object(client, "GET", f"{found.root}/props") or {}
    settings = data.get("default_generation_settings")
    n_ctx = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    n_ctx = n_ctx or _positive(data.get("n_ctx"))
    return ServerWindow(n_ctx, "llama.cpp GET /props (n_ctx)") if n_ctx else None


def _ollama_name(name: str) -> str:
    return name if ":" in name else f"{name}:latest"


async def _ollama(client: Any, found: Target) -> ServerWindow | None:
    show, running = await asyncio.gather(
        json_object(client, "POST", f"{found.root}/api/show", {"model": found.name}),
        json_object(client, "GET", f"{found.root}/api/ps"),
    )
    if show is None:
        return None
    info = show.get("model_info") if isinstance(show.get("model_info"), dict) else {}
    trained = next((_positive(v) for k, v in info.items() if k.endswith(".context_length")), None)
    parameters = show.get("parameters") if isinstance(show.get("parameters"), str) else ""
    match = re.search(r"^\s*num_ctx\s+(\d+)", parameters, re.M)
    num_ctx = int(match.group(1)) if match else None
    loaded = None
    models = (running or {}).get("models")
    for entry in models if isinstance(models, list) else []:
        names = {entry.get("name"), entry.get("model")} if isinstance(entry, dict) else set()
        if _ollama_name(found.name) in {_ollama_name(str(n)) for n in names if n}:
            loaded = _positive(entry.get("context_length"))
            break
    if loaded:
        return ServerWindow(loaded, "Ollama GET /api/ps (num_ctx)", trained, ollama=True)
    if num_ctx:
        return ServerWindow(num_ctx, "Ollama POST /api/show (num_ctx)", trained, ollama=True)
    if trained:
        # Not loaded yet, no num_ctx in its Modelfile: Ollama's default applies, known
        # only once the model runs (asked again after the first step).
        return ServerWindow(trained, "Ollama POST /api/show", trained, settled=False, ollama=True)
    return None


async def _lm_studio(client: Any, found: Target) -> ServerWindow | None:
    url = f"{found.root}/api/v0/models/{quote(found.name, safe='')}"
    data = await json_object(client, "GET", url) or {}
    loaded = _positive(data.get("loaded_context_length"))
    maximum = _positive(data.get("max_context_length"))
    if loaded:
        return ServerWindow(loaded, "LM Studio GET /api/v0/models (loaded_context_length)", maximum)
    if maximum:
        return ServerWindow(maximum, "LM Studio GET /api/v0/models", maximum, settled=False)
    return None


async def _vllm(client: Any, found: Target) -> ServerWindow | None:
    data = await json_object(client, "GET", f"{found.root}/v1/models") or {}
    rows = data.get("data")
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and row.get("id") == found.name:
            length = _positive(row.get("max_model_len"))
            if length:
                return ServerWindow(length, "vLLM GET /v1/models (max_model_len)")
    return None


# ---- what to tell the person --------------------------------------------------------------


def ollama_advice(model: str, window: ServerWindow) -> str:
    """Ollama truncates prompts beyond num_ctx: say so, and how to raise it."""
    name = model.split("/", 1)[1]
    wanted = min(window.model_window or window.context, 32_768)
    return (
        f"Ollama runs {name} with num_ctx {window.context:,}, below the model's own window "
        f"of {window.model_window or 0:,}: Ollama cuts longer prompts without an error, so "
        f"agent-tui compacts to fit {window.context:,} tokens. To give it more, restart Ollama "
        f"with OLLAMA_CONTEXT_LENGTH={wanted} ollama serve, or set PARAMETER num_ctx {wanted} "
        "in a Modelfile (ollama create), memory permitting."
    )


def unknown_window_note(model: str, config: Config) -> str:
    """The notice when no window is known: what was asked, and which key to set."""
    key = f'models."{model}".limit.context'
    found = target(model, config)
    if found is None:
        return (
            f"The context window of {model} is unknown: context % is not shown and automatic "
            f"compaction is off. Set {key} in agent-tui.json to enable both."
        )
    return (
        f"The context window of {model} is unknown: the server at {found.base} did not say "
        "(asked llama.cpp /props, Ollama /api/show, LM Studio /api/v0/models, vLLM "
        "/v1/models), so context % is not shown and automatic compaction is off until an "
        f"overflow error names the window. Set {key} in agent-tui.json to enable both now."
    )
