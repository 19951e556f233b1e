"""The language servers of an engine: started lazily, one per project and language,
restarted once after a crash, closed with the engine. `check` gives the model the errors
(and, with `lsp.warnings`, warnings) an edit introduced in the file it changed: the
server's diagnostics of the text before, against those of the text after, new ones only,
at most `lsp.max_diagnostics`. A missing or broken server is a one-line notice.

Every server runs in the sandbox (the defaults too: tsserver loads the project's
`node_modules/typescript`, rust-analyzer runs its build scripts, pylsp its plugins), with
the model's commands' policy; only the person's own `sandbox.outside` (`lsp:NAME`) takes
one out. A server the sandbox stopped says so, once, with that key."""

from __future__ import annotations

import asyncio
import difflib
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_tui.config.lsp_config import DEFAULTS, LspConfig
from agent_tui.lsp.lsp_client import Diagnostic, LspClient, ServerGone, Wrap
from agent_tui.sandbox.containment import Blocked, Containment

ERROR, WARNING = 1, 2
MAX_STARTS = 2
"""A server that crashed is started once more; after a second crash it stays off."""
START_TIMES = 3
"""A server has `lsp.timeout` x this to start (in the background: no edit waits for it
longer than `lsp.timeout`)."""
MAPPED_LINES = 20_000
"""Longer files are compared by text alone (no line mapping across the edit)."""


@dataclass(frozen=True)
class Server:
    name: str
    argv: list[str]


