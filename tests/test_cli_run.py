"""`agent-tui run` end to end against the fake OpenAI server through litellm's real path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import write_config
from tests.engine_helpers import run_cli
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls


def latest_session_id(capsys: pytest.CaptureFixture[str]) -> str:
    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert code == 0
    return json.loads(out)[0]["id"]


def export(capsys: pytest.CaptureFixture[str], session_id: str) -> dict:
    code, out, _ = run_cli(capsys, "export", session_id)
    assert code == 0
    return json.loads(out)


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def test_tool_round_trip(configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]) -> None:
    configured.script(
        ToolCalls(
            [Call("bash", json.dumps({"command": "echo hello-from-bash"}))], text="Let me check."
        ),
        Text("All done: the shell said hello-from-bash."),
    )
    code, out, err = run_cli(capsys, "run", "say hello via the shell")
    assert code == 0, err
    assert "Let me check." in out
    assert "All done: the shell said hello-from-bash." in out
    assert "[bash] echo hello-from-bash — completed" in err

    first, second = configured.requests
    assert first["messages"][0]["role"] == "system"
    assert {t["function"]["name"] for t in first["tools"]} >= {
        "bash",
        "read",
        "edit",
        "write",
        "grep",
        "glob",
        "list",
    }
    assert first["messages"][-1]["role"] == "user"
    assistant = [m for m in second["messages"] if m["role"] == "assistant"][-1]
    assert assistant["tool_calls"][0]["function"]["name"] == "bash"
    (result,) = tool_messages(second)
    assert result["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert "hello-from-bash" in result["content"]


def test_every_part_persisted_with_states(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(
        ToolCalls([Call("bash", json.dumps({"command": "echo persisted"}))]),
        Text("Finished.", reasoning="thinking about it"),
    )
    assert run_cli(capsys, "run", "go")[0] == 0
    data = export(capsys, latest_session_id(capsys))
    roles = [m["info"]["role"] for m in data["messages"]]
    assert roles == ["user", "assistant", "assistant"]
    user, step1, step2 = data["messages"]
    assert [p["type"] for p in user["parts"]] == ["text"]
    assert [p["type"] for p in step1["parts"]] == ["step-start", "tool", "step-finish"]
    tool = step1["parts"][1]
    assert tool["state"]["status"] == "completed"
    assert tool["state"]["input"] == {"command": "echo persisted"}
    assert "persisted" in tool["state"]["output"]
    assert tool["state"]["time"]["start"] <= tool["state"]["time"]["end"]
    assert step1["info"]["finish"] == "tool_calls"
    assert step1["parts"][2]["tokens"]["input"] > 0
    types2 = [p["type"] for p in step2["parts"]]
    assert types2 == ["step-start", "reasoning", "text", "step-finish"]
    assert step2["parts"][2]["text"] == "Finished."
    assert step2["parts"][1]["text"] == "thinking about it"
    assert step2["info"]["finish"] == "stop"
    assert step2["info"]["tokens"]["output"] > 0
    assert step2["info"]["context_limit"] == 100_000


def test_continue_carries_history(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Text("The answer is 42."), Text("You asked about the answer."))
    assert run_cli(capsys, "run", "what is the answer?")[0] == 0
    code, out, err = run_cli(capsys, "run", "--continue", "what did I ask?")
    assert code == 0, err
    assert "You asked about the answer." in out
    messages = configured.requests[1]["messages"]
    texts = [(m["role"], json.dumps(m["content"])) for m in messages if m["role"] != "system"]
    assert texts[0][0] == "user" and "what is the answer?" in texts[0][1]
    assert texts[1] == ("assistant", json.dumps("The answer is 42."))
    assert texts[2][0] == "user" and "what did I ask?" in texts[2][1]
    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert len(json.loads(out)) == 1


def test_session_flag_and_model_flag(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Text("one"), Text("two"))
    assert run_cli(capsys, "run", "first")[0] == 0
    session_id = latest_session_id(capsys)
    code, _, err = run_cli(
        capsys, "run", "--session", session_id, "--model", "openai/other-model", "second"
    )
    assert code == 0, err
    assert configured.requests[1]["model"] == "other-model"
    assert len(configured.requests[1]["messages"]) == 1 + 3  # one system message, 3 turns


def test_export_round_trips(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import asyncio

    from agent_tui.records import SessionExport
    from agent_tui.storage.db import Database

    configured.script(ToolCalls([Call("bash", '{"command": "echo x"}')]), Text("done"))
    assert run_cli(capsys, "run", "round trip")[0] == 0
    data = export(capsys, latest_session_id(capsys))
    parsed = SessionExport.model_validate(data)
    assert len(parsed.messages) == 3

    async def reimport() -> SessionExport:
        db = await Database.open(tmp_path / "other.db")
        try:
            await db.import_session(parsed)
            return await db.export_session(parsed.session.id)
        finally:
            await db.close()

    again = asyncio.run(reimport())
    assert again.model_dump() == parsed.model_dump()


def test_truncation_saves_full_output(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, truncation={"max_lines": 50})
    fake_llm.script(ToolCalls([Call("bash", '{"command": "seq 1 500"}')]), Text("seen"))
    code, _, err = run_cli(capsys, "run", "count")
    assert code == 0, err
    assert "truncated, full output:" in err
    (result,) = tool_messages(fake_llm.requests[1])
    content = result["content"]
    assert "Full output saved to:" in content
    assert "500" not in content.split("Full output saved to:")[0].splitlines()[:50]
    saved = Path(content.split("Full output saved to:")[1].split()[0])
    assert saved.is_file()
    assert saved.read_text().split() == [str(i) for i in range(1, 501)]
    assert str(saved).startswith(str(isolated.parent / "data"))


def test_denied_tool_reaches_model_as_error(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, permission={"bash": "deny"})
    fake_llm.script(
        ToolCalls([Call("bash", '{"command": "rm -rf /tmp/nothing"}')]), Text("I was not allowed.")
    )
    code, out, err = run_cli(capsys, "run", "delete things")
    assert code == 0, err
    assert "I was not allowed." in out
    assert "[bash] rm -rf /tmp/nothing — error" in err
    (result,) = tool_messages(fake_llm.requests[1])
    assert "denied" in result["content"].lower()
    assert "permission.bash" in result["content"]


def test_ask_permission_is_a_refusal_that_says_how_to_allow(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, permission={"bash": "ask"})
    fake_llm.script(ToolCalls([Call("bash", '{"command": "echo hi"}')]), Text("ok"))
    code, _, err = run_cli(capsys, "run", "try bash")
    assert code == 0, err
    (result,) = tool_messages(fake_llm.requests[1])
    assert "--allow bash" in result["content"]
    fake_llm.script(ToolCalls([Call("bash", '{"command": "echo allowed-now"}')]), Text("ok"))
    code, _, err = run_cli(capsys, "run", "--allow", "bash", "try again")
    assert code == 0, err
    (result,) = tool_messages(fake_llm.requests[3])
    assert "allowed-now" in result["content"]


def test_invalid_tool_arguments_reach_model_as_errors(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(
        ToolCalls([Call("read", '{"offset": "not a number"}'), Call("bash", '{"command": ')]),
        Text("Let me fix my arguments."),
    )
    code, out, err = run_cli(capsys, "run", "read something")
    assert code == 0, err
    assert "Let me fix my arguments." in out
    read_result, bash_result = tool_messages(configured.requests[1])
    assert "Invalid arguments for tool read" in read_result["content"]
    assert "file_path" in read_result["content"]
    assert "bash" in bash_result["content"] and "JSON" in bash_result["content"]


def test_json_format_prints_one_event_per_line(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Text("streamed as json"))
    code, out, _ = run_cli(capsys, "run", "--format", "json", "hi")
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    deltas = "".join(
        e.get("delta") or ""
        for e in events
        if e["type"] == "part.updated"
        and e["part"]["type"] == "text"
        and e["part"].get("synthetic") is False
    )
    assert "streamed as json" in deltas
    assert {"message.updated", "session.status"} <= {e["type"] for e in events}
