"""What one sandboxed command may touch, and the bubblewrap command line that enforces it.

Mounts are applied in order, later ones on top: the whole file system read-only, then
the writable places (project, the session's temp dir, `sandbox.writable`), then what
stays read-only inside them (git hooks and config, agent-tui's project config), then the
masks over what may not be read at all (a mode-000 tmpfs over a folder, a mode-000 empty
file over a file), so a mask wins over everything above it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agent_tui.sandbox.support import BASE_FLAGS

SECCOMP_FD = 3
"""The descriptor bwrap reads its seccomp filter from (opened by a shell redirection, so
that any launcher works, the MCP SDK's included)."""
HIDDEN_DIR_MODE = "0000"
TRAVERSE_ONLY_MODE = "0111"
"""A masked folder with something revealed inside it: enter, never list."""


@dataclass(frozen=True)
class DeniedPath:
    path: Path
    """Resolved (symlinks followed): what the mask covers."""
    shown: str
    """As the person wrote it (`~/.ssh`), for explanations."""
    source: str
    """What hides it: `sandbox.deny_read` or `agent-tui's own data`."""


@dataclass(frozen=True)
class SandboxPolicy:
    """Everything one sandboxed process may do, resolved to real paths."""

    bwrap: str
    project: Path
    cwd: Path
    temp_dir: Path
    """The session's own temp dir (TMPDIR); writable even when read_only."""
    denied_file: Path
    """An empty mode-000 file bound over each denied file."""
    writable: tuple[Path, ...] = ()
    """Besides the project and temp dir: sandbox.writable, an approved workdir."""
    protected: tuple[Path, ...] = ()
    """Read-only although inside a writable place (.git/hooks, .git/config, ...)."""
    denied: tuple[DeniedPath, ...] = ()
    revealed: tuple[Path, ...] = ()
    """Readable (read-only) although inside a denied folder (saved tool outputs)."""
    network: bool = False
    net_join: tuple[str, ...] = ()
    """With `network` off: the nsenter line that puts the command in its session's
    loopback-only network (sandbox/session_network.py); () gives it one of its own."""
    read_only: bool = False
    """Plan mode: the project read-only too; only the temp dir is writable."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables set for the sandboxed process (TMPDIR, caches)."""
    home: Path = field(default_factory=Path.home)
    """The command's HOME, for `~` in explanations."""
    seccomp: Path | None = None
    """The seccomp filter's file (sandbox/seccomp.py); None on an unknown architecture."""
    absent_config: tuple[Path, ...] = ()
    """agent-tui's project config paths that did not exist when the command started: a
    read-only mount needs something to cover, so a command may create them."""

    @property
    def own_network(self) -> bool:
        """No network, and its loopback is its alone (no later command reaches it)."""
        return not self.network and not self.net_join

    def writable_roots(self) -> tuple[Path, ...]:
        if self.read_only:
            return (self.temp_dir,)
        return (self.project, self.temp_dir, *self.writable)

    def may_write(self, path: Path) -> bool:
        return any(path.is_relative_to(root) for root in self.writable_roots()) and not any(
            path.is_relative_to(p) for p in self.protected
        )

    def denial(self, path: Path) -> DeniedPath | None:
        """The mask that hides `path` (None if readable)."""
        if any(path.is_relative_to(shown) for shown in self.revealed):
            return None
        return next((denied for denied in self.denied if path.is_relative_to(denied.path)), None)


def resolve(path: Path) -> Path:
    """Absolute, symlinks followed as far as they exist, `..` folded."""
    return Path(os.path.realpath(path))


def outermost(paths: Iterable[Path]) -> list[Path]:
    """The paths not inside another of them (in their first order)."""
    kept: list[Path] = []
    for path in paths:
        if any(path.is_relative_to(other) for other in kept):
            continue
        kept = [other for other in kept if not other.is_relative_to(path)]
        kept.append(path)
    return kept


def bwrap_argv(policy: SandboxPolicy, argv: list[str]) -> list[str]:
    """`bwrap <mounts and namespaces> -- argv` (through `sh` opening the seccomp filter,
    and nsenter joining the session's network where it has one)."""
    args = [*policy.net_join, policy.bwrap, *BASE_FLAGS]
    if policy.seccomp is not None:
        args += ["--seccomp", str(SECCOMP_FD)]
    if policy.own_network:
        args.append("--unshare-net")
    for root in outermost(policy.writable_roots()):
        args += ["--bind", str(root), str(root)]
    for path in policy.protected:
        if path.exists() and any(path.is_relative_to(root) for root in policy.writable_roots()):
            args += ["--ro-bind", str(path), str(path)]
    for denied in policy.denied:
        if denied.path.is_dir():
            inside = [r for r in policy.revealed if r.is_dir() and r.is_relative_to(denied.path)]
            mode = TRAVERSE_ONLY_MODE if inside else HIDDEN_DIR_MODE
            args += ["--perms", mode, "--tmpfs", str(denied.path)]
            for revealed in inside:
                args += ["--ro-bind", str(revealed), str(revealed)]
        elif denied.path.exists():
            args += ["--ro-bind", str(policy.denied_file), str(denied.path)]
    args += ["--chdir", str(policy.cwd), "--", *argv]
    if policy.seccomp is None:
        return args
    return ["/bin/sh", "-c", f'exec "$@" {SECCOMP_FD}<"$0"', str(policy.seccomp), *args]
