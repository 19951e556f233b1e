"""One judgement of a finished command in every view (`tool_lines.shown_status`): the
app's tool line and an editor's tool call say "failed" for a command that exited
non-zero, and "done" for an exit that is an answer (grep's 1) or for 0."""

from __future__ import annotations

import pytest

from agent_tui.acp.tool_calls import STATUSES
from agent_tui.records import ToolPart, ToolStateCompleted, ToolStateRunning
from agent_tui.tool_lines import shown_status
from agent_tui.tui.tool_line import STATUS_ICON, tool_title


def bash_part(command: str, exit_code: int | None) -> ToolPart:
    metadata = {} if exit_code is None else {"exit_code": exit_code}
    state = ToolStateCompleted(input={"command": command}, output="", metadata=metadata)
    return ToolPart(id="p", session_id="s", message_id="m", call_id="c", tool="bash", state=state)


@pytest.mark.parametrize(
    ("command", "exit_code", "status"),
    [
        ("nosuchcommand-xyz", 127, "error"),
        ("false", 1, "error"),
        ("grep needle haystack.txt", 1, "completed"),  # no match: an answer
        ("echo fine", 0, "completed"),
        ("echo fine", None, "completed"),
    ],
)
def test_a_command_is_failed_in_the_app_and_over_acp_alike(
    command: str, exit_code: int | None, status: str
) -> None:
    part = bash_part(command, exit_code)
    assert shown_status(part) == status
    assert STATUSES[shown_status(part)] == ("failed" if status == "error" else "completed")
    title = tool_title(part)
    assert title.startswith(STATUS_ICON[status])
    assert (f"exit code {exit_code}" in title) == (status == "error")


def test_a_running_call_is_running() -> None:
    part = bash_part("sleep 1", None).model_copy(
        update={"state": ToolStateRunning(input={"command": "sleep 1"})}
    )
    assert shown_status(part) == "running"
