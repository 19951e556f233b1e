"""A custom command the person typed (`/run-tests core`), as `Engine.prompt` expands it:
its UserPromptExpansion hooks first, which may stop it before anything of it runs, then
its `` !`command` `` lines (session/command_lines.py), whose output fills its body, then
the prompt's UserPromptSubmit hooks with what was typed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_tui.errors import UsageError


@dataclass(frozen=True)
class Expansion:
    typed: str
    """What the person typed: the `prompt` its hooks read, and what a view puts back in
    the input when it is not sent."""
    name: str
    """`command_name`: the command without its slash."""
    arguments: str
    """`command_args`: everything after the name."""
    source: str
    """`command_source`, in Claude Code's words (config/hook_config.COMMAND_SOURCES)."""
    allowed: dict[str, Any] = field(default_factory=dict)
    """The permission rules its `allowed-tools` give its `!` lines (where its file is
    trusted)."""


class ExpansionFailed(UsageError):
    """A `!` line of a custom command did not run: nothing was sent."""

    session_dropped = False
    """The prompt was the session's first: the empty session is gone too."""
