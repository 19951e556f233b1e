"""Front matter read by a YAML library (issue 51, item 3): the agents, commands and skills
real Claude Code projects ship — folded and literal descriptions, plain values continued
on the next line, `tools` as a comma string or a list — load as Claude Code loads them;
a header that is not YAML is one line naming the file and its line, and the file is
skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_tui.config.settings import load_config
from agent_tui.context.breakdown import report as report_of
from agent_tui.events import Event, Notice
from agent_tui.project.agents import load_agents
from agent_tui.project.custom_commands import load_custom_commands
from agent_tui.project.front_matter import FrontMatterError, parse_front_matter, words
from agent_tui.project.skills import load_skills
from tests.engine_helpers import open_engine
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls

# A large Java project's `.claude/agents/`, in the shapes such projects ship.
REVIEWER = """---
name: code-reviewer
description: >
  Reviews Java changes for bugs, thread-safety and API breaks.
  Use after any change to src/main.
tools: Read, Grep, Glob
model: sonnet
color: blue
---
You review Java code. Cite path:line for every finding.
"""
TEST_WRITER = """---
name: test-writer
description: Writes JUnit 5 tests for new or changed classes, mirroring
  the package layout under src/test/java.
tools: [Read, Write, Edit, Bash]
model: inherit
---
You write JUnit 5 tests.
"""
ARCHITECT = """---
name: architect
description: |
  Use this agent for design questions across modules. Examples:
  <example>
  Context: The user adds a new storage backend.
  user: "Where should the S3 client live?"
  </example>
tools: Read, Grep, Glob
---
You answer design questions with the module map in mind.
"""
DEBUGGER = """---
name: debugger
description: Use this agent when a build fails: it reads the Gradle output and finds the cause
tools: Read, Bash, Grep
---
You find why builds fail.
"""
AGENTS = {
    "reviewer.md": REVIEWER,
    "test-writer.md": TEST_WRITER,
    "architect.md": ARCHITECT,
    "debugger.md": DEBUGGER,
}
BAD_INDENT = """---
name: broken
description: Has a list that is not one
tools:
  - Read
 - Grep
---
Body.
"""
"""Not YAML: the list's second item is indented less than its first (line 6)."""


def claude_agents(project: Path) -> Path:
    folder = project / ".claude" / "agents"
    folder.mkdir(parents=True)
    for name, text in AGENTS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_the_four_agents_of_a_real_project_load_with_their_descriptions(
    configured: FakeOpenAI, isolated: Path
) -> None:
    claude_agents(isolated)
    catalog = load_agents(load_config(), isolated)
    assert not [w for w in catalog.warnings if "skipped" in w], catalog.warnings
    reviewer, writer, architect, debugger = (
        catalog.get(name) for name in ("code-reviewer", "test-writer", "architect", "debugger")
    )
    assert reviewer is not None and writer is not None
    assert architect is not None and debugger is not None
    assert reviewer.description == (
        "Reviews Java changes for bugs, thread-safety and API breaks. Use after any change to "
        "src/main."
    )
    assert writer.description == (
        "Writes JUnit 5 tests for new or changed classes, mirroring the package layout under "
        "src/test/java."
    )
    assert architect.description.splitlines()[1:3] == [
        "<example>",
        "Context: The user adds a new storage backend.",
    ]
    assert debugger.description.startswith("Use this agent when a build fails: it reads")
    assert reviewer.tool_enabled("grep", False) and not reviewer.tool_enabled("bash", True)
    assert writer.tool_enabled("edit", False) and writer.tool_enabled("bash", False), "a list"
    assert not writer.tool_enabled("webfetch", True)
    assert debugger.tool_enabled("bash", False) and not debugger.tool_enabled("edit", True)
    assert any("'sonnet'" in w for w in catalog.warnings), "sonnet needs Anthropic"


async def test_the_task_tool_runs_the_code_reviewer_of_that_project(
    configured: FakeOpenAI, isolated: Path
) -> None:
    claude_agents(isolated)
    (isolated / ".claude" / "agents" / "broken.md").write_text(BAD_INDENT, encoding="utf-8")
    task = {"description": "Review", "prompt": "Review Foo.java", "agent": "code-reviewer"}
    configured.script(
        ToolCalls([Call("task", json.dumps(task))]), Text("Foo.java:3 leaks"), Text("reviewed")
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "review my change")
    assert result is not None and result.outcome == "stop", result
    first, child, last = configured.requests
    (listing,) = [t for t in first["tools"] if t["function"]["name"] == "task"]
    offered = listing["function"]["description"]
    for name in ("code-reviewer", "test-writer", "architect", "debugger"):
        assert f"- {name}: " in offered, name
    assert "- code-reviewer: Reviews Java changes for bugs" in offered
    assert "- broken" not in offered
    assert "Cite path:line for every finding." in json.dumps(child["messages"])
    assert {t["function"]["name"] for t in child["tools"]} == {"read", "grep", "glob", "list"}
    assert "Foo.java:3 leaks" in json.dumps(last["messages"])


