"""Snapshots of a working tree in a shadow git repository, for undo and redo.

One bare-style git directory per project under the data dir
(`<data>/snapshot/<project id>`) with the project as its work tree: `git add -A` then
`git write-tree` records every file git would track (the project's `.gitignore` files
apply) without a commit and without touching the person's own `.git`. It works the same
in a directory that is not a git repository. Without git, `Snapshots.available` is
False and every call is a no-op returning None / nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
from pathlib import Path
from typing import Literal

from agent_tui import paths
from agent_tui.records import FileChange

# Settings that keep the shadow repository independent of the person's git config.
_GIT_SETTINGS = (
    "core.autocrlf=false",
    "core.quotepath=false",
    "core.fsmonitor=false",
    "advice.addEmbeddedRepo=false",
    "core.longpaths=true",
    "core.symlinks=true",
)
_GIT_OPTIONS = tuple(option for setting in _GIT_SETTINGS for option in ("-c", setting))
_ENV_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")


_STATUS: dict[str, Literal["added", "modified", "deleted"]] = {"A": "added", "D": "deleted"}


def _numstat(record: str) -> tuple[str, tuple[int, int]] | None:
    """`added\tremoved\tpath` as (path, (added, removed)); a binary file's "-" counts 0."""
    fields = record.split("\t", 2)
    if len(fields) != 3:
        return None
    added, removed, path = fields
    return path, (int(added) if added.isdigit() else 0, int(removed) if removed.isdigit() else 0)


def parse_changes(out: str) -> list[FileChange]:
    """`diff-tree -z --raw --numstat` output: `:modes shas STATUS\0path\0` records, then
    `added\tremoved\tpath\0` ones ("-" for a binary file)."""
    fields = iter(out.split("\0"))
    statuses: dict[str, Literal["added", "modified", "deleted"]] = {}
    counts: dict[str, tuple[int, int]] = {}
    for field in fields:
        if field.startswith(":"):  # its path is the next field
            if (path := next(fields, None)) is not None:
                statuses[path] = _STATUS.get(field.rsplit(" ", 1)[-1][:1], "modified")
        elif (record := _numstat(field)) is not None:
            counts[record[0]] = record[1]
    return [
        FileChange(
            path=path,
            status=status,
            added=counts.get(path, (0, 0))[0],
            removed=counts.get(path, (0, 0))[1],
        )
        for path, status in statuses.items()
    ]


class SnapshotError(Exception):
    """A git command of the shadow repository failed (callers skip the snapshot)."""


def snapshot_root() -> Path:
    return paths.data_dir() / "snapshot"


def project_id(directory: Path) -> str:
    """A stable id of the project: a hash of its absolute path."""
    return hashlib.sha1(str(Path(directory).resolve()).encode()).hexdigest()[:20]


class Snapshots:
    """The shadow repository of one work tree."""

    def __init__(self, directory: Path, root: Path | None = None) -> None:
        self.directory = Path(directory).resolve()
        self.git_dir = (root or snapshot_root()) / project_id(self.directory)
        self.available = shutil.which("git") is not None
        self._ready = False
        self._lock = asyncio.Lock()
        """One git index per project: concurrent `git add`s would collide on its lock."""

    async def _git(self, *args: str, stdin: bytes | None = None) -> bytes:
        env = {k: v for k, v in os.environ.items() if k not in _ENV_DROPPED}
        env["GIT_TERMINAL_PROMPT"] = "0"
        process = await asyncio.create_subprocess_exec(
            "git",
            "--git-dir",
            str(self.git_dir),
            "--work-tree",
            str(self.directory),
            "--literal-pathspecs",
            *_GIT_OPTIONS,
            *args,
            cwd=self.directory,
            env=env,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate(stdin)
        if process.returncode != 0:
            raise SnapshotError(
                f"git {args[0]} failed in the snapshot repository {self.git_dir}: "
                f"{err.decode(errors='replace').strip()}"
            )
        return out

    async def _init(self) -> None:
        if self._ready:
            return
        if not (self.git_dir / "HEAD").exists():
            await asyncio.to_thread(self.git_dir.mkdir, parents=True, exist_ok=True)
            await self._git("init", "--quiet")
        await asyncio.to_thread(self._exclude_own_files)
        self._ready = True

    def _exclude_own_files(self) -> None:
        """agent-tui's own data (the database, saved outputs, this very repository) may
        lie inside the work tree, e.g. when the project is the home directory: never
        snapshot it, or every step would copy the growing shadow repository into itself."""
        lines = []
        for own in (paths.data_dir(), self.git_dir.parent):
            try:
                relative = own.resolve().relative_to(self.directory)
            except ValueError:
                continue  # outside the work tree
            if relative.parts:
                lines.append(f"/{relative.as_posix()}/")
        exclude = self.git_dir / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        exclude.write_text("".join(f"{line}\n" for line in dict.fromkeys(lines)))

    async def track(self) -> str | None:
        """Record the work tree now; returns its tree hash (None without git)."""
        if not self.available or not self.directory.is_dir():
            return None
        async with self._lock:
            await self._init()
            await self._git("add", "--all", ".")
            return (await self._git("write-tree")).decode().strip()

    async def changed_files(self, tree_a: str, tree_b: str) -> list[str]:
        """Paths that differ between two trees."""
        if tree_a == tree_b:
            return []
        out = await self._git(
            "diff-tree", "-r", "-z", "--name-only", "--no-renames", tree_a, tree_b
        )
        return [p for p in out.decode(errors="surrogateescape").split("\0") if p]

    async def changes(self, tree_a: str, tree_b: str) -> list[FileChange]:
        """Paths that differ between two trees, with their status and line counts (one
        git call: the raw records, then the numstat ones)."""
        if tree_a == tree_b:
            return []
        out = await self._git(
            "diff-tree", "-r", "-z", "--no-renames", "--raw", "--numstat", tree_a, tree_b
        )
        return parse_changes(out.decode(errors="surrogateescape"))

    async def diff(self, tree_a: str, tree_b: str, files: list[str] | None = None) -> str:
        """A unified diff between two trees (only `files` when given)."""
        if files is not None and not files:
            return ""
        out = await self._git(
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            tree_a,
            tree_b,
            "--",
            *(files or []),
        )
        return out.decode(errors="replace")

    async def numstat(
        self, tree_a: str, tree_b: str, files: list[str] | None = None
    ) -> dict[str, tuple[int, int]]:
        """Lines added and removed per path (binary files count 0/0)."""
        if files is not None and not files:
            return {}
        out = await self._git(
            "diff", "--numstat", "-z", "--no-renames", tree_a, tree_b, "--", *(files or [])
        )
        records = out.decode(errors="surrogateescape").split("\0")
        return dict(found for record in records if (found := _numstat(record)) is not None)

    async def restore(self, tree: str, files: list[str]) -> None:
        """Put `files` back as they are in `tree`; those absent from it are deleted."""
        if not files:
            return
        async with self._lock:
            listed = await self._git("ls-tree", "-r", "-z", "--name-only", tree, "--", *files)
            present = [p for p in listed.decode(errors="surrogateescape").split("\0") if p]
            if present:
                await self._git("checkout", tree, "--", *present)
            absent = [f for f in files if f not in set(present)]
            await asyncio.to_thread(self._delete, absent)

    def _delete(self, files: list[str]) -> None:
        for name in files:
            path = self.directory / name
            if path.is_symlink() or path.is_file():
                path.unlink()
