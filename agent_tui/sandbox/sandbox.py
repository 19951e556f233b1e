"""The one place that puts a command the model asked for (bash, `!command`, a local MCP
server) in the sandbox: `Sandbox.wrap` turns an argv and its environment into the
bubblewrap command line for the session, or leaves them alone where no sandbox can be
(with the notice saying so), or refuses when `sandbox.required` is set."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agent_tui import procs
from agent_tui.config.settings import SandboxConfig
from agent_tui.errors import SandboxError
from agent_tui.sandbox import seccomp
from agent_tui.sandbox.policy import DeniedPath, SandboxPolicy, bwrap_argv, outermost, resolve
from agent_tui.sandbox.session_network import SessionNetwork
from agent_tui.sandbox.support import SandboxSupport, probe
from agent_tui.trust import trusted_files

PROJECT_CONFIG = (
    trusted_files.CONFIG_FILE_NAME,
    trusted_files.PROJECT_DIR,
    trusted_files.CLAUDE_MCP,
    *trusted_files.CLAUDE_SETTINGS,
    *trusted_files.CLAUDE_TREES,
)
"""agent-tui reads these from the project at its next start: not rewritable by a command."""
TEMP_PREFIX = "agent-tui-"
STALE_TEMP = re.compile(r"^agent-tui-(\d+-\d+)-[0-9a-f]+$")
OWN_DATA = "agent-tui's own data"
CACHES = (("XDG_CACHE_HOME", ".cache", "cache"), ("npm_config_cache", ".npm", "npm"))
"""(variable, its default under ~, its folder in the temp dir) of the caches `_with_env` moves."""


@dataclass(frozen=True)
class Wrapped:
    """A command ready to start: sandboxed when `policy` is set."""

    argv: list[str]
    env: dict[str, str]
    policy: SandboxPolicy | None = None


@dataclass(frozen=True)
class GitDirs:
    git_dir: Path
    common_dir: Path
    """Where hooks and config live (a worktree's `.git` file points into another repo)."""
    pointer: Path | None = None
    """The `.git` file that points to `git_dir` (a worktree's, a submodule's)."""


def find_git(start: Path) -> GitDirs | None:
    """The repository the folder belongs to: `.git` here or in a parent folder.

    A `.git` file (a worktree, a submodule) is followed only where the folder it names
    points back to it, as git's own layouts do: `<common>/worktrees/<name>` whose
    `commondir` leads up to `<common>` and whose `gitdir` names that `.git` file, or a
    submodule's gitdir whose `core.worktree` is that folder. The folders found are made
    writable for commands, and a command can write a `.git` file where there was none:
    one naming a folder that does not name it back is no repository here."""
    for folder in (start, *start.parents):
        dotgit = folder / ".git"
        if dotgit.is_dir():
            return GitDirs(dotgit, dotgit)
        if dotgit.is_file():
            return _pointed(dotgit)
    return None


def _pointed(dotgit: Path) -> GitDirs | None:
    try:
        text = dotgit.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    git_dir = resolve(dotgit.parent / text.removeprefix("gitdir:").strip())
    commondir = git_dir / "commondir"
    if not commondir.exists():
        worktree = _core_worktree(git_dir / "config")
        if worktree is None or resolve(git_dir / worktree) != resolve(dotgit.parent):
            return None
        return GitDirs(git_dir, git_dir, dotgit)
    try:
        common = resolve(git_dir / commondir.read_text().strip())
        back = resolve(git_dir / (git_dir / "gitdir").read_text().strip())
    except OSError:
        return None
    layout = git_dir.parent.name == "worktrees" and common == git_dir.parent.parent
    return GitDirs(git_dir, common, dotgit) if layout and back == resolve(dotgit) else None


CORE_WORKTREE = re.compile(r"^\s*worktree\s*=\s*(.+?)\s*$", re.IGNORECASE)


def _core_worktree(config: Path) -> str | None:
    """`core.worktree` of a git config file (a submodule's gitdir names its folder so)."""
    try:
        lines = config.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    section = ""
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped.strip("[]").strip().lower()
        elif section == "core" and (found := CORE_WORKTREE.match(line)):
            return found.group(1).strip('"')
    return None


class Sandbox:
    """Built once per engine from `sandbox` config and agent-tui's own paths."""

    def __init__(
        self,
        config: SandboxConfig,
        *,
        own_dirs: Iterable[Path] = (),
        own_files: Iterable[Path] = (),
        revealed: Iterable[Path] = (),
        protected: Iterable[Path] = (),
    ) -> None:
        self.config = config
        self.protected = tuple(protected)
        """Project files a trusted command runs (a hook's script): read-only inside."""
        self.own_dirs = tuple(own_dirs)
        """agent-tui's data and config dirs, the snapshot repositories: never readable."""
        self.own_files = tuple(own_files)
        """The database (and its journal files), config files outside those dirs."""
        self.revealed = tuple(revealed)
        """Read-only although inside an own dir: saved tool outputs the model is told about."""
        self._root: Path | None = None
        self.announced = False
        """The start notice was published (once per engine)."""

    # ---- status --------------------------------------------------------------------------

    async def support(self) -> SandboxSupport | None:
        """None when sandbox.enabled is false; else whether this machine can sandbox."""
        return await probe() if self.config.enabled else None

    async def status_line(self) -> str:
        """For /context and `agent-tui context`: what commands run under."""
        if (support := await self.support()) is None:
            return "Sandbox: off (sandbox.enabled is false): commands run with your full rights."
        if not support.available:
            return self.unavailable_text(support)
        writable = ", ".join(["the project", "$TMPDIR (per session)", *self.config.writable])
        hidden = ", ".join([*self.config.deny_read, "agent-tui's data and config"])
        network = "on (sandbox.network)" if self.config.network else "off"
        return (
            f"Sandbox: bubblewrap. Writable: {writable}. Unreadable: {hidden}. "
            f"Network: {network}. Plan mode: read-only."
        )

    def unavailable_text(self, support: SandboxSupport) -> str:
        if self.config.required:
            return (
                "Commands are refused: sandbox.required is true and they cannot be "
                f"sandboxed here ({support.reason})."
            )
        return f"Commands run without a sandbox: {support.reason}."

    async def start_notice(self) -> str | None:
        """The one notice at start when commands cannot be sandboxed (None otherwise)."""
        if (support := await self.support()) is None or support.available:
            return None
        return self.unavailable_text(support)

    # ---- wrapping ------------------------------------------------------------------------

    async def wrap(
        self,
        argv: list[str],
        env: dict[str, str],
        *,
        key: str,
        project: Path,
        cwd: Path,
        read_only: bool = False,
        enabled: bool = True,
        network: SessionNetwork | None = None,
    ) -> Wrapped:
        """The command as it must start. `key` names its temp dir (a session id, or
        `mcp-NAME`); `enabled` False is a per-server opt-out (mcp.NAME.sandbox);
        `network`: the session's, which its commands share while sandbox.network is off
        (None: the command's network is its own)."""
        if (support := await self.support()) is None or not enabled:
            return Wrapped(argv, env)
        if not support.available or support.bwrap is None:
            if self.config.required:
                raise SandboxError(self.unavailable_text(support))
            return Wrapped(argv, env)
        policy = await asyncio.to_thread(
            self._policy, support.bwrap, key, project, cwd, env, read_only
        )
        policy = dataclasses.replace(policy, net_join=await self._join(network, policy))
        return Wrapped(bwrap_argv(policy, argv), {**env, **policy.env}, policy)

    async def _join(self, network: SessionNetwork | None, policy: SandboxPolicy) -> tuple[str, ...]:
        """How the command joins its session's network: never with sandbox.network (it
        has this machine's), nor read-only (plan mode must not reach a server that
        writes, such as a dev server with the project's database)."""
        if network is None or policy.network or policy.read_only:
            return ()
        return await network.join_argv(policy.bwrap)

    def _policy(
        self,
        bwrap: str,
        key: str,
        project: Path,
        cwd: Path,
        env: dict[str, str],
        read_only: bool,
    ) -> SandboxPolicy:
        project = resolve(project)
        temp = self.temp_dir(key)
        writable = [resolve(_expand(p, env)) for p in self.config.writable]
        writable = [p for p in writable if p.exists()]
        real_cwd = resolve(cwd)
        if not real_cwd.is_relative_to(project):
            writable.append(real_cwd)  # a workdir outside the project the person approved
        if (git := find_git(project)) is not None:
            for folder in {git.git_dir, git.common_dir}:
                if not folder.is_relative_to(project):
                    writable.append(folder)  # the project is a subfolder or a worktree
        protected = self.protected_in(project, git)
        denied = self._denied(env, keep=(project, temp))
        policy = SandboxPolicy(
            bwrap=bwrap,
            project=project,
            cwd=cwd,
            temp_dir=temp,
            denied_file=self._denied_file(),
            writable=tuple(writable),
            protected=tuple(protected),
            denied=tuple(denied),
            revealed=tuple(resolve(p) for p in self.revealed),
            network=self.config.network,
            read_only=read_only,
            home=_expand("~", env),
            seccomp=self._seccomp_file(),
            absent_config=tuple(project / n for n in PROJECT_CONFIG if not (project / n).exists()),
        )
        return _with_env(policy, env)

    def protected_in(self, project: Path, git: GitDirs | None = None) -> list[Path]:
        """What stays read-only inside `project` for commands, and the file tools refuse
        to write (tool/tool_paths.writable_path): agent-tui's project config, the files
        the person protected, and the repository's hooks and config: they run later
        outside the sandbox. (The repository itself stays writable: commits work.)"""
        project = resolve(project)
        protected = [project / name for name in PROJECT_CONFIG]
        protected += [p for p in (resolve(p) for p in self.protected) if p not in protected]
        git = git or find_git(project)
        if git is None:
            return protected
        hooks = git.common_dir / "hooks"
        with contextlib.suppress(OSError):
            hooks.mkdir(exist_ok=True)  # to be mounted read-only, it must exist
        protected += [
            hooks,
            git.common_dir / "config",
            git.git_dir / "config.worktree",
            git.git_dir / "hooks",
        ]
        if git.pointer is not None:  # where git looks for the rest: the model may not move it
            protected += [git.pointer, git.git_dir / "commondir", git.git_dir / "gitdir"]
        return protected

    def _denied(self, env: dict[str, str], keep: tuple[Path, ...]) -> list[DeniedPath]:
        wanted = [
            DeniedPath(resolve(_expand(p, env)), p, "sandbox.deny_read")
            for p in self.config.deny_read
        ]
        wanted += [DeniedPath(resolve(p), str(p), OWN_DATA) for p in self.own_dirs + self.own_files]
        # A mask over the project or the temp dir would hide the command's own work.
        wanted = [
            d for d in wanted if d.path.exists() and not any(k.is_relative_to(d.path) for k in keep)
        ]
        kept = outermost(d.path for d in wanted)
        return [next(d for d in wanted if d.path == path) for path in kept]

    # ---- temp dirs -----------------------------------------------------------------------

    def temp_dir(self, key: str) -> Path:
        """The per-session temp dir (TMPDIR), created on first use."""
        folder = self._temp_root() / re.sub(r"[^A-Za-z0-9_.-]", "_", key)
        folder.mkdir(mode=0o700, exist_ok=True)
        return resolve(folder)

    def _temp_root(self) -> Path:
        if self._root is None or not self._root.is_dir():
            base = Path(tempfile.gettempdir())
            _remove_stale(base)
            root = base / f"{TEMP_PREFIX}{procs.owner_token()}-{secrets.token_hex(4)}"
            root.mkdir(mode=0o700)
            self._root = root
        return self._root

    def _denied_file(self) -> Path:
        path = self._temp_root() / ".denied"
        if not path.exists():
            path.touch(mode=0o000)
            path.chmod(0o000)
        return path

    def _seccomp_file(self) -> Path | None:
        path = self._temp_root() / ".seccomp"
        if not path.exists():
            if (filter_program := seccomp.program()) is None:
                return None
            path.write_bytes(filter_program)
        return path

    async def close(self) -> None:
        """Delete the temp dirs (the commands that used them have ended)."""
        root, self._root = self._root, None
        if root is not None:
            await asyncio.to_thread(shutil.rmtree, root, True)


def _expand(path: str | Path, env: dict[str, str]) -> Path:
    text = str(path)
    if text == "~" or text.startswith("~/"):
        home = env.get("HOME") or str(Path.home())
        text = home + text[1:]
    return Path(text)


def _with_env(policy: SandboxPolicy, env: dict[str, str]) -> SandboxPolicy:
    """TMPDIR is the session's temp dir; caches that cannot be written go there too
    (pip and other XDG users, npm), so installs work without making ~ writable."""
    extra = {"TMPDIR": str(policy.temp_dir)}
    for variable, default, inside in CACHES:
        cache = Path(env[variable]) if env.get(variable) else _expand("~", env) / default
        if not policy.may_write(resolve(cache)):
            extra[variable] = str(policy.temp_dir / inside)
    return dataclasses.replace(policy, env=extra)


def _remove_stale(base: Path) -> None:
    """Temp dirs of agent-tuis that are no longer running (killed before cleaning up)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            if (match := STALE_TEMP.match(entry.name)) and entry.is_dir(follow_symlinks=False):
                if not procs.owner_alive(match.group(1)):
                    shutil.rmtree(entry.path, ignore_errors=True)
