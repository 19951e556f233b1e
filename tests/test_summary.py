"""`/summary` and `agent-tui summary`: the summary in force, and the person's correction of
it (what the next request carries, what the database keeps, uncompact afterwards)."""

from __future__ import annotations

import asyncio
import io
import json
import threading
from pathlib import Path

import pytest

from agent_tui.context import compaction
from agent_tui.context.summary_view import (
    NO_COMPACTION,
    render_summary,
    save_edit,
    summary_in_force,
)
from agent_tui.context.uncompact import uncompact
from agent_tui.errors import UsageError
from agent_tui.records import AssistantMessage, TextPart, ToolPart
from agent_tui.session.pin_changes import set_pin
from agent_tui.step.messages import COMPACTION_QUESTION
from tests.conftest import MODEL, write_config
from tests.engine_helpers import (
    conversation,
    is_summary_request,
    open_engine,
    preparation_done,
    run_cli,
    text_of,
)
from tests.fake_openai import Call, FakeOpenAI, Gated, Text, ToolCalls

WRITTEN = "FIRST-SUMMARY: the build uses tox."
CORRECTED = "CORRECTED-SUMMARY: the build uses nox, never tox."


async def _compacted(engine, server: FakeOpenAI) -> str:  # type: ignore[no-untyped-def]
    """A session with two turns, compacted by hand: the first question is summarised (and
    restated), both answers and the second question kept verbatim."""
    session = await engine.new_session(Path.cwd())
    await engine.prompt(session.id, "question one")
    await engine.prompt(session.id, "question two")
    await engine.compact(session.id)
    return session.id


async def test_an_edited_summary_is_what_the_next_request_carries(
    configured: FakeOpenAI,
) -> None:
    configured.script(
        Text("answer one"),
        Text("answer two"),
        Text(WRITTEN),
        Text("answer three"),
        Text("answer four"),
        Text("SECOND-SUMMARY"),
        Text("answer five"),
    )
    async with open_engine() as engine:
        session_id = await _compacted(engine, configured)
        view = await summary_in_force(await engine.scope(session_id))
        assert view.compacted and view.text == WRITTEN and not view.edited
        assert view.summary_id is not None

        done = await save_edit(await engine.scope(session_id), view.summary_id, CORRECTED + "\n")
        assert done.changed and done.edited
        await engine.prompt(session_id, "question three")
        sent = conversation(configured.requests[-1])
        assert text_of(sent[0]) == COMPACTION_QUESTION
        assert text_of(sent[1]) == CORRECTED, "the edit replaces the summary"
        assert WRITTEN not in json.dumps(configured.requests[-1]["messages"])
        assert "question one" in text_of(sent[2]), "the person's words are still restated"

        # The database keeps the summariser's text beside the edit.
        export = await engine.ctx.db.export_session(session_id)
        summary = next(
            m for m in export.messages if isinstance(m.info, AssistantMessage) and m.info.summary
        )
        assert [p.text for p in summary.parts if isinstance(p, TextPart)] == [WRITTEN]
        assert summary.info.edited_summary == CORRECTED and summary.info.edited_at

        # Uncompact after the edit: the history before the compaction, neither text.
        await uncompact(await engine.scope(session_id))
        await engine.prompt(session_id, "question four")
        whole = configured.requests[-1]["messages"]
        texts = [text_of(m) for m in conversation(configured.requests[-1])]
        assert texts[:4] == ["question one", "answer one", "question two", "answer two"]
        assert CORRECTED not in json.dumps(whole) and WRITTEN not in json.dumps(whole)

        # Compacting again writes a new summary from the history; the edit stays behind.
        await engine.compact(session_id)
        summariser = configured.requests[-1]
        assert is_summary_request(summariser) and CORRECTED not in json.dumps(summariser)
        await engine.prompt(session_id, "question five")
        sent = conversation(configured.requests[-1])
        assert text_of(sent[1]) == "SECOND-SUMMARY"
        assert CORRECTED not in json.dumps(configured.requests[-1]["messages"])
        again = await summary_in_force(await engine.scope(session_id))
        assert again.text == "SECOND-SUMMARY" and not again.edited


