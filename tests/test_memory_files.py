"""Claude Code's memory files (issue 51, item 2): CLAUDE.md, .claude/CLAUDE.md,
CLAUDE.local.md, `.claude/rules/**/*.md` (with `paths:` globs, read in when the model
first works on a matching file), ~/.claude/CLAUDE.md and ~/.claude/rules, and `@path`
imports (5 hops, cycles once, never a secret, the project's own files until trusted);
/context lists each file and what it brought, also before a first message."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent_tui.config.settings import Config
from agent_tui.context.breakdown import report as report_of
from agent_tui.project.memory import expand_braces, import_references, matches, rule_globs
from agent_tui.step.system import build_system
from tests.conftest import person_config, write_config
from tests.engine_helpers import open_engine, run_cli
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls

TEXTS = {
    "CLAUDE.md": "PROJECT-MEMORY",
    "docs/conventions.md": "CONVENTIONS-TEXT",
    "docs/more/style.md": "STYLE-TEXT",
    ".claude/CLAUDE.md": "DOT-CLAUDE-MEMORY",
    "CLAUDE.local.md": "LOCAL-MEMORY",
    ".claude/rules/general/always.md": "ALWAYS-RULE",
    "USER:CLAUDE.md": "USER-MEMORY",
    "USER:rules/x.md": "USER-RULE",
}
API_RULE = "API-RULE-TEXT"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def claude_home() -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"])


def fixture_project(project: Path) -> None:
    """The shapes of Claude Code's documentation: imports two levels deep (and back: a
    cycle), references in code that are not imports, a scoped and an unscoped rule."""
    write(
        project / "CLAUDE.md",
        "PROJECT-MEMORY\nSee @docs/conventions.md for the conventions.\n\n"
        "```\n@docs/in-block.md\n```\n\nNot this: `@docs/in-span.md`, nor me@example.com.\n",
    )
    write(project / "docs" / "conventions.md", "CONVENTIONS-TEXT\n- style: @more/style.md\n")
    write(project / "docs" / "more" / "style.md", "STYLE-TEXT\nBack: @../conventions.md @CYCLE\n")
    write(project / "docs" / "in-block.md", "IN-CODE-BLOCK")
    write(project / "docs" / "in-span.md", "IN-CODE-SPAN")
    write(project / ".claude" / "CLAUDE.md", "DOT-CLAUDE-MEMORY")
    write(project / "CLAUDE.local.md", "LOCAL-MEMORY")
    rule = f'---\npaths: ["src/api/**"]\n---\n{API_RULE}\n'
    write(project / ".claude" / "rules" / "api.md", rule)
    write(project / ".claude" / "rules" / "general" / "always.md", "ALWAYS-RULE")
    write(claude_home() / "CLAUDE.md", "USER-MEMORY")
    write(claude_home() / "rules" / "x.md", "USER-RULE")
    for name in ("x.py", "y.py"):
        write(project / "src" / "api" / name, f"# {name}\n")
    write(project / "src" / "other.py", "# other\n")


def system_text(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "system")


def read(path: str) -> ToolCalls:
    return ToolCalls([Call("read", json.dumps({"file_path": path}))])


async def test_memory_files_in_the_system_prompt_and_a_scoped_rule_once_after_a_read(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    fixture_project(isolated)
    write_config(isolated, fake_llm)
    fake_llm.script(read("src/other.py"), read("src/api/x.py"), read("src/api/y.py"), Text("done"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "work on the api")
    requests = fake_llm.requests
    assert len(requests) == 4
    first = system_text(requests[0])
    assert all(system_text(r) == first for r in requests)  # the cached prefix never moves
    for text in TEXTS.values():
        assert first.count(text) == 1, text
    assert "IN-CODE" not in first and API_RULE not in first
    assert f"Instructions from: {isolated / 'docs' / 'conventions.md'} (imported by" in first
    order = ["PROJECT-MEMORY", "CONVENTIONS-TEXT", "STYLE-TEXT", "DOT-CLAUDE-MEMORY"]
    order += ["LOCAL-MEMORY", "ALWAYS-RULE", "USER-MEMORY", "USER-RULE"]
    assert [first.index(t) for t in order] == sorted(first.index(t) for t in order)
    # The rule: not before the read of src/api/x.py, once after it, never again.
    counts = [json.dumps(r["messages"]).count(API_RULE) for r in requests]
    assert counts == [0, 0, 1, 1]
    x_result = [m for m in requests[2]["messages"] if m["role"] == "tool"][-1]
    assert "# x.py" in x_result["content"] and API_RULE in x_result["content"]
    assert "src/api/**" in x_result["content"]
    # Earlier messages are rebuilt byte for byte (the rule joined a result new then).
    assert requests[3]["messages"][: len(requests[2]["messages"])] == requests[2]["messages"]


def test_imports_stop_after_five_hops_and_a_cycle_ends(isolated: Path) -> None:
    write(isolated / "CLAUDE.md", "TOP @l1.md @CLAUDE.md")
    for level in range(1, 8):
        write(isolated / f"l{level}.md", f"LEVEL-{level} @l{level + 1}.md @l1.md")
    (_, rest), _ = build_system("openai/x", isolated, Config())
    for level in range(1, 6):
        assert rest.count(f"LEVEL-{level} ") == 1, level
    assert "LEVEL-6" not in rest and "LEVEL-7" not in rest
    assert rest.count("TOP ") == 1


def untrusted_project(project: Path, home: Path) -> None:
    write(
        project / "CLAUDE.md",
        "PROJECT-MEMORY @../outside.md @~/.ssh/id_rsa @docs/own.md @.env @notes/private.md",
    )
    write(project / "docs" / "own.md", "OWN-DOC")
    write(project / ".env", "DOTENV-SECRET=1")
    write(project / "notes" / "private.md", "DENIED-BY-CONFIG")
    write(project.parent / "outside.md", "OUTSIDE-TEXT")
    write(home / ".ssh" / "id_rsa", "PRIVATE-KEY-MATERIAL")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def test_an_untrusted_projects_imports_stay_inside_it(
    untrusted: Path, home: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    untrusted_project(untrusted, home)
    sandbox = {"deny_read": ["~/.ssh", str(untrusted / "notes")]}
    person_config({**write_config(untrusted, fake_llm), "trusted_projects": [], "sandbox": sandbox})
    (untrusted / "agent-tui.json").unlink()
    fake_llm.script(Text("ok"))
    code, _, err = run_cli(capsys, "run", "hi")
    assert code == 0, err
    sent = json.dumps(fake_llm.requests[0])
    assert "PROJECT-MEMORY" in sent and "OWN-DOC" in sent
    for text in ("OUTSIDE-TEXT", "PRIVATE-KEY", "DOTENV-SECRET", "DENIED-BY-CONFIG"):
        assert text not in sent, text
    code, out, err = run_cli(capsys, "context", "-c")
    assert code == 0, err
    claude = untrusted / "CLAUDE.md"
    outside = "outside the project: read only in a project you trusted"
    assert f"@../outside.md in {claude}: {outside}" in out
    assert f"@~/.ssh/id_rsa in {claude}: a secret's path: never read" in out
    assert f"@.env in {claude}: a secret's path" in out
    assert f"@notes/private.md in {claude}: a secret's path" in out


def test_a_trusted_project_imports_from_outside_but_never_a_secret(
    isolated: Path, home: Path
) -> None:
    untrusted_project(isolated, home)
    (_, rest), _ = build_system("openai/x", isolated, Config())  # no project: the person's
    assert "OUTSIDE-TEXT" in rest and "OWN-DOC" in rest
    assert "PRIVATE-KEY" not in rest and "DOTENV-SECRET" not in rest


def test_context_lists_memory_files_before_any_message(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    fixture_project(isolated)
    write_config(isolated, fake_llm)
    code, out, err = run_cli(capsys, "context")
    assert code == 0, err
    assert "Memory files (in the system prompt; @ an import):" in out
    assert f"  {isolated / 'CLAUDE.md'}: " in out
    assert f"    @ {isolated / 'docs' / 'conventions.md'}: " in out
    assert f"      @ {isolated / 'docs' / 'more' / 'style.md'}: " in out
    assert f"  {isolated / 'CLAUDE.local.md'} (local): " in out
    assert f"  {claude_home() / 'rules' / 'x.md'} (rule): " in out
    api = isolated / ".claude" / "rules" / "api.md"
    assert f"  {api} (paths: src/api/**): " in out and "not active yet" in out
    assert fake_llm.requests == []
    code, _, err = run_cli(capsys, "context", "-c")
    assert code != 0 and "No session to continue" in err  # none was made


async def test_context_says_which_file_brought_a_rule_in(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    fixture_project(isolated)
    write_config(isolated, fake_llm)
    fake_llm.script(read("src/api/y.py"), Text("done"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "look")
        scope = await engine.scope(session.id)
        report = await report_of(scope.workspace, scope.directory, await scope.history(), None)
    api = isolated / ".claude" / "rules" / "api.md"
    assert f"{api} (paths: src/api/**)" in report
    assert f"active: {isolated / 'src' / 'api' / 'y.py'} brought it in" in report


async def test_the_apps_context_before_a_first_message(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    from textual.widgets import Static

    from agent_tui.tui.text_screen import TextScreen
    from tests.tui_helpers import open_app, type_and_send, wait_for

    fixture_project(isolated)
    write_config(isolated, fake_llm)
    app = await open_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "/context")
        await wait_for(pilot, lambda: isinstance(app.screen, TextScreen), "context screen")
        text = str(app.screen.query_one("#body Static", Static).render())
    await app.db.close()
    assert "Memory files (in the system prompt" in text
    assert str(isolated / ".claude" / "rules" / "api.md") in text
    assert fake_llm.requests == []


@pytest.mark.parametrize(
    ("value", "globs"),
    [
        (["src/api/**"], ("src/api/**",)),
        ("src/**/*.ts, lib/**", ("src/**/*.ts", "lib/**")),
        ("src/*.{ts,tsx}", ("src/*.ts", "src/*.tsx")),
        (None, ()),
    ],
)
def test_paths_are_a_list_or_a_comma_string(value: object, globs: tuple[str, ...]) -> None:
    assert rule_globs(value) == globs


def test_globs_match_as_claude_codes_do() -> None:
    assert matches("src/api/x.py", "src/api/**")
    assert matches("src/api/deep/x.py", "src/api/**")
    assert not matches("src/other.py", "src/api/**")
    assert matches("a.ts", "**/*.ts") and matches("src/a/b.ts", "**/*.ts")
    assert matches("src/x.ts", "src/**/*.ts")
    assert matches("docs/readme.md", "*.md")
    assert expand_braces("a/{b,c}/*.{x,y}") == ["a/b/*.x", "a/b/*.y", "a/c/*.x", "a/c/*.y"]


def test_imports_outside_code() -> None:
    text = "Use @a.md and @b/c.md.\n\n```\n@code.md\n```\n\n    @indented.md\n\n`@span.md` x@y.z"
    assert import_references(text) == ["a.md", "b/c.md"]


def nested_project(project: Path) -> None:
    """A CLAUDE.md two folders down and one between, with an import; files beside them."""
    write(project / "CLAUDE.md", "ROOT-MEMORY")
    write(project / "pkg" / "CLAUDE.md", "PKG-MEMORY @notes.md")
    write(project / "pkg" / "notes.md", "PKG-NOTES")
    write(project / "pkg" / "api" / ".claude" / "CLAUDE.md", "API-MEMORY")
    write(project / "pkg" / "api" / "x.py", "# x.py\n")
    write(project / "pkg" / "api" / "y.py", "# y.py\n")
    write(project / "other" / "CLAUDE.md", "OTHER-MEMORY")
    write(project / "top.py", "# top\n")


async def test_a_folders_memory_joins_once_the_model_works_on_a_file_in_it(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """Claude Code's nested memory: a CLAUDE.md below the working directory is read when
    a file under its folder is, with those of the folders between and their imports."""
    nested_project(isolated)
    write_config(isolated, fake_llm)
    fake_llm.script(read("top.py"), read("pkg/api/x.py"), read("pkg/api/y.py"), Text("done"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "work on the api")
        scope = await engine.scope(session.id)
        report = await report_of(scope.workspace, scope.directory, await scope.history(), None)
    requests = fake_llm.requests
    first = system_text(requests[0])
    assert all(system_text(r) == first for r in requests)  # the cached prefix never moves
    assert "ROOT-MEMORY" in first
    for text in ("PKG-MEMORY", "PKG-NOTES", "API-MEMORY", "OTHER-MEMORY"):
        assert text not in first, text
    for text in ("PKG-MEMORY", "PKG-NOTES", "API-MEMORY"):
        counts = [json.dumps(r["messages"]).count(text) for r in requests]
        assert counts == [0, 0, 1, 1], text
    assert all("OTHER-MEMORY" not in json.dumps(r) for r in requests)  # no file there
    x_result = [m for m in requests[2]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "# x.py" in x_result
    assert x_result.index("PKG-MEMORY") < x_result.index("PKG-NOTES") < x_result.index("API")
    assert f"they apply to files in {isolated / 'pkg'}" in x_result
    assert requests[3]["messages"][: len(requests[2]["messages"])] == requests[2]["messages"]
    # /context lists them once loaded, with the file that brought them in.
    assert "Memory of folders below" in report
    x = isolated / "pkg" / "api" / "x.py"
    assert f"{isolated / 'pkg' / 'CLAUDE.md'}: " in report and f"; {x} brought it in" in report
    assert f"@ {isolated / 'pkg' / 'notes.md'}: " in report
    assert str(isolated / "other" / "CLAUDE.md") not in report


def test_a_folders_memory_imports_stay_inside_an_untrusted_project(
    untrusted: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write(untrusted / "pkg" / "CLAUDE.md", "PKG-MEMORY @../docs/own.md @../../outside.md")
    write(untrusted / "docs" / "own.md", "OWN-DOC")
    write(untrusted.parent / "outside.md", "OUTSIDE-TEXT")
    write(untrusted / "pkg" / "x.py", "# x\n")
    person_config({**write_config(untrusted, fake_llm), "trusted_projects": []})
    (untrusted / "agent-tui.json").unlink()
    fake_llm.script(read("pkg/x.py"), Text("ok"))
    code, _, err = run_cli(capsys, "run", "hi")
    assert code == 0, err
    sent = json.dumps(fake_llm.requests[1])
    assert "PKG-MEMORY" in sent and "OWN-DOC" in sent and "OUTSIDE-TEXT" not in sent
    code, out, err = run_cli(capsys, "context", "-c")
    assert code == 0, err
    outside = "outside the project: read only in a project you trusted"
    assert f"@../../outside.md in {untrusted / 'pkg' / 'CLAUDE.md'}: {outside}" in out


def test_a_claude_md_only_projects_outside_import_waits_for_its_trust(
    untrusted: Path, home: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing but a CLAUDE.md importing a file outside the project: that import is
    what the project brings, so the trust question names it, and once trusted it is read
    (a secret's path never is); a CLAUDE.md changed since waits again."""
    write(untrusted / "CLAUDE.md", "PROJECT-MEMORY @../outside.md @~/.ssh/id_rsa")
    write(untrusted.parent / "outside.md", "OUTSIDE-TEXT")
    write(home / ".ssh" / "id_rsa", "PRIVATE-KEY-MATERIAL")
    person_config({**write_config(untrusted, fake_llm), "trusted_projects": []})
    (untrusted / "agent-tui.json").unlink()
    fake_llm.script(Text("one"), Text("two"), Text("three"))
    code, _, err = run_cli(capsys, "run", "hi")
    assert code == 0, err
    sent = json.dumps(fake_llm.requests[0])
    assert "PROJECT-MEMORY" in sent and "OUTSIDE-TEXT" not in sent and "PRIVATE-KEY" not in sent
    note = "its memory files' imports from outside it are not read (@../outside.md in CLAUDE.md)"
    assert err.count(note) == 1, err  # told why, once
    assert "id_rsa in CLAUDE.md" not in err  # never read: nothing to trust about it
    code, out, err = run_cli(capsys, "trust")
    assert code == 1 and "--yes" in err
    outside = (untrusted.parent / "outside.md").resolve()
    assert "Files outside it that its memory files import (read into the context):" in out
    assert f"  @../outside.md in CLAUDE.md ({outside})" in out
    assert "A secret's path its memory files import (never read, trusted or not):" in out
    assert "@~/.ssh/id_rsa in CLAUDE.md" in out
    code, out, _ = run_cli(capsys, "trust", "--yes")
    assert code == 0 and "Trusted:" in out
    code, _, err = run_cli(capsys, "run", "again")
    assert code == 0, err
    sent = json.dumps(fake_llm.requests[1])
    assert "OUTSIDE-TEXT" in sent and "PRIVATE-KEY" not in sent and note not in err
    write(untrusted / "CLAUDE.md", "PROJECT-MEMORY @../outside.md @../second.md")
    code, _, err = run_cli(capsys, "run", "changed")
    assert code == 0, err
    assert "OUTSIDE-TEXT" not in json.dumps(fake_llm.requests[2])
    assert "not trusted (changed since you trusted it)" in err
