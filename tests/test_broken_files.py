"""A broken project file never makes agent-tui unusable (issue 50, item 5): a project's
malformed config file (`agent-tui.json`, Claude Code's settings, `.mcp.json`), agent,
command or skill file is skipped with one line naming it and the error — a notice in the
app and in `run`, listed by /context — and the session runs. The person's own broken
config still stops, naming the file; JSON nested too deeply is that clear error too."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_tui import paths
from agent_tui.config.settings import load_config
from agent_tui.context.breakdown import report as report_of
from agent_tui.events import Event, Notice
from tests.conftest import person_config, write_config
from tests.engine_helpers import open_engine, run_cli
from tests.fake_openai import FakeOpenAI, Text
from tests.process_helpers import DEADLINE, agent_tui

Plant = Callable[[Path], object]


def text(content: str) -> Plant:
    return lambda path: path.write_text(content, encoding="utf-8")


def raw(content: bytes) -> Plant:
    return lambda path: path.write_bytes(content)


def folder(path: Path) -> None:
    path.mkdir()


def link_loop(path: Path) -> None:
    path.symlink_to(path.name)  # a link to itself


NESTED = text('{"mcpServers": ' + "[" * 500 + "]" * 500 + "}")
"""Inside Python's own recursion limit: json reads it, agent-tui's limit refuses it."""

BROKEN: dict[str, tuple[str, Plant, str]] = {
    "settings-not-json": (".claude/settings.json", text('{"hooks": '), "not valid JSON"),
    "settings-wrong-types": (
        ".claude/settings.json",
        text('{"permissions": {"allow": "Bash"}}'),
        '"permissions.allow" must be a list',
    ),
    "settings-hook-wrong-types": (
        ".claude/settings.json",
        text(json.dumps({"hooks": {"Stop": [{"hooks": [{"command": "true", "timeout": "x"}]}]}})),
        "hooks.Stop.0.hooks.0.timeout",
    ),
    "local-settings-binary": (
        ".claude/settings.local.json",
        raw(b"\x89PNG\r\n\x1a\n\x00\xff\xfe"),
        "not UTF-8 text",
    ),
    "local-settings-folder": (".claude/settings.local.json", folder, "Is a directory"),
    "mcp-not-json": (".mcp.json", text("{mcpServers: {}}"), "not valid JSON"),
    "mcp-wrong-types": (".mcp.json", text('{"mcpServers": ["srv"]}'), '"mcpServers" must be'),
    "mcp-server-wrong-types": (
        ".mcp.json",
        text('{"mcpServers": {"bad": {"command": ["not", "a", "string"]}}}'),
        'server "bad"',
    ),
    "mcp-link-loop": (".mcp.json", link_loop, "Too many levels of symbolic links"),
    "mcp-nested-100k": (".mcp.json", text("[" * 100_000), "nested too deeply"),
    "mcp-nested-500": (".mcp.json", NESTED, "nested too deeply"),
    "agent-tui-json-folder": ("agent-tui.json", folder, "Is a directory"),
    "agent-tui-json-not-json": ("agent-tui.json", text("{'max_steps': 3}"), "not valid JSON"),
    "agent-tui-json-wrong-types": ("agent-tui.json", text('{"max_steps": "many"}'), "max_steps"),
    "claude-agent-binary": (
        ".claude/agents/x.md",
        raw(b"---\nname: x\n---\n\x00\x01\x02"),
        "binary",
    ),
    "agent-not-utf8": (
        ".agent-tui/agents/x.md",
        raw("---\ndescription: café\n---\nHi.".encode("latin-1")),
        "not UTF-8 text",
    ),
    "agent-wrong-types": (".agent-tui/agents/x.md", text("---\nmax_steps: many\n---\nHi."), "max"),
    "agent-folder": (".claude/agents/x.md", folder, "a folder"),
    "claude-command-link-loop": (".claude/commands/x.md", link_loop, "Too many levels"),
    "command-binary": (".agent-tui/commands/x.md", raw(b"\x00\x00\x00"), "binary"),
    "claude-skill-folder": (".claude/skills/s/SKILL.md", folder, "a folder"),
    "skill-not-utf8": (".agent-tui/skills/s/SKILL.md", raw(b"---\nname: s\n---\n\xff"), "UTF-8"),
    "claude-agent-not-yaml": (
        ".claude/agents/x.md",
        text("---\nname: x\ntools:\n  - Read\n - Grep\n---\nHi."),
        ": line 5: ",
    ),
    "command-not-yaml": (".claude/commands/x.md", text("---\na: 1\n  b: 2\n---\n"), "line 3"),
    "skill-not-a-mapping": (".claude/skills/s/SKILL.md", text("---\n- a\n---\nHi."), "a list"),
}


def own_provider(project: Path, server: FakeOpenAI) -> None:
    """The test's provider in the person's own config (the project's `agent-tui.json` may
    be the broken file), the project trusted by it."""
    person_config(write_config(project, server))
    (project / "agent-tui.json").unlink()


def plant(project: Path, name: str, make: Plant) -> Path:
    path = project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    make(path)
    return path


def skip_lines(lines: list[str], path: Path) -> list[str]:
    return [line for line in lines if str(path) in line]


@pytest.mark.parametrize("case", list(BROKEN))
async def test_a_broken_project_file_is_skipped_with_one_line_and_the_session_runs(
    isolated: Path, fake_llm: FakeOpenAI, case: str
) -> None:
    name, make, error = BROKEN[case]
    own_provider(isolated, fake_llm)
    path = plant(isolated, name, make)
    fake_llm.script(Text("working anyway"))
    notices: list[str] = []

    def seen(event: Event) -> None:
        if isinstance(event, Notice) and event.level == "warning":
            notices.append(event.message)

    async with open_engine() as engine:
        engine.subscribe(seen)
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "hello")
        scope = await engine.scope(session.id)
        report = await report_of(scope.workspace, scope.directory, await scope.history(), None)
    assert result is not None and result.outcome == "stop", result
    (line,) = skip_lines(notices, path)
    assert error in line and line.endswith("; skipped.") and "\n" not in line, line
    assert f"  {line}" in report.splitlines(), report


def test_the_rest_of_the_project_applies_beside_a_broken_file(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """A broken `.mcp.json` leaves agent-tui.json and Claude Code's settings in force."""
    write_config(isolated, fake_llm, max_steps=7)
    plant(isolated, ".mcp.json", text("{"))
    rules = {"permissions": {"deny": ["Bash(rm:*)"]}}
    plant(isolated, ".claude/settings.json", text(json.dumps(rules)))
    config = load_config()
    assert config.max_steps == 7 and config.permission["bash"]["rm*"] == "deny"  # type: ignore[index]
    assert config.project is not None and len(config.project.skipped) == 1