async def test_invalid_yaml_is_one_line_naming_the_file_and_its_line(
    configured: FakeOpenAI, isolated: Path
) -> None:
    path = claude_agents(isolated) / "broken.md"
    path.write_text(BAD_INDENT, encoding="utf-8")
    notices: list[str] = []

    def seen(event: Event) -> None:
        if isinstance(event, Notice) and event.level == "warning":
            notices.append(event.message)

    configured.script(Text("fine"))
    async with open_engine() as engine:
        engine.subscribe(seen)
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "hello")
        scope = await engine.scope(session.id)
        report = await report_of(scope.workspace, scope.directory, await scope.history(), None)
    (line,) = [n for n in notices if "broken.md" in n]
    assert line.startswith(f"Agent file {path}: line 6: ") and line.endswith("; skipped.")
    assert "\n" not in line
    assert f"  {line}" in report.splitlines(), report
    read = f"Claude Code's {path.parent} read: architect, code-reviewer, debugger, test-writer."
    assert read in report.splitlines(), "the skipped file is not among those read"


@pytest.mark.parametrize(
    ("header", "line", "problem"),
    [
        ("a: 1\n  b: 2", 3, "mapping values are not allowed"),
        ('description: "never closed', 2, "end of stream"),
        ("tools:\n  - Read\n bad: x", 4, ""),
        ("- just\n- a list", 2, "is a list, not `key: value` lines"),
        ("one sentence", 2, "is a single value"),
        ("a: &x [1]\nb:\n  - *x", 4, "aliases"),
        ("a: b\nc: \x07", 3, "control characters"),
    ],
)
def test_each_broken_header_names_its_line(header: str, line: int, problem: str) -> None:
    with pytest.raises(FrontMatterError) as raised:
        parse_front_matter(f"---\n{header}\n---\nbody\n")
    message = str(raised.value)
    assert message.startswith(f"line {line}: ") and problem in message and "\n" not in message


def test_what_claude_code_reads_by_quoting_a_value_is_read() -> None:
    """Claude Code reads a header a second time with its values quoted: these are not
    YAML, but its projects ship them and they work there."""
    meta, body = parse_front_matter(
        "---\nargument-hint: [module] [--fail-fast]\npaths: **/*.java\n"
        "description: Use it when: the build fails\n---\nRun.\n"
    )
    assert meta == {
        "argument-hint": "[module] [--fail-fast]",
        "paths": "**/*.java",
        "description": "Use it when: the build fails",
    }
    assert body == "Run."
    assert parse_front_matter("no header\n") == ({}, "no header\n")
    assert parse_front_matter("---\n---\nbody") == ({}, "body")
    assert parse_front_matter("---\n# only a comment\n---\nbody") == ({}, "body")


def test_lists_are_read_either_way() -> None:
    assert words("Read, Grep, Glob") == ("Read", "Grep", "Glob")
    assert words(["Read", "Grep"]) == ("Read", "Grep")
    assert words("Bash(git add:*), Bash(git status:*)") == ("Bash(git add:*)", "Bash(git status:*)")
    assert words("src/**/*.{ts,tsx}, lib/**") == ("src/**/*.{ts,tsx}", "lib/**")
    assert words(None) == () and words("") == ()


def test_commands_and_skills_read_yaml_too(isolated: Path) -> None:
    commands = isolated / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "run-tests.md").write_text(
        "---\ndescription: >\n  Run one module's tests\n  with Maven.\nargument-hint: [module]\n"
        "allowed-tools: [Bash(mvn test:*), Read]\nmodel: haiku\n---\nRun the tests of $1.\n",
        encoding="utf-8",
    )
    (commands / "lint.md").write_text(
        "---\nDescription: Lint\nallowed-tools: Bash(mvn checkstyle:check), Bash(git diff:*)\n"
        "---\nLint.\n",
        encoding="utf-8",
    )
    (commands / "bad.md").write_text("---\na: 1\n  b: 2\n---\nBad.\n", encoding="utf-8")
    skill = isolated / ".claude" / "skills" / "release"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: |\n  Writes release notes\n  from git log.\n"
        "---\nGo.",
        encoding="utf-8",
    )
    loaded = load_custom_commands(isolated)
    run = loaded.commands["run-tests"]
    assert run.description == "Run one module's tests with Maven."
    assert run.hint == "[module]" and run.model == "haiku"
    assert run.allowed == ("Bash(mvn test:*)", "Read")
    lint = loaded.commands["lint"]
    assert lint.description == "Lint", "keys in any case, as before"
    assert lint.allowed == ("Bash(mvn checkstyle:check)", "Bash(git diff:*)")
    assert "bad" not in loaded.commands
    (line,) = loaded.skipped
    assert line == f"Command file {commands / 'bad.md'}: line 3: " + line.split(": ", 2)[2]
    assert "mapping values" in line and line.endswith("; skipped.")
    skills = load_skills(isolated)
    assert skills["release-notes"].description == "Writes release notes from git log."
