"""Provider faults through litellm's real HTTP path: rate limits, 5xx, auth and bad
requests, dropped and malformed streams, overflow that does not go away, a closed port.

Each fault ends either in a retried success or in exit code 1 with one paragraph for the
person, never a traceback, and what was streamed before a failure stays saved."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from agent_tui.events import Event, SessionStatus
from agent_tui.provider.provider_errors import ERROR_TABLE
from tests.conftest import write_config
from tests.engine_helpers import conversation, open_engine, run_cli, text_of
from tests.fake_openai import Drop, Error, FakeOpenAI, Malformed, Text, context_overflow


def latest_export(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert code == 0
    code, out, _ = run_cli(capsys, "export", json.loads(out)[0]["id"])
    assert code == 0
    return json.loads(out)


def assistant_texts(export: dict[str, Any]) -> list[str]:
    return [
        part["text"]
        for message in export["messages"]
        if message["info"]["role"] == "assistant"
        for part in message["parts"]
        if part["type"] == "text"
    ]


def sentence(name: str) -> str:
    return ERROR_TABLE[name].sentence


# ---- retried ----------------------------------------------------------------------------


async def test_rate_limit_is_retried_after_the_retry_after_wait(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, retry={"initial_delay": 0.01, "max_delay": 5})
    fake_llm.script(Error(429, "Rate limit reached for requests", retry_after=0.2), Text("made it"))
    events: list[Event] = []
    async with open_engine() as engine:
        engine.ctx.bus.subscribe(events.append)
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "hello")
        assert result is not None and result.outcome == "stop", result
        export = await engine.ctx.db.export_session(session.id)
    assert len(fake_llm.requests) == 2
    assert fake_llm.requests[1]["messages"] == fake_llm.requests[0]["messages"]
    retrying = [e for e in events if isinstance(e, SessionStatus) and e.status == "retrying"]
    assert len(retrying) == 1
    (status,) = retrying
    assert status.attempt == 2 and status.max_attempts == 5
    assert status.wait == pytest.approx(0.2)  # the server's Retry-After, not the backoff
    assert status.message and sentence("RateLimitError") in status.message
    assert "attempt 2/5" in status.message
    # The status returns to busy after the wait, then idle at the end.
    after = [e.status for e in events if isinstance(e, SessionStatus)]
    assert after[after.index("retrying") + 1] == "busy" and after[-1] == "idle"
    # One assistant message: the failed attempt left nothing behind.
    (assistant,) = [m for m in export.messages if m.info.role == "assistant"]
    assert assistant.info.error is None and assistant.info.finish == "stop"


def test_server_errors_twice_then_success(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Error(500, "upstream boom"), Error(503, "overloaded"), Text("third time"))
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 0, err
    assert "third time" in out
    assert len(configured.requests) == 3
    assert "attempt 2/5" in err and "attempt 3/5" in err
    assert sentence("InternalServerError") in err


def test_drop_before_any_text_is_retried(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Drop(0, "never sent"), Text("after the drop"))
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 0, err
    assert "after the drop" in out and "never sent" not in out
    assert len(configured.requests) == 2


# ---- given up -------------------------------------------------------------------------


def test_persistent_server_errors_stop_after_max_attempts(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, retry={"max_attempts": 3})
    fake_llm.script(*[Error(500, "still broken")] * 3, Text("never reached"))
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 1
    assert len(fake_llm.requests) == 3
    last = err.strip().splitlines()[-1]
    assert last.startswith("agent-tui: " + sentence("InternalServerError")), err
    assert "still broken" in last and "retrying" not in last
    assert "never reached" not in out


def test_rejected_key_is_not_retried(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Error(401, "Invalid authentication credentials"), Text("never"))
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 1
    assert len(configured.requests) == 1
    assert "rejected the API key" in err and "Check the key" in err
    assert "retrying" not in err
    assert "test-key" not in err  # the key itself is never printed


def test_bad_request_is_not_retried(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Error(400, "Invalid value for 'temperature': must be <= 2"), Text("never"))
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 1
    assert len(configured.requests) == 1
    assert sentence("BadRequestError") in err and "temperature" in err
    assert "retrying" not in err


def test_unknown_model_404_is_not_retried(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(
        Error(
            404,
            "The model `test-model` does not exist or you do not have access to it.",
            code="model_not_found",
        ),
        Text("never"),
    )
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 1
    assert len(configured.requests) == 1
    assert "Check the model id" in err


def test_forbidden_is_not_retried(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Error(403, "Project does not have access to model test-model"), Text("x"))
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 1
    assert len(configured.requests) == 1
    assert sentence("PermissionDeniedError") in err


# ---- broken streams -------------------------------------------------------------------


def visible_texts(export: dict[str, Any]) -> list[str]:
    """Assistant text the model sees again: not set aside after a broken attempt."""
    return [
        part["text"]
        for message in export["messages"]
        if message["info"]["role"] == "assistant"
        for part in message["parts"]
        if part["type"] == "text" and not part["ignored"]
    ]


def test_drop_mid_stream_is_retried_and_the_cut_text_set_aside(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Drop(3, "partial text that never ends"), Text("the whole story"))
    code, out, err = run_cli(capsys, "run", "tell me a story")
    assert code == 0, err
    # What arrived before the cut: aiohttp raises a broken body's error before the chunks
    # still in its buffer, so a client busy when the cut comes has fewer of them.
    cut = out.split("\n")[0]
    assert cut and "partial text".startswith(cut) and "the whole story" in out
    assert len(configured.requests) == 2
    assert configured.requests[1]["messages"] == configured.requests[0]["messages"]
    assert "kept, marked as cut off" in err and "attempt 2/" in err

    export = latest_export(capsys)
    (assistant,) = [m for m in export["messages"] if m["info"]["role"] == "assistant"]
    assert assistant["info"]["error"] is None and assistant["info"]["finish"] == "stop"
    texts = [(p["text"], p["ignored"]) for p in assistant["parts"] if p["type"] == "text"]
    assert texts == [(cut, True), ("the whole story", False)]

    code, out, err = run_cli(capsys, "run", "--continue", "go on")
    assert code == 0, err
    conv = conversation(configured.requests[-1])
    assert [text_of(m) for m in conv] == ["tell me a story", "the whole story", "go on"]


def test_drop_mid_stream_every_time_keeps_the_partial_text_and_continue_works(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, retry={"max_attempts": 3})
    fake_llm.script(*[Drop(3, "partial text that never ends")] * 3)
    code, out, err = run_cli(capsys, "run", "tell me a story")
    assert code == 1
    assert out.startswith("part")
    assert len(fake_llm.requests) == 3
    assert sentence("MidStreamFallbackError") in err.strip().splitlines()[-1]

    export = latest_export(capsys)
    kept = assistant_texts(export)  # all kept (what arrived of each: see above)...
    assert len(kept) == 3 and all(t and "partial text".startswith(t) for t in kept)
    assert visible_texts(export) == kept[-1:]  # ...the last one as the answer
    assistant = export["messages"][-1]["info"]
    assert assistant["error"] is not None and assistant["error"]["message"]

    fake_llm.script(Text("continuing the story"))
    code, out, err = run_cli(capsys, "run", "--continue", "go on")
    assert code == 0, err
    assert "continuing the story" in out
    conv = conversation(fake_llm.requests[-1])
    assert [m["role"] for m in conv] == ["user", "assistant", "user"]
    assert text_of(conv[1]) == kept[-1]  # the answer as it arrived
    assert text_of(conv[2]) == "go on"


def test_malformed_sse_after_text_is_retried(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Malformed("half an answer"), Text("clean answer"))
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 0, err
    assert "half an answer" in out and "clean answer" in out
    assert len(configured.requests) == 2
    export = latest_export(capsys)
    assert visible_texts(export) == ["clean answer"]
    assert assistant_texts(export) == ["half an answer", "clean answer"]


def test_malformed_sse_every_time_is_a_clear_error(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, retry={"max_attempts": 2})
    fake_llm.script(Malformed("half an answer"), Malformed("half an answer"))
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("agent-tui: ") and "stream" in last.lower()
    assert len(fake_llm.requests) == 2
    assert visible_texts(latest_export(capsys)) == ["half an answer"]


def test_malformed_sse_before_any_text_is_retried(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, retry={"max_attempts": 2})
    fake_llm.script(Malformed(), Text("clean answer"))
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 0, err
    assert "clean answer" in out and len(fake_llm.requests) == 2


# ---- overflow that compaction cannot cure ----------------------------------------------


def test_overflow_after_compaction_exits_with_the_context_window_message(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Text("hello"), context_overflow(), Text("SUMMARY"), context_overflow())
    assert run_cli(capsys, "run", "small talk")[0] == 0
    code, _, err = run_cli(capsys, "run", "--continue", "the huge question")
    assert code == 1
    assert "context window" in err.strip().splitlines()[-1]
    assert len(configured.requests) == 4  # compaction and one retry, then a clear stop


# ---- nobody listening ------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_refused_is_retried_then_named(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    port = closed_port()
    write_config(
        isolated,
        fake_llm,
        provider={"openai": {"api_base": f"http://127.0.0.1:{port}/v1", "api_key": "k"}},
        retry={"max_attempts": 3},
    )
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 1
    assert "attempt 3/3" in err  # retried
    last = err.strip().splitlines()[-1]
    assert sentence("APIConnectionError") in last, last
    assert "internal error" not in last
