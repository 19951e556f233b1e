"""One boundary (issue 50): everything a project brings runs in the sandbox, trusted or
not, because the model's sandboxed bash can rewrite the files it runs. Each scenario is a
trusted project; one sandboxed bash call rewrites a file that a hook, a language server or
an MCP server runs indirectly (never named on its command line, so never hashed by the
trust), and the next hook or server start runs the new content: inside the sandbox, where
its write outside the project fails and the person is told which key would let it out.

The ways in tried here: a script a script runs, a Makefile, a `python -m` module, a
sourced file, an npm script, a language server's imported module (configured and a
default found on PATH), a project MCP server's module, a project's `mcp.X.sandbox: false`,
a project's own `sandbox.outside`, and a project's `shell.env.set` reaching a program
the person runs outside. The person's own hook still runs outside; the person's own
`sandbox.outside` takes a project's hook out."""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_tui.cli import main
from tests.conftest import cloned_project, person_config
from tests.engine_helpers import run_cli, write
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.test_sandbox import require_bwrap

FAKE_LSP = Path(__file__).with_name("fake_lsp.py")


def bash(command: str) -> ToolCalls:
    return ToolCalls([Call("bash", json.dumps({"command": command}))])


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the project: what a contained program must not be able to write."""
    require_bwrap()
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder / "escaped"


def _hook(command: str, event: str = "PostToolUse", matcher: str = "bash") -> dict[str, Any]:
    return {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}


@dataclass
class Indirect:
    """A hook command, the files it runs as the project ships them, and the file a
    sandboxed bash call rewrites so that the hook runs `touch OUTSIDE`."""

    name: str
    command: str
    files: dict[str, str]
    rewritten: str
    needs: str = ""

    def rewrite(self, outside: Path) -> str:
        text = {
            "scripts/helper.sh": f"touch {outside}\n",
            "Makefile": f"check:\n\t@touch {outside}\n",
            "tools/check.py": f"open({str(outside)!r}, 'w').write('x')\n",
            "scripts/lib.sh": f"touch {outside}\n",
            "package.json": json.dumps({"scripts": {"check": f"touch {outside}"}}),
        }[self.rewritten]
        return f"cat > {self.rewritten} <<'EOF'\n{text}\nEOF"


INDIRECT = [
    Indirect(
        "a script a script runs",
        "sh scripts/check.sh",
        {"scripts/check.sh": "sh scripts/helper.sh\n", "scripts/helper.sh": "true\n"},
        "scripts/helper.sh",
    ),
    Indirect("a Makefile", "make -s check", {"Makefile": "check:\n\t@true\n"}, "Makefile", "make"),
    Indirect(
        "a python -m module",
        f"{sys.executable} -m tools.check",
        {"tools/__init__.py": "", "tools/check.py": "pass\n"},
        "tools/check.py",
    ),
    Indirect(
        "a sourced file",
        "sh scripts/run.sh",
        {"scripts/run.sh": ". scripts/lib.sh\n", "scripts/lib.sh": "true\n"},
        "scripts/lib.sh",
    ),
    Indirect(
        "an npm script",
        "npm run -s check",
        {"package.json": json.dumps({"scripts": {"check": "true"}})},
        "package.json",
        "npm",
    ),
]


def _writes_outside(module: str, outside: Path) -> str:
    """The bash command that makes a Python module write `outside` when imported."""
    return f"cat > {module} <<'EOF'\nopen({str(outside)!r}, 'w').write('x')\nEOF"


def _lay_out(project: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("case", INDIRECT, ids=[c.name for c in INDIRECT])
def test_a_rewritten_file_a_project_hook_runs_runs_in_the_sandbox(
    case: Indirect,
    isolated: Path,
    fake_llm: FakeOpenAI,
    outside: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if case.needs and shutil.which(case.needs) is None:
        pytest.skip(f"{case.needs} is not installed")
    _lay_out(isolated, case.files)
    cloned_project(isolated, fake_llm, hooks=_hook(case.command))
    fake_llm.script(bash(case.rewrite(outside)), Text("done"))
    code, _, err = run_cli(capsys, "run", "--trust", "rewrite it")
    assert code == 0, err
    assert not outside.exists(), f"{case.name}: the hook wrote outside the project"
    assert "hook" in err and "was stopped by the sandbox" in err, err
    key = f'"sandbox": {{"outside": {{"{isolated.resolve()}": ["hook:{case.command}"]}}}}'
    assert key in err, err


def test_the_persons_own_outside_list_takes_a_project_hook_out(
    isolated: Path, fake_llm: FakeOpenAI, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The positive control of the scenarios above: named by the person, it runs outside."""
    case = INDIRECT[0]
    _lay_out(isolated, case.files)
    cloned_project(isolated, fake_llm, hooks=_hook(case.command))
    config = json.loads(person_config_path().read_text())
    config["sandbox"] = {"outside": {str(isolated): [f"hook:{case.command}"]}}
    person_config_path().write_text(json.dumps(config))
    fake_llm.script(bash(case.rewrite(outside)), Text("done"))
    code, _, err = run_cli(capsys, "run", "--trust", "rewrite it")
    assert code == 0, err
    assert outside.exists()


