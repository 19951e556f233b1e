"""A stream that ends without a finish reason is an error, never an empty success; an
error the server sends inside a 200 stream is shown (redacted), never swallowed.

Through litellm's real HTTP path against the fake server: `Cut` ends the chunked body
cleanly with no finish reason (what a proxy, a load balancer, or a server whose chat
template fails after `200` leaves), `StreamError` puts an error object in the stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_tui.events import Event, PartUpdated, SessionStatus
from agent_tui.records import TextPart, ToolPart
from agent_tui.step.processor import CUT_OFF_OUTPUT
from tests.conftest import write_config
from tests.engine_helpers import conversation, open_engine, run_cli, text_of
from tests.fake_openai import Call, Cut, FakeOpenAI, StreamError, Text
from tests.tui_helpers import open_app, type_and_send, view_text, wait_for


def latest_export(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert code == 0
    code, out, _ = run_cli(capsys, "export", json.loads(out)[0]["id"])
    assert code == 0
    return json.loads(out)


def assistant_parts(export: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [
        part
        for message in export["messages"]
        if message["info"]["role"] == "assistant"
        for part in message["parts"]
        if part["type"] == kind
    ]


def test_a_cut_stream_is_retried_then_reported_with_the_partial_text_kept(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, retry={"max_attempts": 3, "initial_delay": 0.01})
    fake_llm.script(*[Cut("The answer is forty-two because", after_chunks=3)] * 3)
    code, out, err = run_cli(capsys, "run", "what is the answer?")
    assert code == 1
    assert len(fake_llm.requests) == 3  # retried like a dropped connection
    assert out.startswith("The answer")
    last = err.strip().splitlines()[-1]
    assert last.startswith("agent-tui: The stream from openai/test-model at ")
    assert fake_llm.base_url in last
    assert "ended without a finish reason, after 12 characters of text" in last
    assert "retrying" in err and "kept, marked as cut off" in err

    export = latest_export(capsys)
    (assistant,) = [m for m in export["messages"] if m["info"]["role"] == "assistant"]
    assert assistant["info"]["error"]["kind"] == "stream_cut"
    assert assistant["info"]["finish"] is None  # never an empty success
    texts = [(p["text"], p["ignored"]) for p in assistant_parts(export, "text")]
    # Every attempt's text is kept; the two retried ones are marked, the last is the answer.
    assert texts == [("The answer i", True), ("The answer i", True), ("The answer i", False)]


def test_an_empty_200_stream_is_an_error_not_a_silent_success(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: the server answers 200, sends the role chunk, and ends."""
    write_config(isolated, fake_llm, retry={"max_attempts": 2})
    fake_llm.script(Cut(), Cut(done=True))  # with and without a closing [DONE]
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 1
    assert out == ""
    assert "ended without a finish reason, after no text and no tool call" in err
    assert len(fake_llm.requests) == 2
    export = latest_export(capsys)
    assert export["messages"][-1]["info"]["error"]["kind"] == "stream_cut"


async def test_a_cut_stream_then_a_whole_answer(isolated: Path, configured: FakeOpenAI) -> None:
    configured.script(Cut("Half of it", after_chunks=2), Text("The whole answer."))
    events: list[Event] = []
    async with open_engine() as engine:
        engine.ctx.bus.subscribe(events.append)
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "answer me")
        assert result is not None and result.outcome == "stop", result
        export = await engine.ctx.db.export_session(session.id)
        configured.script(Text("next"))
        await engine.prompt(session.id, "and then?")
    (assistant,) = [m for m in export.messages if m.info.role == "assistant"]
    assert assistant.info.error is None
    texts = [(p.text, p.ignored) for p in assistant.parts if isinstance(p, TextPart)]
    assert texts == [("Half of ", True), ("The whole answer.", False)]
    # The views saw the cut text marked, then the retry's text.
    marked = [e for e in events if isinstance(e, PartUpdated) and getattr(e.part, "ignored", 0)]
    assert marked and marked[0].part.text == "Half of "
    retrying = [e for e in events if isinstance(e, SessionStatus) and e.status == "retrying"]
    assert len(retrying) == 1 and "ended without a finish reason" in (retrying[0].message or "")
    # The model never sees the set-aside text.
    conv = conversation(configured.requests[-1])
    assert [text_of(m) for m in conv] == ["answer me", "The whole answer.", "and then?"]


async def test_tool_calls_of_a_cut_stream_are_never_run(
    isolated: Path, configured: FakeOpenAI
) -> None:
    marker = isolated / "ran.txt"
    call = Call("bash", json.dumps({"command": f"touch {marker}"}), id="call_cut")
    configured.script(Cut("Running it.", after_chunks=3, calls=[call]), Text("Did not run."))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "run it")
        assert result is not None and result.outcome == "stop", result
        export = await engine.ctx.db.export_session(session.id)
    assert not marker.exists()
    (tool,) = [p for m in export.messages for p in m.parts if isinstance(p, ToolPart)]
    assert tool.ignored and tool.state.status == "error" and tool.state.error == CUT_OFF_OUTPUT
    assert len(configured.requests) == 2
    assert configured.requests[1]["messages"] == configured.requests[0]["messages"]


def test_an_error_inside_the_stream_is_shown_redacted(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "sk-local-secret-0123456789abcdef"
    write_config(
        isolated, fake_llm, provider={"openai": {"api_base": fake_llm.base_url, "api_key": secret}}
    )
    fake_llm.script(
        StreamError(
            f"upstream refused key {secret} for this model",
            code=400,
            type="invalid_request_error",
            text="Start",
            after_chunks=2,
        )
    )
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 1
    assert len(fake_llm.requests) == 1  # the server said 400: not worth another attempt
    last = err.strip().splitlines()[-1]
    assert "The provider sent an error inside the stream." in last
    assert "upstream refused key [REDACTED:provider.openai.api_key] for this model" in last
    assert secret not in err + out
    export = latest_export(capsys)
    assert secret not in json.dumps(export)
    assert "upstream refused key" in export["messages"][-1]["info"]["error"]["message"]


def test_an_error_event_inside_the_stream_is_retried_when_the_server_failed(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(StreamError("slot crashed", event=True), Text("fine now"))
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 0, err
    assert "fine now" in out
    assert "The provider sent an error inside the stream." in err and "slot crashed" in err


async def test_the_app_shows_the_cut_stream_on_the_message(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, retry={"max_attempts": 2, "initial_delay": 0.01})
    fake_llm.script(Cut("First try", after_chunks=2), Cut("Second try", after_chunks=2))
    app = await open_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "hello")
        await wait_for(
            pilot, lambda: len(app.query(".error")) and app.chat.status == "idle", "error"
        )
        await wait_for(pilot, lambda: len(app.query(".cut-off")) == 1, "the marked attempt")
        error = str(app.query_one(".error").render())
        assert "Error: The stream from openai/test-model" in error
        assert "ended without a finish reason" in error
        assert "First tr" in str(app.query_one(".cut-off").render())
        assert "cut off" in str(app.query_one(".cut-off").render())
        assert view_text(app) == "Second t"
    await app.db.close()
