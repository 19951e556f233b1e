"""Where what a project brings runs: its hooks, language servers, MCP servers and
formatters start in the sandbox with the policy of the model's own commands (the project
writable, the network as bash has it), trusted or not, because the model can rewrite the
project files they run. Only the person's own config takes one out, by name, for one
project (`sandbox.outside`); a project's own file never can.

Names: `hook:COMMAND` (the hook's command as written), `lsp:NAME`, `mcp:NAME`,
`format:.EXT`."""

from __future__ import annotations

import os
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from agent_tui.sandbox.explain import PREFIX, explain
from agent_tui.sandbox.policy import resolve
from agent_tui.sandbox.sandbox import Sandbox, Wrapped

EVERY_PROJECT = "*"
"""The `sandbox.outside` entry that names commands for every project."""

LetOut = Callable[["Blocked"], Awaitable[bool]]
"""Told that the sandbox stopped a project's program: says the one line, and answers
whether it runs again outside (the person allowed it once, or for this project)."""


@dataclass(frozen=True)
class Blocked:
    """A project's program the sandbox stopped."""

    name: str
    """Its `sandbox.outside` name (`hook:sh scripts/check.sh`)."""
    what: str
    """How the person knows it (`PostToolUse hook \"sh scripts/check.sh\"`)."""
    reason: str
    """What was blocked: explain()'s line without its prefix."""
    session_id: str | None = None
    """The session it ran for, where someone can be asked."""


class Containment:
    """One project's rule of where its programs run (built by its workspace)."""

    def __init__(
        self,
        sandbox: Sandbox,
        directory: Path,
        outside: dict[str, list[str]],
        *,
        let_out: LetOut | None = None,
        project_env: dict[str, str] | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.directory = resolve(directory)
        self._outside = outside
        """The person's `sandbox.outside`, folder (or `*`) -> names."""
        self._let_out = let_out
        self._project_env = dict(project_env or {})
        """Variables the project's own config sets for commands (`shell.env.set`): in the
        sandbox only (`NODE_OPTIONS=--require ./x.js` would run its code outside)."""

    def outside(self, name: str) -> bool:
        """Whether the person's own config runs it outside."""
        return any(
            name in names and (folder == EVERY_PROJECT or _same(folder, self.directory))
            for folder, names in self._outside.items()
        )

    def add_outside(self, name: str) -> None:
        """The person's config now names it for this project (saved by the caller)."""
        key = str(self.directory)
        self._outside[key] = [*self._outside.get(key, []), name]

    async def wrap(
        self, name: str, argv: list[str], env: dict[str, str], *, cwd: Path, key: str | None = None
    ) -> Wrapped:
        """The program as it must start: in the sandbox, unless named outside. Raises
        FileNotFoundError when there is no such program, SandboxError where
        `sandbox.required` and no sandbox can be. `key`: the temp dir to give it (a
        session's, for a hook that writes the session's `CLAUDE_ENV_FILE`)."""
        if self.outside(name):
            return Wrapped(argv, self.own_env(env))
        program = str(cwd / argv[0]) if "/" in argv[0] else argv[0]
        if shutil.which(program, path=env.get("PATH")) is None:  # not bwrap's "execvp" line
            raise FileNotFoundError(2, "command not found", argv[0])
        key = key or name.split(":", 1)[0] + "s"  # hooks, lsps, mcps, formats: one each kind
        return await self.sandbox.wrap(argv, env, key=key, project=self.directory, cwd=cwd)

    def own_env(self, env: dict[str, str]) -> dict[str, str]:
        """`env` for a program outside the sandbox: what the project's config set is
        taken back (agent-tui's own value where it had one)."""
        own = dict(env)
        for name, value in self._project_env.items():
            if own.get(name) == value:
                if name in os.environ:
                    own[name] = os.environ[name]
                else:
                    del own[name]
        return own

    def reason(self, output: str, wrapped: Wrapped) -> str | None:
        """What the sandbox blocked, read from a failed program's output (None: not it)."""
        if wrapped.policy is None or not output:
            return None
        line = explain(output, wrapped.policy)
        return line.removeprefix(PREFIX).strip() if line else None

    async def blocked(self, blocked: Blocked) -> bool:
        """Say it was stopped; True when it runs again outside (the person let it out,
        once or for this project)."""
        return self._let_out is not None and await self._let_out(blocked)


def _same(folder: str, directory: Path) -> bool:
    path = Path(folder).expanduser()
    return path.is_absolute() and resolve(path) == directory
