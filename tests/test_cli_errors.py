"""Bad input gives a clear message and exit code, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_tui import paths
from agent_tui.cli import main
from tests.conftest import write_config
from tests.engine_helpers import run_cli
from tests.fake_openai import FakeOpenAI, Text


def _own_config(text: str) -> Path:
    """The person's own config file (a project's broken file is skipped instead:
    tests/test_broken_files.py)."""
    path = paths.config_dir() / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_malformed_config_names_file_and_position(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _own_config('{"model": "openai/x",\n  "oops" }')
    code, _, err = run_cli(capsys, "run", "hi")
    assert code == 1
    assert str(path) in err
    assert "not valid JSON" in err and "line 2" in err


def test_invalid_field_is_named(isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _own_config(
        json.dumps({"compaction": {"prune_protect": "lots"}, "permission": {"bash": "sometimes"}})
    )
    code, _, err = run_cli(capsys, "sessions")
    assert code == 1
    assert "compaction.prune_protect" in err
    assert "permission.bash" in err and "'allow', 'ask' or 'deny'" in err


def test_unknown_key_lists_valid_keys(isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _own_config(json.dumps({"compaction": {"atuo": False}}))
    code, _, err = run_cli(capsys, "sessions")
    assert code == 1
    assert "compaction.atuo: unknown key" in err and "auto" in err


def test_missing_explicit_config(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_TUI_CONFIG", str(isolated / "nowhere.json"))
    code, _, err = run_cli(capsys, "sessions")
    assert code == 1
    assert "AGENT_TUI_CONFIG" in err and "nowhere.json" in err


def test_env_reference_to_unset_variable(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(
        isolated,
        fake_llm,
        provider={"openai": {"api_base": fake_llm.base_url, "api_key": "{env:MY_TEST_KEY}"}},
    )
    code, _, err = run_cli(capsys, "run", "hi")
    assert code == 1
    assert "provider.openai.api_key" in err and "MY_TEST_KEY" in err


def test_env_reference_is_read(
    isolated: Path,
    fake_llm: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MY_TEST_KEY", "sk-from-env")
    write_config(
        isolated,
        fake_llm,
        provider={"openai": {"api_base": fake_llm.base_url, "api_key": "{env:MY_TEST_KEY}"}},
    )
    fake_llm.script(Text("hello"))
    code, out, _ = run_cli(capsys, "run", "hi")
    assert code == 0 and "hello" in out
    assert fake_llm.headers[0]["authorization"] == "Bearer sk-from-env"


def test_unknown_model_works_with_a_note(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, model="openai/never-heard-of-it", models={})
    fake_llm.script(Text("still works"))
    code, out, err = run_cli(capsys, "run", "hi")
    assert code == 0, err
    assert "still works" in out
    assert "context window of openai/never-heard-of-it is unknown" in err
    assert 'models."openai/never-heard-of-it".limit.context' in err
    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert json.loads(out)[0]["context"]["percent"] is None


def test_missing_api_key_names_the_variable(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (isolated / "agent-tui.json").write_text(json.dumps({"model": "anthropic/claude-sonnet-4-5"}))
    code, _, err = run_cli(capsys, "run", "hi")
    assert code == 1
    assert "ANTHROPIC_API_KEY" in err and "anthropic" in err
    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert json.loads(out) == []  # nothing half-saved


def test_unknown_session_id(configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "run", "--session", "ses_doesnotexist", "hi")
    assert code == 1
    assert "ses_doesnotexist" in err and "agent-tui sessions" in err
    code, _, err = run_cli(capsys, "export", "ses_doesnotexist")
    assert code == 1 and "ses_doesnotexist" in err


def test_continue_without_a_session(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "run", "--continue", "hi")
    assert code == 1
    assert "No session to continue" in err


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "--format", "xml", "hi"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'xml'" in err and "--help" in err
    with pytest.raises(SystemExit) as exc:
        main(["frobnicate"])
    assert exc.value.code == 2


def test_empty_message(configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "run", "   ")
    assert code == 2 and "empty" in err


def test_provider_auth_error_is_explained(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.fake_openai import Error

    configured.script(Error(401, "Incorrect API key provided"))
    code, _, err = run_cli(capsys, "run", "hi")
    assert code == 1
    assert "rejected the API key" in err
    assert len(configured.requests) == 1  # authentication errors are not retried


def test_a_skipped_project_file_is_named_before_no_provider(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The project's file named the model but is broken: skipped, and the person reads
    why before "No model provider is set up"."""
    from tests.conftest import person_config

    person_config({})  # trusts the test's folders, as the person's own repositories
    (isolated / "agent-tui.json").write_text(json.dumps({"model": "openai/x", "bogus": 1}))
    code, _, err = run_cli(capsys, "run", "hi")
    assert code == 1
    first, second = err.splitlines()[:2]
    assert str(isolated / "agent-tui.json") in first and "bogus" in first and "skipped" in first
    assert "No model provider is set up" in second
