"""Making, judging and removing a session's worktree with git. git runs here, for the
person, never for the model: the repository's hooks and fsmonitor are switched off, so
nothing the project ships runs outside the sandbox while a worktree is made."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from agent_tui.errors import AgentTuiError
from agent_tui.records import Worktree
from agent_tui.worktrees.include import copy_included
from agent_tui.worktrees.layout import (
    BRANCH_PREFIX,
    EXCLUDE_LINE,
    INCLUDE_FILE,
    WORKTREES_DIR,
    generated_name,
    valid_name,
)

_QUIET = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")
_ENV_DROPPED = frozenset({"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"})


class WorktreeError(AgentTuiError):
    """A worktree could not be made or removed; the message says why and what to do."""


async def git(directory: Path, *args: str) -> str:
    """git's output in `directory`; a `WorktreeError` with its words when it fails."""
    env = {k: v for k, v in os.environ.items() if k not in _ENV_DROPPED}
    env["GIT_TERMINAL_PROMPT"] = "0"
    try:
        process = await asyncio.create_subprocess_exec(
            "git",
            *_QUIET,
            *args,
            cwd=directory,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise WorktreeError(f"A worktree needs git, which could not run: {exc}") from exc
    out, err = await process.communicate()
    if process.returncode != 0:
        said = err.decode(errors="replace").strip() or f"exit {process.returncode}"
        raise WorktreeError(f"git {args[0]} failed in {directory}: {said}")
    return out.decode(errors="replace")


async def checkout_root(directory: Path) -> Path:
    """The main checkout of the repository `directory` is in (from a linked worktree
    too: worktrees are all made beside the main checkout's)."""
    try:
        common = await git(directory, "rev-parse", "--path-format=absolute", "--git-common-dir")
        top = await git(directory, "rev-parse", "--show-toplevel")
    except WorktreeError as exc:
        raise WorktreeError(
            f"{directory} is not in a git repository, and a worktree (-w) is a git "
            "worktree. Run `git init` and commit first, or start without -w."
        ) from exc
    common_dir = Path(common.strip())
    return common_dir.parent if common_dir.name == ".git" else Path(top.strip())


async def create(directory: Path, name: str | None = None) -> Worktree:
    """A new worktree `.claude/worktrees/NAME` on the new branch `worktree-NAME` from
    HEAD, kept out of the main checkout's status, with `.worktreeinclude`'s files."""
    root = await checkout_root(directory)
    name = name or generated_name()
    if not valid_name(name):
        raise WorktreeError(
            f"{name!r} is not a worktree name: letters, digits, '.', '_' and '-', "
            "64 at most, starting with a letter or digit."
        )
    path, branch = root / WORKTREES_DIR / name, BRANCH_PREFIX + name
    if path.exists():
        raise WorktreeError(f"{path} exists already: choose another name, or remove it.")
    try:
        base = (await git(root, "rev-parse", "--verify", "HEAD^{commit}")).strip()
    except WorktreeError as exc:
        raise WorktreeError(
            f"{root} has no commit yet: a worktree starts from one. Commit first."
        ) from exc
    await _exclude(root)
    await git(root, "worktree", "add", "-b", branch, str(path), base)
    await asyncio.to_thread(copy_included, root, path, await _included(root))
    return Worktree(path=str(path), branch=branch, base=base, checkout=str(root))


async def _exclude(root: Path) -> None:
    """`/.claude/worktrees/` in the repository's `info/exclude`, once."""
    exclude = Path((await git(root, "rev-parse", "--git-path", "info/exclude")).strip())
    exclude = exclude if exclude.is_absolute() else root / exclude

    def add() -> None:
        text = exclude.read_text(encoding="utf-8") if exclude.is_file() else ""
        if EXCLUDE_LINE not in text.splitlines():
            exclude.parent.mkdir(parents=True, exist_ok=True)
            ending = "" if not text or text.endswith("\n") else "\n"
            exclude.write_text(f"{text}{ending}{EXCLUDE_LINE}\n", encoding="utf-8")

    await asyncio.to_thread(add)


async def _included(root: Path) -> list[str]:
    """The git-ignored files that `.worktreeinclude`'s patterns match: git reads the
    file's gitignore syntax itself (as exclude patterns), and the two lists meet."""
    patterns = root / INCLUDE_FILE
    if not patterns.is_file():
        return []
    listing = ("ls-files", "-z", "--others", "--ignored")
    matched = await git(root, *listing, f"--exclude-from={patterns}")
    ignored = await git(root, *listing, "--exclude-standard")
    wanted = set(ignored.split("\0"))
    return sorted(n for n in matched.split("\0") if n and n in wanted)


async def changed(worktree: Worktree) -> bool:
    """Whether the worktree holds work: anything in `git status` (untracked included)
    or a commit beyond its base. A worktree already gone holds nothing."""
    path = Path(worktree.path)
    if not path.is_dir():
        return False
    # Not into a submodule's files (`dirty`; its commits still count): a repository the
    # model made and registered there has a config of its own, whose filter drivers git
    # would run here, outside the sandbox.
    status = await git(
        path, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=dirty"
    )
    ahead = await git(path, "rev-list", "--count", f"{worktree.base}..HEAD")
    return bool(status.strip()) or int(ahead.strip() or 0) > 0


async def remove(worktree: Worktree) -> None:
    """The worktree's folder and its branch, gone (`--force`: its ignored files, the
    `.worktreeinclude` copies, go with it)."""
    root = Path(worktree.checkout)
    if Path(worktree.path).exists():
        await git(root, "worktree", "remove", "--force", worktree.path)
    else:
        await git(root, "worktree", "prune")
    await git(root, "branch", "-D", worktree.branch)