async def test_a_later_compaction_merges_the_edited_summary(configured: FakeOpenAI) -> None:
    configured.script(
        Text("answer one"),
        Text("answer two"),
        Text(WRITTEN),
        Text("answer three"),
        Text("MERGED-SUMMARY"),
    )
    async with open_engine() as engine:
        session_id = await _compacted(engine, configured)
        view = await summary_in_force(await engine.scope(session_id))
        assert view.summary_id is not None
        await save_edit(await engine.scope(session_id), view.summary_id, CORRECTED)
        await engine.prompt(session_id, "question three")
        await engine.compact(session_id)
    summariser = configured.requests[-1]
    assert is_summary_request(summariser)
    assert CORRECTED in json.dumps(summariser["messages"])
    assert WRITTEN not in json.dumps(summariser["messages"])


async def test_an_edit_made_while_the_agent_works_reaches_its_next_step(
    configured: FakeOpenAI,
) -> None:
    gate = threading.Event()
    configured.script(
        Text("answer one"),
        Text("answer two"),
        Text(WRITTEN),
        Gated(ToolCalls([Call("bash", '{"command": "echo working"}')]), gate),
        Text("finished"),
    )
    async with open_engine() as engine:
        session_id = await _compacted(engine, configured)
        view = await summary_in_force(await engine.scope(session_id))
        assert view.summary_id is not None
        turn = asyncio.create_task(engine.prompt(session_id, "do the work"))
        await asyncio.to_thread(configured.wait_for_requests, 4)
        assert engine.is_busy(session_id)
        await save_edit(await engine.scope(session_id), view.summary_id, CORRECTED)
        gate.set()
        await turn
    held, after = configured.requests[3], configured.requests[4]
    assert text_of(conversation(held)[1]) == WRITTEN, "that step was sent before the edit"
    assert text_of(conversation(after)[1]) == CORRECTED, "the next step carries it"


async def test_what_summary_shows_and_reverting_an_edit(configured: FakeOpenAI) -> None:
    configured.script(Text("answer one"), Text("answer two"), Text(WRITTEN), Text("answer three"))
    async with open_engine() as engine:
        session_id = await _compacted(engine, configured)
        await engine.prompt(session_id, "question three")
        view = await summary_in_force(await engine.scope(session_id))
        assert view.restated == ["question one"] and not view.auto
        assert view.tail is not None
        assert (view.tail.steps, view.tail.messages) == (2, 3)
        assert view.tail.tokens > 0 and view.tokens > 0
        assert view.tail.start == "a step of the turn you began with “question one”"
        assert (view.since_messages, view.since_steps) == (2, 1)
        shown = render_summary(view)
        assert WRITTEN in shown and "manual compaction" in shown
        assert "Your words: 1 message, newest first:" in shown and "“question one”" in shown
        assert "Kept verbatim before its boundary: 2 steps (3 messages, about" in shown
        assert "Since the compaction: 2 messages (1 step)." in shown
        assert view.summary_id is not None

        await save_edit(await engine.scope(session_id), view.summary_id, CORRECTED)
        edited = await summary_in_force(await engine.scope(session_id))
        assert edited.edited and edited.text == CORRECTED and edited.original == WRITTEN
        assert "Edited by you" in render_summary(edited)
        same = await save_edit(await engine.scope(session_id), view.summary_id, CORRECTED)
        assert not same.changed
        # The summariser's own text again (as the app's Ctrl+R leaves it): no edit stored.
        back = await save_edit(await engine.scope(session_id), view.summary_id, WRITTEN + "\n")
        assert back.changed and not back.edited
        assert not (await summary_in_force(await engine.scope(session_id))).edited
        await save_edit(await engine.scope(session_id), view.summary_id, CORRECTED)
        reverted = await save_edit(await engine.scope(session_id), view.summary_id, None)
        assert reverted.changed and not reverted.edited
        assert (await summary_in_force(await engine.scope(session_id))).text == WRITTEN


async def test_summary_with_no_compaction_and_refused_edits(configured: FakeOpenAI) -> None:
    configured.script(Text("answer one"), Text("answer two"), Text(WRITTEN))
    async with open_engine() as engine:
        session = await engine.new_session(Path.cwd())
        await engine.prompt(session.id, "question one")
        view = await summary_in_force(await engine.scope(session.id))
        assert not view.compacted and render_summary(view) == NO_COMPACTION
        with pytest.raises(UsageError, match="No compaction yet"):
            await save_edit(await engine.scope(session.id), "msg_none", CORRECTED)

        await engine.prompt(session.id, "question two")
        await engine.compact(session.id)
        view = await summary_in_force(await engine.scope(session.id))
        assert view.summary_id is not None
        with pytest.raises(UsageError, match="empty: nothing was saved"):
            await save_edit(await engine.scope(session.id), view.summary_id, "  \n")
        with pytest.raises(UsageError, match="no longer the one in force"):
            await save_edit(await engine.scope(session.id), "msg_an_older_summary", CORRECTED)
        # A compaction waiting to run would replace the summary: refused until it ends.
        await compaction.create_request(engine.ctx, session.id, auto=False, model=MODEL)
        with pytest.raises(UsageError, match="A compaction is under way"):
            await save_edit(await engine.scope(session.id), view.summary_id, CORRECTED)
        assert not (await summary_in_force(await engine.scope(session.id))).edited