def test_a_folder_or_a_link_loop_a_project_command_runs_never_stops_the_trust(
    untrusted: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hashing what a trust covers: a hook naming a link loop or `~nobody`, a folder
    where `.mcp.json` is."""
    hooks = {"Stop": [{"hooks": [{"command": "sh scripts/loop.sh ~nobody-here/x"}]}]}
    person_config({**write_config(untrusted, fake_llm), "trusted_projects": []})
    (untrusted / "agent-tui.json").write_text(json.dumps({"hooks": hooks}))
    plant(untrusted, "scripts/loop.sh", link_loop)
    plant(untrusted, ".mcp.json", folder)
    project = load_config().project
    assert project is not None and project.status == "untrusted"
    code, out, _ = run_cli(capsys, "trust", "--yes")
    assert code == 0, out
    assert load_config().project.status == "trusted"  # type: ignore[union-attr]


OWN_BROKEN: dict[str, tuple[Plant, str]] = {
    "not-json": (text('{"model": '), "not valid JSON"),
    "wrong-types": (text('{"max_steps": "many"}'), "max_steps"),
    "hooks-of-the-wrong-shape": (text('{"hooks": {"Stop": [{"hooks": 5}]}}'), "hooks.Stop.0"),
    "folder": (folder, "Is a directory"),
    "link-loop": (link_loop, "Too many levels of symbolic links"),
    "nested-100k": (text("[" * 100_000), "nested too deeply"),
    "nested-500": (text('{"a": ' + "[" * 500 + "]" * 500 + "}"), "nested too deeply"),
}


@pytest.mark.parametrize("case", list(OWN_BROKEN))
def test_your_own_broken_config_still_stops_naming_the_file(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    make, error = OWN_BROKEN[case]
    write_config(isolated, fake_llm)
    own = paths.config_dir() / "config.json"
    own.unlink()
    make(own)
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 1 and str(own) in err and error in err, err
    assert fake_llm.requests == []


@pytest.mark.parametrize("case", ["folder", "nested-100k"])
def test_agent_tui_config_naming_a_broken_file_stops_naming_it(
    isolated: Path,
    fake_llm: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    case: str,
) -> None:
    make, error = OWN_BROKEN[case]
    write_config(isolated, fake_llm)
    explicit = isolated.parent / "explicit.json"
    make(explicit)
    monkeypatch.setenv("AGENT_TUI_CONFIG", str(explicit))
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 1 and str(explicit) in err and error in err, err


@pytest.mark.parametrize("case", ["not-json", "nested-100k"])
def test_your_own_broken_claude_settings_stop_like_your_config(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """~/.claude/settings.json is the person's own: it stops, as their config does."""
    make, error = OWN_BROKEN[case]
    write_config(isolated, fake_llm)
    settings = paths.claude_home() / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    make(settings)
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 1 and str(settings) in err and error in err, err


async def test_the_app_shows_each_skipped_file_as_a_warning(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    from tests.tui_helpers import close, open_app, wait_for

    own_provider(isolated, fake_llm)
    mcp = plant(isolated, ".mcp.json", text("[" * 100_000))
    agent = plant(isolated, ".claude/agents/x.md", raw(b"\x00binary"))
    app = await open_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.loaded.wait()
        said = lambda: [str(n.message) for n in app._notifications]  # noqa: E731
        await wait_for(pilot, lambda: skip_lines(said(), agent), "the agent file's line")
        await wait_for(pilot, lambda: skip_lines(said(), mcp), "the .mcp.json line")
        assert "nested too deeply" in skip_lines(said(), mcp)[0]
        severities = {n.severity for n in app._notifications if str(mcp) in str(n.message)}
        assert severities == {"warning"}
    await close(app)


def test_run_prints_each_skipped_file_once_and_answers(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """A real `agent-tui run` in a project with several broken files: exit 0, the answer,
    and one line on stderr per file."""
    own_provider(isolated, fake_llm)
    broken = [
        plant(isolated, name, make)
        for name, make in (
            ("agent-tui.json", folder),
            (".claude/settings.json", text('{"hooks": [1, 2]}')),
            (".claude/settings.local.json", raw(b"\xff\xfe\x00")),
            (".mcp.json", text("[" * 100_000)),
            (".claude/agents/x.md", raw(b"\x00")),
            (".agent-tui/commands/x.md", link_loop),
            (".claude/skills/s/SKILL.md", folder),
        )
    ]
    fake_llm.script(Text("answered beside the broken files"))
    run = agent_tui(isolated, "run", "hello")
    out, err = (stream.decode() for stream in run.communicate(timeout=DEADLINE))
    assert run.returncode == 0, err
    assert "answered beside the broken files" in out
    assert "Traceback" not in err
    lines = err.splitlines()
    for path in broken:
        (line,) = skip_lines(lines, path)
        assert line.startswith("agent-tui: ") and line.endswith("; skipped."), line
    assert os.path.isdir(isolated / "agent-tui.json")
