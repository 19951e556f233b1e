"""The person sees what a copied project brought (issue 51, item 4): the app completes the
project's Claude Code commands with their `argument-hint`, also when `/ru` was typed
before they were read; the trust question and `/context` say the same of `.claude/`,
and a file skipped as broken is not among what was read."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from textual.widgets import Static

from agent_tui.command import catalog
from agent_tui.context.breakdown import report as report_of
from agent_tui.workspace.describe import describe
from tests.conftest import cloned_project
from tests.engine_helpers import open_engine
from tests.fake_openai import FakeOpenAI, Text
from tests.tui_helpers import open_app, wait_for

RUN_TESTS = """---
description: Run one module's tests with Maven
argument-hint: [module] [--fail-fast]
allowed-tools: Bash(mvn test:*)
---
Run the tests of $1 and summarise the failures.
"""
SHOWN = "/run-tests [module] [--fail-fast] — Run one module's tests with Maven"


def run_tests_command(project: Path) -> None:
    folder = project / ".claude" / "commands"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run-tests.md").write_text(RUN_TESTS, encoding="utf-8")


def completions(app: object) -> str:
    """The command hints under the prompt ("" before any was shown: not mounted)."""
    found = app.query("#completions")  # type: ignore[attr-defined]
    return str(found.first(Static).render()) if found else ""


async def test_typing_slash_ru_offers_run_tests_with_its_hint(
    configured: FakeOpenAI, isolated: Path
) -> None:
    run_tests_command(isolated)
    app = await open_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await app.loaded.wait()
        await pilot.press("/", "r", "u")
        await wait_for(pilot, lambda: SHOWN in completions(app), "the completion")
        await pilot.press("tab")
        assert app.prompt.text == "/run-tests "
    await app.db.close()


async def test_ru_typed_before_the_commands_were_read_offers_them_once_they_are(
    configured: FakeOpenAI, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_tests_command(isolated)
    read = catalog.customs
    held = threading.Event()

    def customs_held(directory: Path) -> object:
        held.wait(timeout=30)
        return read(directory)

    monkeypatch.setattr(catalog, "customs", customs_held)
    app = await open_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("/", "r", "u")
        await wait_for(pilot, lambda: app.prompt.text == "/ru", "the keys typed")
        assert "/run-tests" not in completions(app)
        held.set()
        await wait_for(pilot, lambda: SHOWN in completions(app), "the completion, unasked")
    await app.db.close()


BROKEN_AGENT = "---\nname: broken\ntools:\n  - Read\n - Grep\n---\nBody.\n"
REVIEWER = "---\nname: code-reviewer\ndescription: Reviews\ntools: Read, Grep\n---\nReview.\n"


async def test_the_trust_question_and_context_agree_on_what_came_from_claude(
    untrusted: Path, fake_llm: FakeOpenAI
) -> None:
    cloned_project(untrusted, fake_llm)
    run_tests_command(untrusted)
    agents = untrusted / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(REVIEWER, encoding="utf-8")
    (agents / "broken.md").write_text(BROKEN_AGENT, encoding="utf-8")
    skill = untrusted / ".claude" / "skills" / "notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: release-notes\n---\nWrite notes.", "utf-8")
    (untrusted / ".claude" / "settings.json").write_text('{"permissions": {"allow": ["Read"]}}')
    fake_llm.script(Text("fine"))
    async with open_engine() as engine:
        session = await engine.new_session(untrusted)
        question = describe(engine.workspace(untrusted))
        scope = await engine.scope(session.id)
        report = await report_of(scope.workspace, scope.directory, await scope.history(), None)
    claude = untrusted / ".claude"
    brought = [
        f"Claude Code's {claude / 'settings.json'} read: permission rules for glob, grep, list, "
        "read (4).",
        f"Claude Code's {claude / 'commands'} read: run-tests.",
        f"Claude Code's {claude / 'agents'} read: code-reviewer.",
        f"Claude Code's {claude / 'skills'} read: release-notes.",
    ]
    asked = question.splitlines()
    assert "What it brings in Claude Code's files:" in asked, question
    assert [line.strip() for line in asked if line.strip() in brought] == brought
    shown = report.splitlines()
    assert [line for line in shown if line in brought] == brought, report
    assert "agents.code-reviewer.tools" in question and "agents.code-reviewer.tools" in report
    (skipped,) = [line for line in shown if "broken.md" in line]
    assert skipped.endswith("; skipped.") and "line 5" in skipped