def test_a_projects_own_outside_list_is_never_read(
    isolated: Path, fake_llm: FakeOpenAI, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = INDIRECT[0]
    _lay_out(isolated, case.files)
    cloned_project(
        isolated,
        fake_llm,
        hooks=_hook(case.command),
        sandbox={"outside": {"*": [f"hook:{case.command}"]}},
    )
    fake_llm.script(bash(case.rewrite(outside)), Text("done"))
    assert run_cli(capsys, "run", "--trust", "rewrite it")[0] == 0
    assert not outside.exists()


def test_the_persons_own_hook_still_runs_outside(
    isolated: Path, fake_llm: FakeOpenAI, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cloned_project(isolated, fake_llm)
    config = json.loads(person_config_path().read_text())
    person_config({**config, "hooks": _hook(f"touch {outside}")})
    fake_llm.script(bash("true"), Text("done"))
    code, _, err = run_cli(capsys, "run", "go")
    assert code == 0, err
    assert outside.exists(), "the person's own hook runs as configured: outside"


def test_the_persons_own_hook_marked_sandbox_runs_inside(
    isolated: Path, fake_llm: FakeOpenAI, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cloned_project(isolated, fake_llm)
    config = json.loads(person_config_path().read_text())
    hooks = _hook(f"touch {outside}")
    hooks["PostToolUse"][0]["hooks"][0]["sandbox"] = True
    person_config({**config, "hooks": hooks})
    fake_llm.script(bash("true"), Text("done"))
    assert run_cli(capsys, "run", "go")[0] == 0
    assert not outside.exists()


def test_a_project_hook_does_not_see_withheld_secrets(
    isolated: Path,
    fake_llm: FakeOpenAI,
    outside: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In the sandbox a project's hook gets the environment the model's commands get."""
    monkeypatch.setenv("DEPLOY_TOKEN", "s3cr3t-value")
    seen = isolated / "seen.txt"
    cloned_project(isolated, fake_llm, hooks=_hook(f'echo "[$DEPLOY_TOKEN]" > {seen}'))
    fake_llm.script(bash("true"), Text("done"))
    assert run_cli(capsys, "run", "--trust", "go")[0] == 0
    assert seen.read_text().strip() == "[]"


# ---- language servers ---------------------------------------------------------------------

LSP_RUNNER = f"""import sys
sys.path.insert(0, {str(FAKE_LSP.parent)!r})
import lib  # noqa: F401  (the module the model rewrites)
import fake_lsp
fake_lsp.main("mute")
"""


def _lsp_project(project: Path) -> None:
    _lay_out(project, {"tools/run.py": LSP_RUNNER, "tools/lib.py": "pass\n"})


def test_a_language_servers_rewritten_module_runs_in_the_sandbox(
    isolated: Path, fake_llm: FakeOpenAI, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _lsp_project(isolated)
    server = {"command": [sys.executable, "tools/run.py"], "extensions": [".py"]}
    cloned_project(isolated, fake_llm, lsp={"enabled": True, "timeout": 5, "local": server})
    fake_llm.script(
        bash(_writes_outside("tools/lib.py", outside)),
        write(isolated / "a.py", "x = 1\n"),
        Text("done"),
    )
    code, _, err = run_cli(capsys, "run", "--trust", "go")
    assert code == 0, err
    assert not outside.exists(), "the language server wrote outside the project"
    assert "local language server" in err and "was stopped by the sandbox" in err, err
    assert '["lsp:local"]' in err


def test_a_default_language_server_found_on_path_runs_in_the_sandbox(
    isolated: Path,
    fake_llm: FakeOpenAI,
    outside: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No server configured: the first default on PATH (a `ruff` that writes outside)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ruff = bin_dir / "ruff"
    ruff.write_text(
        f"#!{sys.executable}\nopen({str(outside)!r}, 'w').write('x')\n"
        f"import sys; sys.path.insert(0, {str(FAKE_LSP.parent)!r})\n"
        "import fake_lsp; fake_lsp.main('mute')\n"
    )
    ruff.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    cloned_project(isolated, fake_llm, lsp={"enabled": True, "timeout": 5})
    fake_llm.script(write(isolated / "a.py", "x = 1\n"), Text("done"))
    code, _, err = run_cli(capsys, "run", "--trust", "go")
    assert code == 0, err
    assert not outside.exists(), "the default language server wrote outside the project"
    assert "python language server" in err and '["lsp:python"]' in err, err


# ---- MCP servers --------------------------------------------------------------------------

MCP_SERVER = """from mcp.server.mcpserver import MCPServer
app = MCPServer("p")

@app.tool()
def ping() -> str:
    return "pong"

app.run()
"""
MCP_RUNNER = 'import sys\nsys.path.insert(0, "tools")\nimport mcp_lib  # noqa: F401\n' + MCP_SERVER
"""A project's server that imports the module the model rewrites."""


@pytest.mark.parametrize("opt_out", [False, True], ids=["plain", "sandbox-false"])
def test_a_project_mcp_servers_rewritten_module_runs_in_the_sandbox(
    opt_out: bool,
    isolated: Path,
    fake_llm: FakeOpenAI,
    outside: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Also when the project says `"sandbox": false`: only the person's config counts."""
    _lay_out(isolated, {"tools/server.py": MCP_RUNNER, "tools/mcp_lib.py": "pass\n"})
    server: dict[str, Any] = {"type": "local", "command": [sys.executable, "tools/server.py"]}
    if opt_out:
        server["sandbox"] = False
    cloned_project(isolated, fake_llm, mcp={"proj": server})
    # First run: trusted, the server starts as shipped; the model rewrites its module.
    fake_llm.script(bash(_writes_outside("tools/mcp_lib.py", outside)), Text("ok"))
    assert run_cli(capsys, "run", "--trust", "rewrite")[0] == 0
    fake_llm.script(Text("again"))
    code = main(["run", "-c", "again"])  # not run_cli: the server's own traceback is shown
    err = capsys.readouterr().err
    assert code == 0, err
    assert not outside.exists(), "the project's MCP server wrote outside the project"
    assert "read-only" in err.lower() and '["mcp:proj"]' in err, err


def test_a_projects_env_does_not_reach_a_program_the_person_runs_outside(
    isolated: Path,
    fake_llm: FakeOpenAI,
    outside: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A trusted project's `shell.env.set` (BASH_ENV, NODE_OPTIONS, PYTHONPATH…) applies
    in the sandbox; the person's own unsandboxed MCP server starts without it."""
    planted = isolated / "planted"
    planted.mkdir()
    (planted / "sitecustomize.py").write_text(f"open({str(outside)!r}, 'w').write('x')\n")
    server_py = tmp_path / "own_server.py"
    server_py.write_text(MCP_SERVER)
    cloned_project(isolated, fake_llm, shell={"env": {"set": {"PYTHONPATH": str(planted)}}})
    config = json.loads(person_config_path().read_text())
    own = {"type": "local", "command": [sys.executable, str(server_py)], "sandbox": False}
    person_config({**config, "mcp": {"own": own}})
    fake_llm.script(Text("ok"))
    code, _, err = run_cli(capsys, "run", "--trust", "go")
    assert code == 0, err
    assert not outside.exists(), "the project's PYTHONPATH reached an unsandboxed server"


def person_config_path() -> Path:
    return Path(os.environ["AGENT_TUI_CONFIG_DIR"]) / "config.json"


# ---- the person's choice in the app -------------------------------------------------------


@pytest.mark.parametrize("reply", ["once", "always", "deny"])
async def test_the_app_offers_to_run_a_blocked_project_hook_outside(
    reply: str, isolated: Path, fake_llm: FakeOpenAI, outside: Path
) -> None:
    """The same choice a blocked bash command gets: once, always for this project (saved
    in the person's own config, never the project's), or no."""
    from agent_tui.tui.permission_screen import PermissionScreen
    from tests.tui_helpers import close, open_app, type_and_send, wait_for

    command = f"touch {outside}"
    cloned_project(isolated, fake_llm, hooks=_hook(command))
    config = json.loads(person_config_path().read_text())
    person_config({**config, "trusted_projects": [str(isolated)]})  # the person's own repo
    fake_llm.script(bash("true"), Text("done"))
    app = await open_app()
    async with app.run_test(size=(110, 40)) as pilot:
        await type_and_send(pilot, "go")
        asking = lambda: isinstance(app.screen, PermissionScreen)  # noqa: E731
        await wait_for(pilot, asking, "the question to run the hook outside")
        screen = app.screen
        assert isinstance(screen, PermissionScreen)
        assert "PostToolUse hook" in screen.request.title
        assert screen.request.always == f"hook:{command}"
        await pilot.press({"once": "a", "always": "A", "deny": "d"}[reply])
        await wait_for(pilot, lambda: app.chat.status == "idle", "the turn's end")
        await close(app)
    assert outside.exists() == (reply != "deny")
    saved = json.loads(person_config_path().read_text()).get("sandbox", {}).get("outside")
    project = json.loads((isolated / "agent-tui.json").read_text())
    assert "outside" not in project.get("sandbox", {}), "never saved in the project's file"
    if reply == "always":
        assert saved == {str(isolated.resolve()): [f"hook:{command}"]}
    else:
        assert not saved


# ---- agent-tui's own processes never import the project ------------------------------------

PLANTED = ("litellm.py", "textual.py", "httpx.py", "aiosqlite.py", "tiktoken.py", "pydantic.py")
"""Modules agent-tui and its relay import, as the model could write them into the
project root (its sandboxed bash may write there)."""


@pytest.mark.usefixtures("runtime")
@pytest.mark.parametrize("where", ["relay", "own provider process"])
def test_a_module_planted_in_the_project_is_never_imported_by_agent_tui(
    where: str, configured: FakeOpenAI, isolated: Path, tmp_path: Path
) -> None:
    """`python -m` puts the working directory first on the import path: the provider
    process and the relay (started from the project, holding the person's keys)
    and `python -m agent_tui` itself would import a planted `litellm.py` outside the
    sandbox. They start with `-P` and drop that entry."""
    from tests.test_relay import run

    marker = tmp_path / "imported"
    planted = f"open({str(marker)!r}, 'w').write('x')\nraise ImportError('planted')\n"
    for name in PLANTED:
        (isolated / name).write_text(planted)
    configured.script(Text("fine"))
    switch = {} if where == "relay" else {"AGENT_TUI_RELAY": "0"}
    done = run(isolated, "run", "hello", **switch)
    assert done.returncode == 0 and "fine" in done.stdout, done.stderr
    assert not marker.exists(), "a planted module ran as part of agent-tui"


@pytest.mark.parametrize("named", [False, True], ids=["contained", "named-outside"])
def test_a_project_formatter_runs_in_the_sandbox_unless_the_person_names_it(
    named: bool,
    isolated: Path,
    fake_llm: FakeOpenAI,
    outside: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _lay_out(isolated, {"fmt.sh": f"touch {outside}\n"})
    cloned_project(isolated, fake_llm, format={".txt": "sh fmt.sh {file}"})
    if named:
        config = json.loads(person_config_path().read_text())
        config["sandbox"] = {"outside": {str(isolated): ["format:.txt"]}}
        person_config_path().write_text(json.dumps(config))
    fake_llm.script(write(isolated / "a.txt", "x\n"), Text("done"))
    code, _, err = run_cli(capsys, "run", "--trust", "go")
    assert code == 0, err
    assert outside.exists() == named
