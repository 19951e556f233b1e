"""Where a session's worktree goes, as Claude Code 2.1 puts it (so both tools agree):
`.claude/worktrees/NAME` under the main checkout, on the new branch `worktree-NAME`; and
which main checkout a worktree belongs to, read from its `.git` file (no git run)."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

WORKTREES_DIR = Path(".claude") / "worktrees"
BRANCH_PREFIX = "worktree-"
EXCLUDE_LINE = "/.claude/worktrees/"
"""The line added to the repository's `info/exclude`: the worktrees are never untracked
files of the main checkout (Claude Code asks the person to add it to `.gitignore`)."""
INCLUDE_FILE = ".worktreeinclude"
"""Git-ignored files of the main checkout matching its patterns (gitignore syntax) are
copied into a new worktree: `.env` and the like."""

_ADJECTIVES = ("bright", "calm", "eager", "gentle", "keen", "quiet", "swift", "bold", "merry")
_VERBS = ("running", "jumping", "singing", "drifting", "humming", "racing", "rolling")
_NOUNS = ("fox", "otter", "heron", "lynx", "badger", "finch", "marten", "wren", "hare")
_VALID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def generated_name() -> str:
    """A name like Claude Code's `bright-running-fox`, when the person gives none."""
    return "-".join(secrets.choice(words) for words in (_ADJECTIVES, _VERBS, _NOUNS))


def valid_name(name: str) -> bool:
    """A worktree name is one path component git accepts in a branch name."""
    return bool(_VALID.match(name)) and ".." not in name and not name.endswith((".lock", "."))


def main_checkout(directory: Path) -> Path | None:
    """The main checkout whose linked worktree `directory` is (its `.git` file reads
    `gitdir: MAIN/.git/worktrees/NAME`); None for a main checkout or no repository."""
    dotgit = directory / ".git"
    try:
        if not dotgit.is_file():
            return None
        text = dotgit.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    git_dir = (directory / text.removeprefix("gitdir:").strip()).resolve()
    if git_dir.parent.name != "worktrees" or git_dir.parent.parent.name != ".git":
        return None
    return git_dir.parent.parent.parent
