"""Asks the person, as they leave a session whose worktree holds changes, whether to keep
the worktree (and its branch) or remove them."""

from __future__ import annotations

from textual.binding import Binding

from agent_tui.records import Worktree
from agent_tui.tui.dialog import Question

KEEP, REMOVE = "keep", "remove"


class WorktreeScreen(Question[str]):
    BINDINGS = [
        Binding("k,escape", f"answer('{KEEP}')", "Keep"),
        Binding("r", f"answer('{REMOVE}')", "Remove"),
    ]

    def __init__(self, worktree: Worktree) -> None:
        super().__init__(
            "This session's worktree has changes. Keep it?",
            [(KEEP, "Keep it (k)", "primary"), (REMOVE, "Remove it and its branch (r)", "error")],
            f"{worktree.path}\nbranch {worktree.branch}\n\nKept, it stays with its branch "
            "for you to merge or come back to (agent-tui sessions lists it). Removed, "
            "its changes and commits are gone.",
        )
