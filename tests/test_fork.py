"""Fork: a new session whose history is another's up to a message, with its summary,
pins, ledger, todos and snapshots as they were there, the original untouched; the fork's
first request reads the shared prefix from the provider's cache. Engine, headless
(`agent-tui fork`), ACP (`session/fork`) and the app (`/fork`, the menu of a message)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_tui.errors import UsageError
from agent_tui.records import AssistantMessage, ToolPart, UserMessage
from agent_tui.session import undo as turns
from agent_tui.session.fork import fork
from agent_tui.session.pin_changes import set_pin
from agent_tui.tui.message_actions_screen import MessageActionsScreen
from agent_tui.tui.user_message_view import UserMessageView
from tests.acp_client import RecordingClient, acp_agent, prompt
from tests.engine_helpers import conversation, open_engine, run_cli, text_of, write
from tests.fake_anthropic import FakeAnthropic
from tests.fake_anthropic import Text as ClaudeText
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.test_anthropic_path import configure
from tests.tui_helpers import ask, click_to_focus, open_app, type_and_send, wait_for


def todos(*items: str) -> ToolCalls:
    entries = [{"content": item, "status": "pending"} for item in items]
    return ToolCalls([Call("todowrite", json.dumps({"todos": entries}))])


async def test_the_fork_has_the_history_up_to_the_message_and_the_original_is_untouched(
    configured: FakeOpenAI, isolated: Path
) -> None:
    configured.script(
        todos("first task"), write("notes.txt", "one\n"), Text("answer 1"),
        todos("first task", "second task"), Text("answer 2"),
    )  # fmt: skip
    async with open_engine() as engine:
        original = await engine.new_session(isolated)
        await engine.prompt(original.id, "question 1")
        # the agent's newest reply: "answer 1"
        await set_pin(await engine.scope(original.id), None, pinned=True)
        await engine.prompt(original.id, "question 2")
        before = await engine.ctx.db.all_messages(original.id)
        question_1_end = next(m for m in before if m.parts and _text(m) == "answer 1")
        forked = (await fork(await engine.scope(original.id), question_1_end.info.id)).session
        after = await engine.ctx.db.all_messages(original.id)
        copied = await engine.ctx.db.all_messages(forked.id)
        fork_todos = await engine.ctx.db.get_todos(forked.id)
        original_todos = await engine.ctx.db.get_todos(original.id)
        stored = await engine.ctx.db.get_session(forked.id)
        # Each goes on on its own: the fork's next request has its history and the new
        # question, not question 2; the original's undo does not touch the fork.
        configured.script(Text("fork answer"))
        await engine.prompt(forked.id, "question in the fork")
        fork_request = configured.requests[-1]
        await turns.undo(await engine.scope(original.id))
        copied_after_undo = await engine.ctx.db.all_messages(forked.id)
    assert [m.model_dump() for m in after] == [m.model_dump() for m in before]
    cut = before.index(question_1_end) + 1
    assert [_text(m) for m in copied] == [_text(m) for m in before[:cut]]
    assert all(m.info.session_id == forked.id for m in copied)
    assert {m.info.id for m in copied}.isdisjoint({m.info.id for m in before})
    assert [m.info.id[:20] for m in copied] == [m.info.id[:20] for m in before[:cut]]
    pinned = [m for m in copied if isinstance(m.info, AssistantMessage) and m.info.pinned]
    assert [_text(m) for m in pinned] == ["answer 1"]
    assert [t.content for t in fork_todos] == ["first task"]  # as they were there
    assert [t.content for t in original_todos] == ["first task", "second task"]
    assert (stored.forked_from, stored.forked_at) == (original.id, question_1_end.info.id)
    assert stored.title.endswith("(fork)")
    sent = [text_of(m) for m in conversation(fork_request)]
    assert "question 1" in sent[0] and sent[-1] == "question in the fork"
    assert not any("question 2" in text for text in sent)
    assert not any(m.info.undone for m in copied_after_undo)
    assert (isolated / "notes.txt").read_text() == "one\n"


def _text(message: Any) -> str:
    return "".join(getattr(p, "text", "") for p in message.parts if p.type == "text")


async def test_a_fork_after_a_compaction_keeps_the_summary_and_undo_works_in_it(
    configured: FakeOpenAI, isolated: Path
) -> None:
    configured.script(
        write("a.txt", "alpha\n"), Text("answer 1"), Text("SUMMARY"),
        write("b.txt", "beta\n"), Text("answer 2"),
    )  # fmt: skip
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "question 1")
        await engine.compact(session.id)
        await engine.prompt(session.id, "question 2")
        forked = (await fork(await engine.scope(session.id))).session
        stored = await engine.ctx.db.get_session(forked.id)
        done = await turns.undo(await engine.scope(forked.id))  # question 2's turn, the fork's
        original = await engine.ctx.db.all_messages(session.id)
        with pytest.raises(UsageError, match="No message msg_nosuch"):
            await fork(await engine.scope(session.id), "msg_nosuch")
    assert (
        stored.compaction_id is not None
        and stored.compaction_id[:20] == ((await _session(session.id)).compaction_id or "")[:20]
    )
    assert done.files == ["b.txt"] and not (isolated / "b.txt").exists()
    assert not any(m.info.undone for m in original)


async def _session(session_id: str) -> Any:
    async with open_engine() as engine:
        return await engine.ctx.db.get_session(session_id)


def test_the_forks_first_request_reads_the_shared_prefix_from_the_cache(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeAnthropic() as anthropic:
        configure(isolated, anthropic)
        long = " ".join(f"fact{i}" for i in range(3_000))
        anthropic.script(ClaudeText("noted"), ClaudeText("in the original"), ClaudeText("fork"))
        assert run_cli(capsys, "run", f"remember: {long}")[0] == 0
        assert run_cli(capsys, "run", "--continue", "next in the original")[0] == 0
        code, out, err = run_cli(capsys, "fork", "--continue")
        assert code == 0, err
        fork_id = out.strip()
        assert run_cli(capsys, "run", "--session", fork_id, "next in the fork")[0] == 0
        usage = anthropic.usages[-1]
    prompt_tokens = sum(
        usage[k] for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    assert usage["cache_read_input_tokens"] >= 0.9 * prompt_tokens, usage


def test_headless_fork_prints_the_new_id_and_forks_before_a_message_you_typed(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Text("answer 1"), Text("answer 2"))
    assert run_cli(capsys, "run", "question 1")[0] == 0
    assert run_cli(capsys, "run", "--continue", "question 2")[0] == 0
    sessions = json.loads(run_cli(capsys, "sessions", "--json")[1])
    export = json.loads(run_cli(capsys, "export", sessions[0]["id"])[1])
    answer_1 = export["messages"][1]["info"]["id"]
    code, out, _ = run_cli(capsys, "fork", "--continue", answer_1)
    assert code == 0 and out.strip().startswith("ses_")
    forked = json.loads(run_cli(capsys, "export", out.strip())[1])
    assert [m["info"]["role"] for m in forked["messages"]] == ["user", "assistant"]
    # At a message the person typed: the fork ends before it, never with it unanswered,
    # and its words are given back (on stderr: stdout is the new id alone).
    question_2 = export["messages"][2]["info"]["id"]
    original = sessions[0]["id"]  # --continue would be the newest: the fork
    code, out, err = run_cli(capsys, "fork", "--session", original, question_2)
    assert code == 0 and out.strip().startswith("ses_") and "question 2" in err
    forked = json.loads(run_cli(capsys, "export", out.strip())[1])
    assert [m["info"]["role"] for m in forked["messages"]] == ["user", "assistant"]
    assert forked["session"]["forked_at"].startswith(answer_1[:20])
    first = export["messages"][0]["info"]["id"]  # before the first: a fork with nothing yet
    code, out, err = run_cli(capsys, "fork", "--session", original, first)
    assert code == 0 and "question 1" in err
    assert json.loads(run_cli(capsys, "export", out.strip())[1])["messages"] == []
    code, _, err = run_cli(capsys, "fork", "--session", original, "msg_nosuch")
    assert code != 0 and "No message msg_nosuch" in err


async def test_acp_session_fork(configured: FakeOpenAI, isolated: Path) -> None:
    configured.script(Text("answer 1"), Text("fork answer"))
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        init = await conn.initialize(protocol_version=1)
        assert init.agent_capabilities.session_capabilities.fork is not None
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=prompt("question 1"))
        forked = await conn.fork_session(cwd=str(isolated), session_id=session.session_id)
        assert forked.session_id != session.session_id
        await conn.prompt(session_id=forked.session_id, prompt=prompt("in the fork"))
    sent = [text_of(m) for m in conversation(configured.requests[-1])]
    assert "question 1" in sent[0] and sent[1] == "answer 1" and sent[-1] == "in the fork"


async def test_acp_chunks_name_their_message_and_fork_is_a_command_at_one(
    configured: FakeOpenAI, isolated: Path
) -> None:
    """An editor learns each message's id from the chunks (`messageId`), and `/fork ID`
    (listed among the commands) forks there: a new session, the original untouched."""
    configured.script(Text("answer 1"), Text("answer 2"))
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=prompt("question 1"))
        await conn.prompt(session_id=sid, prompt=prompt("question 2"))
        chunks = [
            u for s, u in client.updates if s == sid and u.session_update == "agent_message_chunk"
        ]
        ids = list(dict.fromkeys(u.message_id for u in chunks))
        assert len(ids) == 2 and all(i and i.startswith("msg_") for i in ids), ids
        listed = [u for s, u in client.updates if u.session_update == "available_commands_update"]
        assert "fork" in {c.name for c in listed[-1].available_commands}
        before = len(client.updates)
        await conn.prompt(session_id=sid, prompt=prompt(f"/fork {ids[0]}"))
        said = "".join(
            u.content.text
            for s, u in client.updates[before:]
            if u.session_update == "agent_message_chunk"
        )
    assert "Forked into a new session" in said, said
    forked = said.split("session, ")[1].split(";")[0]
    async with open_engine() as engine:
        copied = await engine.ctx.db.all_messages(forked)
        original = await engine.ctx.db.all_messages(sid)
    assert [_text(m) for m in copied] == ["question 1", "answer 1"]
    assert len(original) == 4


async def test_the_app_forks_from_a_clicked_message_and_by_command(
    configured: FakeOpenAI,
) -> None:
    configured.script(Text("answer 1"), Text("answer 2"))
    app = await open_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.loaded.wait()
        await ask(pilot, configured, "question 1", "question 2")
        original = app.chat.session
        assert original is not None
        await click_to_focus(pilot, app.query(UserMessageView).last())
        await pilot.press("ctrl+o")  # its actions: fork first
        await wait_for(pilot, lambda: isinstance(app.screen, MessageActionsScreen), "the menu")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.session.id != original.id, "the fork shown")
        # Forked before the message of yours: the fork ends with answer 1, and the words
        # are back in the input to edit and send again (Claude Code's and OpenCode's way).
        texts = [v.text for v in app.query(UserMessageView)]
        assert texts == ["question 1"]
        assert app.prompt.has_focus and app.prompt.text == "question 2"
        app.prompt.text = ""
        await type_and_send(pilot, "/fork")
        chat = app.chat
        await wait_for(pilot, lambda: chat.session.title.count("(fork)") == 2, "fork of fork")
    await app.db.close()
    async with open_engine() as engine:
        kept = await engine.ctx.db.all_messages(original.id)
    assert len([m for m in kept if isinstance(m.info, UserMessage)]) == 2
    assert not any(isinstance(p, ToolPart) for m in kept for p in m.parts)
