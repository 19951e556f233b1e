"""Compact up to here: the person chooses the message a summary ends with, and everything
after it stays verbatim; refused with its figures, nothing changed, when what stays would
not fit. In the engine, headless (`agent-tui compact --up-to`), ACP (`/compact --up-to`)
and the app (the menu of a clicked message), through litellm's real path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_tui.context.compaction_plan import preview
from agent_tui.errors import CompactionError
from agent_tui.records import UserMessage
from agent_tui.session.engine import Engine
from agent_tui.tui.app import AgentApp
from agent_tui.tui.confirm_screen import ConfirmScreen
from agent_tui.tui.message_actions_screen import MessageActionsScreen
from agent_tui.tui.text_part_view import TextPartView
from agent_tui.tui.user_message_view import UserMessageView
from tests.acp_client import RecordingClient, acp_agent, prompt
from tests.conftest import SMALL, write_config
from tests.engine_helpers import (
    conversation,
    is_summary_request,
    open_engine,
    run_cli,
    starts_with_summary,
    text_of,
)
from tests.fake_openai import FakeOpenAI, Text
from tests.tui_helpers import ask, click_to_focus, open_app, type_and_send, wait_for


async def three_turns(engine: Engine, fake_llm: FakeOpenAI) -> tuple[str, list[str]]:
    """A session of three question/answer turns; (its id, the questions' message ids)."""
    session = await engine.new_session(Path.cwd())
    for turn in (1, 2, 3):
        fake_llm.script(Text(f"answer {turn}"))
        await engine.prompt(session.id, f"question {turn}")
    history = await engine.ctx.db.all_messages(session.id)
    return session.id, [m.info.id for m in history if isinstance(m.info, UserMessage)]


def summarised_and_kept(fake_llm: FakeOpenAI) -> tuple[str, dict]:
    summary = next(r for r in fake_llm.requests if is_summary_request(r))
    return json.dumps(summary["messages"]), fake_llm.requests[-1]


async def test_the_summary_ends_at_the_chosen_message_and_the_rest_stays_verbatim(
    configured: FakeOpenAI,
) -> None:
    async with open_engine() as engine:
        session_id, questions = await three_turns(engine, configured)
        plan = await preview(await engine.scope(session_id), up_to=questions[1])
        assert (plan.tail_messages, plan.up_to) == (3, questions[1])  # answer 2, turn 3
        assert f"after {questions[1]}" in plan.message()
        configured.script(Text("SUMMARY-UP-TO"), Text("answer 4"))
        await engine.compact(session_id, up_to=questions[1])
        await engine.prompt(session_id, "question 4")
    summarised, after = summarised_and_kept(configured)
    assert "question 1" in summarised and "answer 1" in summarised
    assert "question 2" in summarised  # the chosen message ends the summary...
    assert "answer 2" not in summarised and "question 3" not in summarised  # ...not after it
    assert starts_with_summary(after, "SUMMARY-UP-TO")
    kept = [text_of(m) for m in conversation(after)[3:]]  # after summary and restated words
    assert kept == ["answer 2", "question 3", "answer 3", "question 4"]


async def test_what_would_not_fit_is_refused_with_its_figures_and_nothing_changes(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, models=SMALL, compaction={"auto": False})
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        fake_llm.script(Text("answer 1"), Text("answer 2"))
        await engine.prompt(session.id, "question 1")
        big = " ".join(f"word{i}" for i in range(9_000))  # more than 8,000 usable tokens
        await engine.prompt(session.id, big)
        history = await engine.ctx.db.all_messages(session.id)
        first = history[0].info.id
        sent = len(fake_llm.requests)
        plan = await preview(await engine.scope(session.id), up_to=first)  # --dry-run says it too
        assert "The real run would be refused: Compacting up to" in plan.message()
        with pytest.raises(CompactionError) as refused:
            await engine.compact(session.id, up_to=first)
        assert len(await engine.ctx.db.all_messages(session.id)) == len(history)
        assert (await engine.ctx.db.get_session(session.id)).compaction_id is None
        with pytest.raises(CompactionError) as unknown:
            await engine.compact(session.id, up_to="msg_nosuch")
    assert len(fake_llm.requests) == sent  # nothing was sent
    message = str(refused.value)
    assert f"Compacting up to {first} keeps 3 messages" in message
    assert "of 8,000 usable tokens" in message and "too many" in message
    assert "Nothing was changed" in message
    assert "No message msg_nosuch" in str(unknown.value)


def test_headless_compact_up_to(configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]):
    configured.script(Text("answer 1"), Text("answer 2"))
    assert run_cli(capsys, "run", "question 1")[0] == 0
    assert run_cli(capsys, "run", "--continue", "question 2")[0] == 0
    export = json.loads(run_cli(capsys, "export", _latest_session(capsys))[1])
    first = export["messages"][0]["info"]["id"]
    code, out, _ = run_cli(capsys, "compact", "--continue", "--dry-run", "--up-to", first)
    assert code == 0 and f"after {first}" in out
    configured.script(Text("HEADLESS-SUMMARY"))
    code, _, err = run_cli(capsys, "compact", "--continue", "--up-to", first)
    assert code == 0, err
    summarised = json.dumps(configured.requests[-1]["messages"])
    assert "question 1" in summarised and "answer 1" not in summarised
    code, out, err = run_cli(capsys, "compact", "--continue", "--up-to", "msg_nosuch")
    assert code != 0 and "No message msg_nosuch" in err, (code, out, err)


def _latest_session(capsys: pytest.CaptureFixture[str]) -> str:
    return json.loads(run_cli(capsys, "sessions", "--json")[1])[0]["id"]


