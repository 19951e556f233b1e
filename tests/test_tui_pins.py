"""Pinning in the app (Pilot against the fake server, real SQLite): /pin and its list,
the leader key, p on a tool line, /unpin; and the pin reaching the model after /compact."""

from __future__ import annotations

import json

import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList, Static
from textual.widgets._collapsible import CollapsibleTitle

from agent_tui.records import AssistantMessage, ToolPart, ToolStateCompleted
from agent_tui.tui.app import AgentApp
from agent_tui.tui.assistant_message_view import PINNED, AssistantMessageView
from agent_tui.tui.message_actions_screen import MessageActionsScreen
from agent_tui.tui.pin_screen import PinScreen
from agent_tui.tui.tool_line import ToolLine
from tests.engine_helpers import conversation, text_of
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.tui_helpers import open_app, type_and_send, wait_for

SIZE = (120, 36)


def notes(app: AgentApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def one_turn(app: AgentApp, pilot: object, fake: FakeOpenAI) -> None:
    fake.script(
        ToolCalls([Call("bash", json.dumps({"command": "echo TABLE-ROW-1"}), id="call_t")]),
        Text("The table has one row."),
    )
    await type_and_send(pilot, "print the table")  # type: ignore[arg-type]
    await wait_for(pilot, lambda: len(fake.requests) == 2 and app.chat.status == "idle")  # type: ignore[arg-type]


async def pinned_ids(app: AgentApp) -> list[str]:
    assert app.chat.session is not None
    messages, parts = await app.db.pinned(app.chat.session.id)
    return [m.info.id for m in messages] + [p.id for p in parts]


def pin_mark(app: AgentApp) -> bool:
    view = app.query(AssistantMessageView).last()
    mark = view.query_one(".pin", Static)
    return bool(mark.display) and str(mark.render()) == PINNED


@pytest.mark.parametrize("how", ["slash", "leader"])
async def test_pin_list_pins_the_agents_reply_with_enter(configured: FakeOpenAI, how: str) -> None:
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await one_turn(app, pilot, configured)
        if how == "slash":
            await type_and_send(pilot, "/pin")
        else:
            await pilot.press("ctrl+x", "p")
        await wait_for(pilot, lambda: isinstance(app.screen, PinScreen), "the pin list")
        listing = app.screen.query_one(OptionList)
        assert listing.highlighted is not None
        highlighted = listing.get_option_at_index(listing.highlighted)
        rows = [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]
        assert rows[0].startswith("   agent ") and "The table has one row." in rows[0]
        assert "bash echo TABLE-ROW-1" in rows[1] and rows[2].startswith("   you ")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, PinScreen), "closed")
        await wait_for(pilot, lambda: pin_mark(app), "the pin mark on the reply")
        assert await pinned_ids(app) == [highlighted.id]
        assert any(n.startswith(f"Pinned {highlighted.id}") for n in notes(app))
        # /unpin with the id.
        await type_and_send(pilot, f"/unpin {highlighted.id}")
        await wait_for(pilot, lambda: not pin_mark(app), "the mark gone")
        assert await pinned_ids(app) == []
    await app.db.close()


async def test_p_in_the_list_toggles_and_stays_and_unpin_lists_the_pins(
    configured: FakeOpenAI,
) -> None:
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await one_turn(app, pilot, configured)
        await type_and_send(pilot, "/pin")
        await wait_for(pilot, lambda: isinstance(app.screen, PinScreen))
        screen = app.screen
        assert isinstance(screen, PinScreen)
        await pilot.press("down", "p")  # the bash result
        await wait_for(pilot, lambda: bool(screen.pinned))
        assert isinstance(app.screen, PinScreen)  # still open
        (tool_id,) = screen.pinned
        assert tool_id.startswith("prt_") and await pinned_ids(app) == [tool_id]
        listing = screen.query_one(OptionList)
        assert str(listing.get_option_at_index(1).prompt).startswith("📌 tool ")
        await wait_for(
            pilot, lambda: "📌 pinned" in str(app.query(ToolLine).first().title), "tool mark"
        )
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PinScreen))
        # /unpin lists only what is pinned; Enter unpins it.
        await type_and_send(pilot, "/unpin")
        await wait_for(pilot, lambda: isinstance(app.screen, PinScreen))
        assert list(app.screen.items) == [tool_id]  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, PinScreen))
        assert await pinned_ids(app) == []
        await type_and_send(pilot, "/unpin")
        await wait_for(pilot, lambda: "Nothing is pinned in this session." in notes(app))
        await type_and_send(pilot, "/pin prt_nothing")
        await wait_for(pilot, lambda: any("'prt_nothing'" in n for n in notes(app)))
    await app.db.close()


async def pin_from_menu(app: AgentApp, pilot: Pilot[None], line: ToolLine) -> None:
    """ctrl+o on the tool line, then its "Pin" / "Unpin" entry (after expand / collapse)."""
    line.query_one(CollapsibleTitle).focus()
    await pilot.press("ctrl+o")
    await wait_for(pilot, lambda: isinstance(app.screen, MessageActionsScreen), "the menu")
    await pilot.press("down", "enter")


async def test_the_menu_on_a_tool_line_pins_its_result_and_compact_restates_it(
    configured: FakeOpenAI,
) -> None:
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await one_turn(app, pilot, configured)
        line = app.query(ToolLine).first()
        await pin_from_menu(app, pilot, line)
        await wait_for(pilot, lambda: "📌 pinned" in str(line.title), "the tool line's mark")
        assert await pinned_ids(app) == [line.part.id]
        part = line.part
        assert isinstance(part, ToolPart) and isinstance(part.state, ToolStateCompleted)
        configured.script(Text("SUMMARY-P"), Text("next answer"))
        app.prompt.focus()
        await type_and_send(pilot, "/compact")
        await wait_for(pilot, lambda: len(configured.requests) == 3 and app.chat.status == "idle")
        await type_and_send(pilot, "and now?")
        await wait_for(pilot, lambda: len(configured.requests) == 4 and app.chat.status == "idle")
        restated = text_of(conversation(configured.requests[-1])[2])
        assert f'<pinned id="{part.id}" tool="bash">' in restated
        assert f"Result:\n{part.state.output}\n</pinned>" in restated
        # p again on the (re-focused) line unpins.
        line = app.query(ToolLine).first()
        await pin_from_menu(app, pilot, line)
        await wait_for(pilot, lambda: "pinned" not in str(line.title), "unpinned")
        assert await pinned_ids(app) == []
        assert app.chat.session is not None
        summaries = [
            m.info
            for m in await app.db.all_messages(app.chat.session.id)
            if isinstance(m.info, AssistantMessage) and m.info.summary
        ]
        assert [p.id for p in summaries[0].pins] == [part.id]  # the summary keeps its copy
    await app.db.close()
