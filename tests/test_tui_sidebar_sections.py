"""The sidebar's optional sections (sessions side by side, todos, background commands)
are mounted the first time they have something to show, each in its place, and hidden
again when they have nothing."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Label

from agent_tui.events import BackgroundCommand
from agent_tui.records import TodoItem
from agent_tui.tui.sidebar import Sidebar


class One(App[None]):
    def compose(self) -> ComposeResult:
        yield Sidebar()


def headings(sidebar: Sidebar) -> list[str]:
    return [str(w.content) for w in sidebar.query(Label) if w.display]


async def test_sections_come_in_their_place_when_first_shown() -> None:
    async with One().run_test(size=(60, 50)) as pilot:
        sidebar = pilot.app.query_one(Sidebar)
        assert headings(sidebar) == ["Agent", "Model", "Context", "Files changed"]
        command = BackgroundCommand(id="b1", command="sleep 9", started=1, output_path="/o")
        sidebar.show_background([command])
        await pilot.pause()
        sidebar.show_todos([TodoItem(id="t1", content="Write the parser")])
        await pilot.pause()
        sidebar.show_sessions("● this  ○ other")
        await pilot.pause()
        assert headings(sidebar) == [
            "Sessions",
            "Agent",
            "Model",
            "Context",
            "Todo",
            "Background",
            "Files changed",
        ]
        sidebar.show_todos([])
        await pilot.pause()
        assert "Todo" not in headings(sidebar)
        sidebar.show_todos([TodoItem(id="t2", content="Test it")])
        await pilot.pause()
        assert headings(sidebar).count("Todo") == 1
