"""The language servers of an engine: started lazily, one per project and language,
restarted once after a crash, closed with the engine. `check` gives the model the errors
(and, with `lsp.warnings`, warnings) an edit introduced in the file it changed: the
server's diagnostics of the text before, against those of the text after, new ones only,
at most `lsp.max_diagnostics`. A missing or broken server is a one-line notice."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_tui.lsp.lsp_client import Diagnostic, LspClient, ServerGone
from agent_tui.lsp.lsp_config import DEFAULTS, LspConfig

ERROR, WARNING = 1, 2
MAX_STARTS = 2
"""A server that crashed is started once more; after a second crash it stays off."""


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
    ) -> None:
        self.config, self.env, self.notice = config, env, notice
        self.allowed = allowed
        """Whether the project's trust lets a server (configured or a default) start."""
        self._clients: dict[tuple[Path, str], LspClient] = {}
        self._starts: Counter[tuple[Path, str]] = Counter()
        self._off: set[tuple[Path, str]] = set()
        self._found: dict[str, Server | None] = {}

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
                found = shutil.which(argv[0], path=self.env.get("PATH"))
                if found is not None:
                    return Server(name, [found, *argv[1:]])
        return None

    async def check(self, root: Path, path: Path, before: str | None, after: str) -> str:
        """What the edit of `path` (text `before`, None for a new file, -> `after`)
        introduced, as the lines the model reads; "" when nothing new or no server."""
        server = self.server_for(path)
        if server is None or (root, server.name) in self._off:
            return ""
        if not self.allowed(server, server.name in self.config.servers):
            return ""
        for _ in range(MAX_STARTS):
            client = await self._client(root, server)
            if client is None:
                return ""
            try:
                return await self._compare(client, server, path, before, after)
            except ServerGone:
                await client.close()
                self._clients.pop((root, server.name), None)
        return ""

    async def _client(self, root: Path, server: Server) -> LspClient | None:
        key = (root, server.name)
        client = self._clients.get(key)
        if client is not None and client.alive:
            return client
        if self._starts[key] >= MAX_STARTS:
            self._off.add(key)
            self.notice(
                f"The {server.name} language server stopped again after a restart: "
                "no more diagnostics from it in this session."
            )
            return None
        self._starts[key] += 1
        client = LspClient(server.argv, root, self.env)
        try:
            await client.start(self.config.timeout * 3)
        except (OSError, ServerGone, TimeoutError) as exc:
            await client.close()
            self._off.add(key)
            why = "not found" if isinstance(exc, FileNotFoundError) else "did not start"
            self.notice(
                f"Language server `{' '.join(server.argv)}` {why}: no diagnostics after "
                f"edits of {server.name} files (config lsp.{server.name})."
            )
            return None
        self._clients[key] = client
        return client

    async def _compare(
        self, client: LspClient, server: Server, path: Path, before: str | None, after: str
    ) -> str:
        timeout = self.config.timeout
        old = await client.diagnostics(path, before, timeout) if before is not None else []
        new = await client.diagnostics(path, after, timeout)
        if new is None:
            return f"[diagnostics] {server.name}: no answer within {timeout:g} s."
        worst = WARNING if self.config.warnings else ERROR
        return self._render(path, server, introduced(old or [], new, worst))

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
        for client in self._clients.values():
            await client.close()
        self._clients.clear()


def introduced(old: list[Diagnostic], new: list[Diagnostic], worst: int) -> list[Diagnostic]:
    """The diagnostics of `new` at `worst` severity or above that `old` did not have (as
    many of each kind as were added: lines shift, so they are told apart by text)."""
    seen = Counter(d.key() for d in old)
    found: list[Diagnostic] = []
    for diagnostic in new:
        if seen[diagnostic.key()] > 0:
            seen[diagnostic.key()] -= 1
        elif diagnostic.severity <= worst:
            found.append(diagnostic)
    return found
