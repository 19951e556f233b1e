"""`.worktreeinclude`: copying the main checkout's git-ignored files it names (`.env`,
local settings) into a new worktree, their folders made, their modes kept."""

from __future__ import annotations

import shutil
from pathlib import Path


def copy_included(checkout: Path, worktree: Path, names: list[str]) -> list[str]:
    """Copy each file `names` lists (relative to `checkout`) to the same place in
    `worktree`; a link is copied as a link, a name that left the checkout is skipped.
    Returns what was copied."""
    copied = []
    root = checkout.resolve()
    for name in names:
        source = checkout / name
        if not (source.is_file() or source.is_symlink()):
            continue
        if not source.parent.resolve().is_relative_to(root):
            continue
        target = worktree / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
        copied.append(name)
    return copied