def _cli_session(configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]) -> None:
    configured.script(Text("answer one"), Text("answer two"), Text(WRITTEN), Text("answer three"))
    assert run_cli(capsys, "run", "question one")[0] == 0
    assert run_cli(capsys, "run", "--continue", "question two")[0] == 0


def test_cli_summary_shows_text_and_json(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    _cli_session(configured, capsys)
    code, out, err = run_cli(capsys, "summary", "--continue")
    assert code == 0, err
    assert out.strip() == NO_COMPACTION
    code, out, _ = run_cli(capsys, "summary", "--continue", "--json")
    assert code == 0 and json.loads(out)["compacted"] is False
    code, _, err = run_cli(capsys, "summary", "--continue", "--set-file", "-")
    assert code == 2 and "No compaction yet" in err

    assert run_cli(capsys, "compact", "--continue")[0] == 0
    code, out, err = run_cli(capsys, "summary", "--continue")
    assert code == 0, err
    assert WRITTEN in out and "Your words: 1 message" in out and "Kept verbatim" in out
    code, out, _ = run_cli(capsys, "summary", "--continue", "--json")
    data = json.loads(out)
    assert data["compacted"] and data["text"] == WRITTEN and data["restated"] == ["question one"]
    assert data["tail"]["steps"] == 2 and data["tail"]["messages"] == 3
    assert data["edited"] is False and data["pinned"] == [] and data["ledger"] == ""
    assert "Pinned: nothing" in run_cli(capsys, "summary", "--continue")[1]


def test_cli_summary_set_file_stdin_revert_and_errors(
    configured: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    isolated: Path,
) -> None:
    _cli_session(configured, capsys)
    assert run_cli(capsys, "compact", "--continue")[0] == 0
    (isolated / "fix.md").write_text(CORRECTED + "\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "summary", "--continue", "--set-file", "fix.md")
    assert code == 0, err
    assert out.startswith("Summary edited.") and "written to the cache again once" in out
    code, out, _ = run_cli(capsys, "summary", "--continue", "--json")
    data = json.loads(out)
    assert data["edited"] and data["text"] == CORRECTED and data["original"] == WRITTEN

    assert run_cli(capsys, "run", "--continue", "question three")[0] == 0
    assert text_of(conversation(configured.requests[-1])[1]) == CORRECTED

    monkeypatch.setattr("sys.stdin", io.StringIO("FROM-STDIN summary\n"))
    code, out, err = run_cli(capsys, "summary", "--continue", "--set-file", "-", "--json")
    assert code == 0 and json.loads(out)["edited"], err  # --json: what the edit did
    code, out, _ = run_cli(capsys, "summary", "--continue", "--json")
    assert json.loads(out)["text"] == "FROM-STDIN summary"
    code, out, _ = run_cli(capsys, "summary", "--continue", "--revert")
    assert code == 0 and out.startswith("Summary back to the summariser's text.")
    code, out, _ = run_cli(capsys, "summary", "--continue", "--revert")
    assert code == 0 and out.strip() == "Summary unchanged: nothing was saved."

    code, _, err = run_cli(capsys, "summary", "--continue", "--set-file", "missing.md")
    assert code == 2 and "--set-file missing.md: no such file" in err
    (isolated / "binary.md").write_bytes(b"\xff\xfe\x00bad")
    code, _, err = run_cli(capsys, "summary", "--continue", "--set-file", "binary.md")
    assert code == 2 and "not UTF-8 text" in err
    (isolated / "empty.md").write_text("\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "summary", "--continue", "--set-file", "empty.md")
    assert code == 2 and "empty: nothing was saved" in err
    with pytest.raises(SystemExit) as bad:
        run_cli(capsys, "summary", "--continue", "--edit", "--revert")
    assert bad.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    assert json.loads(run_cli(capsys, "summary", "-c", "--json")[1])["edited"] is False


def test_cli_summary_edit_opens_the_editor(
    configured: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _cli_session(configured, capsys)
    assert run_cli(capsys, "compact", "--continue")[0] == 0
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    code, _, err = run_cli(capsys, "summary", "--continue", "--edit")
    assert code == 2 and "No editor to open: set $EDITOR" in err

    monkeypatch.setenv("EDITOR", "false")  # an editor quit without saving
    code, _, err = run_cli(capsys, "summary", "--continue", "--edit")
    assert code == 1 and "exited with status 1: nothing was saved" in err
    monkeypatch.setenv("EDITOR", "no-such-editor-here --wait")
    code, _, err = run_cli(capsys, "summary", "--continue", "--edit")
    assert code == 1 and "'no-such-editor-here' (from $EDITOR) could not be started" in err

    # A real editor process changes the file it is given ($VISUAL wins over $EDITOR).
    monkeypatch.setenv("VISUAL", "sed -i s/FIRST-SUMMARY/EDITOR-FIX/")
    code, out, err = run_cli(capsys, "summary", "--continue", "--edit")
    assert code == 0 and out.startswith("Summary edited."), err
    code, out, _ = run_cli(capsys, "summary", "--continue", "--json")
    assert json.loads(out)["text"] == "EDITOR-FIX: the build uses tox."
    code, out, _ = run_cli(capsys, "summary", "--continue", "--edit")  # saved unchanged
    assert out.strip() == "Summary unchanged: nothing was saved."


async def test_summary_shows_the_pins_and_the_file_ledger(
    fake_llm: FakeOpenAI, isolated: Path
) -> None:
    write_config(isolated, fake_llm, compaction={"tail_tokens": 0})  # all summarised
    fake_llm.script(
        ToolCalls(
            [Call("bash", '{"command": "echo pinned-output-line > notes.txt; cat notes.txt"}')]
        ),
        Text("wrote notes.txt"),
        Text("answer two"),
        Text(WRITTEN),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "write the notes")
        messages = await engine.ctx.db.all_messages(session.id)
        tool = next(p for m in messages for p in m.parts if isinstance(p, ToolPart))
        await set_pin(await engine.scope(session.id), tool.id, pinned=True)
        await engine.prompt(session.id, "question two")
        await engine.compact(session.id)
        view = await summary_in_force(await engine.scope(session.id))
    assert len(view.pinned) == 1 and view.pinned[0].startswith("the result of bash")
    assert "pinned-output-line" in view.pinned[0] and view.pins_left_out == []
    assert "notes.txt" in view.ledger and "created" in view.ledger
    shown = render_summary(view)
    assert "  Pinned: 1 item:" in shown and view.tail is None
    assert "Kept verbatim: nothing" in shown
    assert "  File ledger (written by agent-tui, not the model):\n    - notes.txt" in shown


async def test_a_preparation_made_before_an_edit_is_not_used(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """A summary prepared in the background read the summary in force: once the person
    corrects that summary, the preparation is stale and the next compaction starts from
    the correction."""
    from tests.test_prepared import Steps, configure

    configure(isolated, fake_llm)
    steps = Steps(2)
    steps.install(isolated, fake_llm)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "first part")
        await engine.compact(session.id)
        view = await summary_in_force(await engine.scope(session.id))
        assert view.summary_id is not None and view.text.startswith("SUMMARY-1")
        steps.steps = steps.made + 17  # past prepare_at, short of the threshold
        await engine.prompt(session.id, "second part")
        await preparation_done(engine.ctx, session.id)
        (early,) = await engine.ctx.db.prepared_summaries(session.id)
        assert early.status == "ready"
        await save_edit(await engine.scope(session.id), view.summary_id, CORRECTED)
        steps.steps = steps.made + 40
        result = await engine.prompt(session.id, "third part")
        assert result is not None and result.compactions >= 1
        rows = {p.id: p for p in await engine.ctx.db.prepared_summaries(session.id)}
    assert rows[early.id].status == "discarded", rows[early.id]
    assert "undone or changed" in rows[early.id].reason
    summariser = next(
        r for r in fake_llm.requests if is_summary_request(r) and CORRECTED in json.dumps(r)
    )
    assert view.text not in json.dumps(summariser["messages"])