class LspServers:
    def __init__(
        self,
        config: LspConfig,
        env: dict[str, str],
        notice: Callable[[str], None],
        allowed: Callable[[Server, bool], bool] = lambda server, configured: True,
        containment: Containment | None = None,
    ) -> None:
        self.config, self.env, self.notice = config, env, notice
        self.allowed = allowed
        """Whether the project's trust lets a server (configured or a default) start."""
        self.containment = containment
        """Where the servers run (None: unsandboxed, a bare engine)."""
        self._let_out: set[str] = set()
        """Servers the person let out of the sandbox after it stopped them (this process)."""
        self._clients: dict[tuple[Path, str], LspClient] = {}
        self._starts: Counter[tuple[Path, str]] = Counter()
        self._off: set[tuple[Path, str]] = set()
        self._found: dict[str, Server | None] = {}
        self._starting: dict[tuple[Path, str], asyncio.Task[None]] = {}

    def server_for(self, path: Path) -> Server | None:
        """The server of `path`'s extension, looked up on PATH once per extension (each
        edit asks, before and after)."""
        if not self.config.enabled:
            return None
        if path.suffix not in self._found:
            self._found[path.suffix] = self._find(path.suffix)
        return self._found[path.suffix]

    def _find(self, suffix: str) -> Server | None:
        for name, server in self.config.servers.items():
            if suffix in server.extensions and not server.disabled:
                return Server(name, server.command)
        for name, (candidates, extensions) in DEFAULTS.items():
            configured = self.config.servers.get(name)
            if suffix not in extensions or (configured is not None and configured.disabled):
                continue
            for argv in candidates:
                if (found := shutil.which(argv[0], path=self.env.get("PATH"))) is not None:
                    return Server(name, [found, *argv[1:]])
        return None

    async def check(
        self,
        root: Path,
        path: Path,
        before: str | None,
        after: str,
        *,
        session_id: str | None = None,
    ) -> str:
        """What the edit of `path` (text `before`, None for a new file, -> `after`)
        introduced, as the lines the model reads; "" when nothing new or no server.
        `session_id`: whom to ask should the sandbox stop the server."""
        if (server := self.server_for(path)) is None or (root, server.name) in self._off:
            return ""
        if not self.allowed(server, server.name in self.config.servers):
            return ""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.timeout  # the whole check, whatever the server does
        for _ in range(MAX_STARTS):
            if (client := await self._client(root, server, deadline, session_id)) is None:
                if (root, server.name) in self._off:
                    return ""
                return f"[diagnostics] {server.name}: still starting; this edit was not checked."
            try:
                return await self._compare(client, server, path, before, after, deadline)
            except ServerGone:
                blocked, let_out = await self._stopped(server, client, session_id)
                await client.close()
                self._clients.pop((root, server.name), None)
                if blocked and not let_out:
                    self._off.add((root, server.name))
                    return ""
            if loop.time() >= deadline:  # started again by the next edit, not on this one's time
                return self._no_answer(server)
        return ""

    async def _client(
        self, root: Path, server: Server, deadline: float, session_id: str | None
    ) -> LspClient | None:
        """The running client of `server`; None while it starts (past `deadline`) or off."""
        key = (root, server.name)
        client = self._clients.get(key)
        if client is not None and client.alive and key not in self._starting:
            return client
        if (task := self._starting.get(key)) is None:
            if self._starts[key] >= MAX_STARTS:
                self._off.add(key)
                self.notice(
                    f"The {server.name} language server stopped again after a restart: "
                    "no more diagnostics from it in this session."
                )
                return None
            self._starts[key] += 1
            client = self._clients[key] = LspClient(
                server.argv, root, self.env, self._wrap(server, root)
            )
            task = asyncio.ensure_future(client.start(self.config.timeout * START_TIMES))
            self._starting[key] = task
        loop = asyncio.get_running_loop()
        await asyncio.wait({task}, timeout=max(0.0, deadline - loop.time()))
        if not task.done():
            return None
        del self._starting[key]
        client = self._clients[key]
        exc = task.exception() if not task.cancelled() else TimeoutError()
        if exc is None:
            return client
        client.kill()  # it did not start: no shutdown handshake to wait for
        blocked, let_out = await self._stopped(server, client, session_id)
        await client.close()
        del self._clients[key]
        if let_out:
            self._starts[key] = 0  # the next edit starts it outside
            return None
        self._off.add(key)
        if not blocked:  # a blocked one was said by _stopped, with the key that lets it out
            why = "not found" if isinstance(exc, FileNotFoundError) else "did not start"
            self.notice(
                f"Language server `{' '.join(server.argv)}` {why}: no diagnostics after "
                f"edits of {server.name} files (config lsp.{server.name})."
            )
        return None

    def _wrap(self, server: Server, root: Path) -> Wrap | None:
        """How the server's command line is put in the sandbox (None: it runs outside)."""
        if (containment := self.containment) is None or server.name in self._let_out:
            return None
        name = f"lsp:{server.name}"
        return lambda argv, env: containment.wrap(name, argv, env, cwd=root)

    async def _stopped(
        self, server: Server, client: LspClient, session_id: str | None
    ) -> tuple[bool, bool]:
        """A server that stopped: (whether the sandbox is why, whether it starts again
        outside). When blocked, the person is told in one line (and asked where they can
        be answered)."""
        if self.containment is None:
            return False, False
        if (reason := self.containment.reason(client.stderr_tail(), client.wrapped)) is None:
            return False, False
        blocked = Blocked(
            name=f"lsp:{server.name}",
            what=f"The {server.name} language server `{' '.join(server.argv)}`",
            reason=reason,
            session_id=session_id,
        )
        if await self.containment.blocked(blocked):
            self._let_out.add(server.name)
            return True, True
        return True, False

    async def _compare(
        self,
        client: LspClient,
        server: Server,
        path: Path,
        before: str | None,
        after: str,
        deadline: float,
    ) -> str:
        old: list[Diagnostic] | None = []
        if before is not None:
            old = await client.diagnostics(path, before, deadline)
        new = None if old is None else await client.diagnostics(path, after, deadline)
        if old is None or new is None:
            return self._no_answer(server)
        worst = WARNING if self.config.warnings else ERROR
        return self._render(path, server, introduced(old, new, worst, before or "", after))

    def _no_answer(self, server: Server) -> str:
        return f"[diagnostics] {server.name}: no answer within {self.config.timeout:g} s."

    def _render(self, path: Path, server: Server, found: list[Diagnostic]) -> str:
        if not found:
            return ""
        limit = self.config.max_diagnostics
        errors = sum(d.severity == ERROR for d in found)
        kinds = [f"{errors} error{'s' * (errors != 1)}"] if errors else []
        if len(found) > errors:
            warnings = len(found) - errors
            kinds.append(f"{warnings} warning{'s' * (warnings != 1)}")
        lines = [
            f"[diagnostics] {server.name}: this edit introduced {' and '.join(kinds)} "
            f"in {path.name}:"
        ]
        for d in sorted(found, key=lambda d: (d.severity, d.line))[:limit]:
            code = f" ({d.code})" if d.code else ""
            kind = "error" if d.severity == ERROR else "warning"
            lines.append(f"  line {d.line}: {kind}: {d.message.splitlines()[0]}{code}")
        if len(found) > limit:
            lines.append(f"  … and {len(found) - limit} more")
        return "\n".join(lines)

    def status_lines(self) -> list[str]:
        running = [(root, name, c) for (root, name), c in self._clients.items() if c.alive]
        if not running:
            return []
        return ["Language servers:"] + [
            f"  {name}: {' '.join(c.argv)} ({root})" for root, name, c in running
        ]

    async def close(self) -> None:
        for task in self._starting.values():
            task.cancel()
        self._starting.clear()
        for client in self._clients.values():
            await client.close()
        self._clients.clear()


def introduced(
    old: list[Diagnostic], new: list[Diagnostic], worst: int, before: str = "", after: str = ""
) -> list[Diagnostic]:
    """The diagnostics of `new` at `worst` severity or above that `old` did not have.
    An old one is matched at its line as the edit moved it (`before` -> `after`); one on
    a line the edit changed, by its text alone (as many of each as there were)."""
    moved = _moved_lines(before, after) if old else {}  # nothing to match: no diff to run
    at_line = Counter((moved[d.line], d.key()) for d in old if d.line in moved)
    by_text = Counter(d.key() for d in old if d.line not in moved)
    found: list[Diagnostic] = []
    for diagnostic in new:
        if at_line[(diagnostic.line, diagnostic.key())] > 0:
            at_line[(diagnostic.line, diagnostic.key())] -= 1
        elif by_text[diagnostic.key()] > 0:
            by_text[diagnostic.key()] -= 1
        elif diagnostic.severity <= worst:
            found.append(diagnostic)
    return found


def _moved_lines(before: str, after: str) -> dict[int, int]:
    """Each line (1-based) of `before` the edit left as it was -> its line in `after`."""
    old, new = before.splitlines(), after.splitlines()
    if not old or len(old) + len(new) > MAPPED_LINES:
        return {}
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return {
        i + 1 + k: j + 1 + k for i, j, size in matcher.get_matching_blocks() for k in range(size)
    }
