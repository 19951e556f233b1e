"""Custom slash commands from Markdown files: arguments, scopes, built-in names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_tui.command.catalog import builtin_names
from agent_tui.project.custom_commands import load_custom_commands
from agent_tui.project.front_matter import parse_front_matter
from tests.engine_helpers import run_cli, text_of
from tests.fake_openai import FakeOpenAI, Text


def user_dir() -> Path:
    folder = Path(os.environ["AGENT_TUI_CONFIG_DIR"]) / "commands"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def project_dir(project: Path) -> Path:
    folder = project / ".agent-tui" / "commands"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_arguments_are_substituted(isolated: Path) -> None:
    (project_dir(isolated) / "review.md").write_text(
        "---\ndescription: Review a file\nmodel: openai/other\n---\n"
        "Review $1 for $2 issues. All: $ARGUMENTS\n"
    )
    loaded = load_custom_commands(isolated)
    command = loaded.commands["review"]
    assert command.description == "Review a file" and command.model == "openai/other"
    assert command.expand('src/app.py "security bugs"') == (
        'Review src/app.py for security bugs issues. All: src/app.py "security bugs"'
    )
    assert command.expand("") == "Review  for  issues. All:"


def test_project_overrides_user_and_builtins_are_not_shadowed(isolated: Path) -> None:
    (user_dir() / "fix.md").write_text("user fix")
    (user_dir() / "only-user.md").write_text("mine")
    (project_dir(isolated) / "fix.md").write_text("project fix")
    (project_dir(isolated) / "compact.md").write_text("not allowed")
    loaded = load_custom_commands(isolated, builtin_names())
    assert loaded.commands["fix"].body == "project fix"
    assert loaded.commands["fix"].scope == "project"
    assert loaded.commands["only-user"].scope == "user"
    assert "compact" not in loaded.commands
    warning = loaded.warning()
    assert warning is not None and "compact.md" in warning


def test_front_matter_is_optional() -> None:
    assert parse_front_matter("just text\n") == ({}, "just text\n")
    assert parse_front_matter("---\nnot closed\n") == ({}, "---\nnot closed\n")


def test_run_expands_a_custom_command(
    configured: FakeOpenAI, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project_dir(isolated) / "greet.md").write_text("Say hello to $1 ($ARGUMENTS).")
    configured.script(Text("Hello."))
    code, _, err = run_cli(capsys, "run", "/greet Ada Lovelace")
    assert code == 0, err
    last = [m for m in configured.requests[-1]["messages"] if m["role"] == "user"][-1]
    assert text_of(last) == "Say hello to Ada (Ada Lovelace)."