async def test_acp_compact_up_to(configured: FakeOpenAI, isolated: Path) -> None:
    configured.script(Text("answer 1"), Text("answer 2"), Text("ACP-SUMMARY"))
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=prompt("question 1"))
        await conn.prompt(session_id=sid, prompt=prompt("question 2"))
        async with open_engine() as engine:
            history = await engine.ctx.db.all_messages(sid)
        first = history[0].info.id
        await conn.prompt(session_id=sid, prompt=prompt(f"/compact --up-to {first}"))
    summarised = json.dumps(configured.requests[-1]["messages"])
    assert is_summary_request(configured.requests[-1])
    assert "question 1" in summarised and "answer 1" not in summarised


async def test_letters_typed_after_clicking_a_message_or_tool_line_go_to_the_prompt(
    configured: FakeOpenAI,
) -> None:
    """The keys that once ran `u` (compact up to here), `f` (fork), `p` (pin) and `o` on a
    clicked message or tool line are typing like any other: they reach the prompt, in
    order, and nothing runs."""
    from textual.widgets._collapsible import CollapsibleTitle

    from agent_tui.tui.tool_line import ToolLine
    from tests.fake_openai import Call, ToolCalls

    bash = Call("bash", json.dumps({"command": "echo hi"}))
    configured.script(ToolCalls([bash]), Text("answer 1"), Text("answer 2"))
    app = await open_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.loaded.wait()
        await ask(pilot, configured, "question 1", "question 2")
        session = app.chat.session
        await click_to_focus(pilot, app.query(UserMessageView).first())
        await pilot.press(*"use it, fork")
        assert app.prompt.has_focus and app.prompt.text == "use it, fork"
        app.query(ToolLine).first().query_one(CollapsibleTitle).focus()
        await pilot.press(*" pop")
        assert app.prompt.text == "use it, fork pop"
        await pilot.pause()
        assert len(configured.requests) == 3 and app.chat.session is session  # nothing asked
        assert not isinstance(app.screen, (MessageActionsScreen, ConfirmScreen))
        # What those letters did is in the message's menu now: copy, for one.
        await click_to_focus(pilot, app.query(UserMessageView).first())
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: isinstance(app.screen, MessageActionsScreen), "the menu")
        await pilot.press("down", "down", "enter")
        await wait_for(pilot, lambda: app.clipboard == "question 1", "the message copied")
    await app.db.close()
    async with open_engine() as engine:
        assert session is not None
        assert (await engine.ctx.db.get_session(session.id)).compaction_id is None
        assert await engine.ctx.db.pinned(session.id) == ([], [])


def shown(app: AgentApp) -> list[str]:
    """The conversation as drawn, top to bottom: texts, and DIVIDER for a compaction."""
    from agent_tui.tui.assistant_message_view import AssistantMessageView
    from agent_tui.tui.compaction_divider import CompactionDivider

    found = []
    for widget in app.chat.view.children:
        if isinstance(widget, CompactionDivider):
            found.append("DIVIDER")
        elif isinstance(widget, UserMessageView):
            found.append(widget.text)
        elif isinstance(widget, AssistantMessageView):
            found.append(
                "".join(w._text for w in widget._parts.values() if isinstance(w, TextPartView))
            )
    return found


async def test_the_app_compacts_up_to_a_clicked_message(configured: FakeOpenAI) -> None:
    configured.script(Text("answer 1"), Text("answer 2"), Text("APP-SUMMARY"))
    app = await open_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.loaded.wait()
        await ask(pilot, configured, "question 1", "question 2")
        first = app.query(UserMessageView).first()
        await click_to_focus(pilot, first)
        await pilot.press("enter")  # its actions: fork, compact up to here
        await wait_for(pilot, lambda: isinstance(app.screen, MessageActionsScreen), "the menu")
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        assert len(configured.requests) == 2  # nothing compacted before the person's yes
        await pilot.press("y")
        await wait_for(pilot, lambda: len(configured.requests) == 3, "the summary request")
        await wait_for(pilot, lambda: app.chat.status == "idle")
        assert app.prompt.has_focus  # typing goes on in the prompt
        # The divider sits where the boundary is: above what was kept verbatim.
        await wait_for(pilot, lambda: shown(app)[-1] == "answer 2", "the view settled")
        assert shown(app) == ["question 1", "DIVIDER", "answer 1", "question 2", "answer 2"]
        await app.chat.show_session(app.chat.session)  # opened again: the same
        await wait_for(pilot, lambda: bool(shown(app)), "the session shown again")
        assert shown(app) == ["question 1", "DIVIDER", "answer 1", "question 2", "answer 2"]
    await app.db.close()
    summarised = json.dumps(configured.requests[-1]["messages"])
    assert "question 1" in summarised and "answer 1" not in summarised


async def test_the_app_lets_the_person_choose_where_the_summary_ends(
    configured: FakeOpenAI,
) -> None:
    """`/compact --up-to` with no id: the person's messages, newest first, to choose from
    with the keyboard."""
    from agent_tui.tui.choice_screen import RowsScreen

    configured.script(Text("answer 1"), Text("answer 2"), Text("PICKED-SUMMARY"))
    app = await open_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.loaded.wait()
        await ask(pilot, configured, "question 1", "question 2")
        await type_and_send(pilot, "/compact --up-to")
        await wait_for(pilot, lambda: isinstance(app.screen, RowsScreen), "picker")
        await pilot.press("down", "enter")  # from question 2 down to question 1
        await wait_for(pilot, lambda: len(configured.requests) == 3, "the summary request")
        await wait_for(pilot, lambda: app.chat.status == "idle")
    await app.db.close()
    summarised = json.dumps(configured.requests[-1]["messages"])
    assert "question 1" in summarised and "answer 1" not in summarised
