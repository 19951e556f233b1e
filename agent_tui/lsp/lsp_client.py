"""A language server over stdio (JSON-RPC with Content-Length framing): just what
diagnostics after an edit need — initialize, didOpen / didChange, and the server's
publishDiagnostics, awaited per document version."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel

from agent_tui import procs
from agent_tui.sandbox.sandbox import Wrapped

log = logging.getLogger(__name__)
LANGUAGE_IDS = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript",
    ".jsx": "javascriptreact",
    ".go": "go",
    ".rs": "rust",
}


class Diagnostic(BaseModel):
    line: int
    """1-based."""
    severity: int = 1
    """1 error, 2 warning, 3 information, 4 hint (LSP)."""
    message: str
    code: str = ""
    source: str = ""

    def key(self) -> tuple[str, str, str]:
        """What tells two diagnostics apart across an edit (lines shift, text stays)."""
        return (self.code, self.message, self.source)


Wrap = Callable[[list[str], dict[str, str]], Awaitable[Wrapped]]
"""Puts the server's command line in the sandbox (sandbox/containment.py)."""
MIN_WAIT = 0.05
"""Seconds: with less left of an edit's budget, its text is not sent (a write cut short
would leave the server half a message)."""


class ServerGone(Exception):
    """The server exited or closed its pipes."""


class LspClient:
    def __init__(
        self, argv: list[str], root: Path, env: dict[str, str], wrap: Wrap | None = None
    ) -> None:
        self.argv, self.root, self.env = argv, root, env
        self.wrap = wrap
        self.wrapped = Wrapped(argv, env)
        """How it was started (its sandbox policy, when in one)."""
        self._stderr: IO[bytes] | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._versions: dict[str, int] = {}
        self._published: dict[str, tuple[int | None, list[Diagnostic]]] = {}
        self._known: dict[str, tuple[str, list[Diagnostic]]] = {}
        """Per document: the newest text the server has and its diagnostics."""
        self._changed = asyncio.Condition()
        self._reader: asyncio.Task[None] | None = None
        self._killed = False

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None and not self._gone()

    def _gone(self) -> bool:
        return self._reader is not None and self._reader.done()

    async def start(self, timeout: float) -> None:
        env = procs.process_env(self.env)
        if self.wrap is not None:  # SandboxError (sandbox.required) fails the start
            self.wrapped = await self.wrap(self.argv, env)
        self._stderr = await asyncio.to_thread(tempfile.TemporaryFile)
        self.proc = await asyncio.create_subprocess_exec(
            *self.wrapped.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self._stderr,
            cwd=self.root,
            env=self.wrapped.env if self.wrap is not None else env,
            start_new_session=True,
        )
        procs.track(self.proc.pid)
        self._reader = asyncio.create_task(self._read())
        root = self.root.as_uri()
        params = {
            "processId": os.getpid(),
            "rootUri": root,
            "workspaceFolders": [{"uri": root, "name": self.root.name}],
            "capabilities": {
                "textDocument": {
                    "publishDiagnostics": {"versionSupport": True},
                    "synchronization": {"didSave": True},
                }
            },
        }
        await asyncio.wait_for(self.request("initialize", params), timeout)
        await self.notify("initialized", {})

    async def request(self, method: str, params: Any) -> Any:
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        ident = self._next_id
        self._pending[ident] = future
        message = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
        try:
            await self._send(message)
            return await future
        finally:  # given up (a timeout): no answer is waited for any more
            self._pending.pop(ident, None)
            future.cancel()

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _send(self, message: dict[str, Any]) -> None:
        if self.proc is None or self.proc.stdin is None or self._gone():
            raise ServerGone
        body = json.dumps(message).encode()
        try:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ServerGone from exc

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        try:
            while True:
                length = 0
                while (line := await stdout.readline()) not in (b"\r\n", b"\n"):
                    if not line:
                        return
                    name, _, value = line.decode("ascii", "replace").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                await self._receive(json.loads(await stdout.readexactly(length)))
        except (asyncio.IncompleteReadError, ValueError, ConnectionResetError):
            return
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ServerGone())
            await self._wake()

    async def _receive(self, message: dict[str, Any]) -> None:
        if "id" in message and "method" in message:  # a request of the server's
            with contextlib.suppress(ServerGone):
                await self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif "id" in message:
            if (future := self._pending.pop(message["id"], None)) is not None and not future.done():
                future.set_result(message.get("result"))
        elif message.get("method") == "textDocument/publishDiagnostics":
            params = message.get("params") or {}
            found = [_diagnostic(d) for d in params.get("diagnostics") or []]
            self._published[params.get("uri", "")] = (params.get("version"), found)
            await self._wake()

    async def _wake(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def diagnostics(self, path: Path, text: str, deadline: float) -> list[Diagnostic] | None:
        """Diagnostics of `path` holding `text`; None if not in by `deadline` (loop time). The
        text the server has already (the last edit's result) is answered from what it said."""
        uri = path.as_uri()
        if (known := self._known.get(uri)) is not None and known[0] == text:
            return known[1]
        loop = asyncio.get_running_loop()
        if deadline - loop.time() < MIN_WAIT:  # no time left to send it and hear back: not asked
            return None
        version = self._versions.get(uri, 0) + 1
        self._versions[uri] = version
        self._published.pop(uri, None)
        if version == 1:
            language = LANGUAGE_IDS.get(path.suffix, path.suffix.lstrip("."))
            document = {"uri": uri, "languageId": language, "version": 1, "text": text}
            sent = self.notify("textDocument/didOpen", {"textDocument": document})
        else:
            document = {"uri": uri, "version": version}
            change = {"textDocument": document, "contentChanges": [{"text": text}]}
            sent = self.notify("textDocument/didChange", change)
        try:
            await asyncio.wait_for(sent, deadline - loop.time())
        except TimeoutError:  # it reads nothing: a message half written cannot be taken back
            self.kill()
            raise ServerGone from None
        timeout = max(0.0, deadline - loop.time())

        def ready() -> bool:
            published = self._published.get(uri)
            return self._gone() or (published is not None and published[0] in (None, version))

        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(ready), timeout)
            except TimeoutError:
                return None
        if self._gone():
            raise ServerGone
        found = self._published[uri][1]
        self._known[uri] = (text, found)
        return found

    def stderr_tail(self) -> str:
        return procs.stderr_tail(self._stderr)

    def kill(self) -> None:
        """At once, without the shutdown handshake (it answers nothing, or reads nothing)."""
        self._killed = True
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()

    async def close(self) -> None:
        if (proc := self.proc) is None:
            return
        if proc.returncode is None and not self._killed:
            with contextlib.suppress(ServerGone, TimeoutError):
                await asyncio.wait_for(self.request("shutdown", None), 1.0)
                await self.notify("exit", None)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 1.0)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            await proc.wait()
        procs.release(proc.pid)
        if self._stderr is not None:
            self._stderr.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader


def _diagnostic(raw: dict[str, Any]) -> Diagnostic:
    start = (raw.get("range") or {}).get("start") or {}
    return Diagnostic(
        line=int(start.get("line", 0)) + 1,
        severity=int(raw.get("severity") or 1),
        message=str(raw.get("message", "")).strip(),
        code=str(raw.get("code") or ""),
        source=str(raw.get("source") or ""),
    )
