"""`agent-tui compact`, `agent-tui context`, context usage in `sessions --json`, config keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_tui.config.layers import strip_comments as _strip_comments
from agent_tui.config.settings import Config
from tests.conftest import MODEL, write_config
from tests.engine_helpers import is_summary_request, run_cli
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls, Usage


def sessions(capsys: pytest.CaptureFixture[str]) -> list[dict]:
    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert code == 0
    return json.loads(out)


def test_context_usage_and_compact_command(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(
        Text(
            "a long answer " * 50,
            usage=Usage(
                prompt_tokens=30_000,
                completion_tokens=2_000,
                cached_tokens=10_000,
                reasoning_tokens=500,
            ),
        ),
        Text("CLI-SUMMARY", usage=Usage(prompt_tokens=31_000, completion_tokens=100)),
    )
    assert run_cli(capsys, "run", "explain everything")[0] == 0
    (row,) = sessions(capsys)
    # input 20,000 uncached + cache.read 10,000 + output 1,500 + reasoning 500 = 32,000
    assert row["context"]["tokens"] == 32_000
    assert row["context"]["percent"] == pytest.approx(32.0)
    assert row["context"]["limit"] == 100_000
    assert row["context"]["threshold"] == 96_000
    assert row["messages"] == 2 and row["compactions"] == 0

    code, out, err = run_cli(capsys, "compact", "--continue", "focus", "on", "tests")
    assert code == 0, err
    assert "CLI-SUMMARY" in out
    assert is_summary_request(configured.requests[1])
    assert "focus on tests" in json.dumps(configured.requests[1]["messages"][-1])
    (row,) = sessions(capsys)
    assert row["compactions"] == 1
    assert row["context"]["percent"] < 32.0  # the summary is what remains


def test_sessions_json_and_context_agree_on_the_threshold_and_a_fork_names_its_origin(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, compaction={"threshold": 0.5})
    fake_llm.script(Text("an answer", usage=Usage(prompt_tokens=3_000, completion_tokens=10)))
    assert run_cli(capsys, "run", "go")[0] == 0
    (row,) = sessions(capsys)
    half = row["context"]["threshold"]
    assert half == 48_000, row["context"]  # half of 96,000 usable, as `context` says
    code, out, _ = run_cli(capsys, "context", "--continue")  # as every session command
    assert code == 0 and f"{half:,}" in out, out
    assert row["forked_from"] is None
    code, forked, _ = run_cli(capsys, "fork", "--continue")
    assert code == 0
    by_id = {r["id"]: r for r in sessions(capsys)}
    assert by_id[forked.strip()]["forked_from"] == row["id"]


def test_compact_without_session(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "compact")
    assert code == 1 and "No session to continue" in err


def test_context_breakdown(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, compaction={"prune_protect": 0, "prune_minimum": 10})
    for turn in range(3):
        fake_llm.script(
            ToolCalls([Call("bash", json.dumps({"command": f"seq 1 {300 + turn}"}))]),
            Text(f"answer {turn}", usage=Usage(5_000, 100)),
        )
        assert run_cli(capsys, "run", *(["--continue"] if turn else []), f"question {turn}")[0] == 0
    code, out, err = run_cli(capsys, "context")
    assert code == 0, err
    for label in (
        "System prompt",
        "Tool definitions",
        "User text",
        "Assistant text",
        "Tool outputs",
        "Pruned outputs",
        "Summary",
        "Total",
    ):
        assert label in out
    assert "Automatic compaction fires when a step uses more than 96,000" in out
    assert "Pruning saves about" in out  # turn 0's output was pruned
    assert MODEL in out


def test_config_example_lists_every_key_with_its_default() -> None:
    example = json.loads((Path(__file__).parent.parent / "config.example.json").read_text())
    stripped = _strip_comments(example)
    config = Config.model_validate(stripped)  # valid as a config file
    defaults = Config().model_dump(exclude={"provider", "models", "permission", "sources"})
    shown = config.model_dump(exclude={"provider", "models", "permission", "sources"})
    assert shown == defaults

    def keys(model: type, prefix: str = "") -> set[str]:
        out = set()
        for name, field in model.model_fields.items():
            if field.exclude:
                continue
            out.add(prefix + name)
            ann = field.annotation
            if isinstance(ann, type) and hasattr(ann, "model_fields"):
                out |= keys(ann, prefix + name + ".")
        return out

    def present(data: dict, prefix: str = "") -> set[str]:
        out = set()
        for key, value in data.items():
            out.add(prefix + key)
            if isinstance(value, dict) and key not in ("provider", "models", "permission"):
                out |= present(value, prefix + key + ".")
        return out

    assert keys(Config) <= present(stripped)
    for key in keys(Config):  # each key and section has a one-line explanation beside it
        *parents, leaf = key.split(".")
        container = example
        for parent in parents:
            container = container[parent]
        assert f"_{leaf}" in container, f"config.example.json: no _{leaf} beside {key}"
