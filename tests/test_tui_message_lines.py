"""An assistant step's widgets: its error and pin lines and a tool line's body exist only
once there is something to show (a page of steps mounts no hidden widgets), and then in
their place: the parts, the error, the pin; the body under its title."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Collapsible, Static

from agent_tui.ids import part_id
from agent_tui.records import (
    AssistantMessage,
    ErrorInfo,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolTime,
)
from agent_tui.tui.assistant_message_view import INTERRUPTED, PINNED, AssistantMessageView
from agent_tui.tui.tool_line import ToolLine

IDS = {"session_id": "ses", "message_id": "msg"}
STOPPED = ErrorInfo(kind="aborted", message="stopped")


def tool_part() -> ToolPart:
    state = ToolStateCompleted(
        input={"command": "ls"}, output="a.py\nb.py", title="ls", time=ToolTime(start=1, end=2)
    )
    return ToolPart(id=part_id(), call_id="c1", tool="bash", state=state, **IDS)


class One(App[None]):
    def __init__(self, view: AssistantMessageView) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        yield self.view


def texts(view: AssistantMessageView) -> list[str]:
    return [str(w.content) for w in view.children if isinstance(w, Static) and w.display]


async def test_error_and_pin_lines_come_when_there_is_one_and_in_order() -> None:
    info = AssistantMessage(id="msg", session_id="ses", parent_id="u")
    text = TextPart(id=part_id(), text="Done.", **IDS)
    view = AssistantMessageView(info, [text, tool_part()])
    async with One(view).run_test() as pilot:
        assert [type(w).__name__ for w in view.children] == ["TextPartView", "ToolLine"]
        pinned = 1  # when the person pinned it
        view.show_info(info.model_copy(update={"pinned": pinned}))
        await pilot.pause()
        view.show_info(info.model_copy(update={"pinned": pinned, "error": STOPPED}))
        await pilot.pause()
        assert texts(view)[-2:] == [INTERRUPTED, PINNED]
        view.show_info(info.model_copy(update={"error": STOPPED}))
        await pilot.pause()
        assert texts(view)[-1] == INTERRUPTED  # unpinned: the pin line is hidden


async def test_a_tool_lines_body_is_made_when_first_expanded() -> None:
    info = AssistantMessage(id="msg", session_id="ses", parent_id="u")
    view = AssistantMessageView(info, [tool_part()])
    async with One(view).run_test() as pilot:
        line = view.query_one(ToolLine)
        assert not line.query(Collapsible.Contents)
        line.collapsed = False
        await pilot.pause()
        await pilot.pause()
        (contents,) = line.query(Collapsible.Contents)
        assert "a.py" in str(contents.query_one(Static).content)
        assert contents.region.y > line.query_one("CollapsibleTitle").region.y
        line.collapsed = True
        await pilot.pause()
        assert not contents.display
