"""Shared fixtures: an isolated config/data dir, the fake OpenAI server, an engine."""

from __future__ import annotations

import ast
import functools
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_tui.provider import auth, limits, remote, windows
from tests import process_helpers
from tests.fake_openai import FakeOpenAI

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
# The venv's bin first on PATH, as CI's activated venv has it: `python3` in the commands
# the scenarios run is this interpreter, not a version manager's shim (pyenv's starts a
# dozen shells: ~0.1 s a command, thousands of commands).
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])

pytest_plugins = ["tests.exit_guard"]  # a test that leaks a thread cannot hang the run

MODEL = "openai/test-model"
SMALL = {MODEL: {"limit": {"context": 10_000, "output": 2_000}}}
"""`models` for a window of 10,000 with 2,000 for the answer: usable = 8,000."""
PROVIDER_KEYS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "XAI_API_KEY",
    "OLLAMA_API_BASE",
    "LM_STUDIO_API_BASE",
    "HOSTED_VLLM_API_BASE",
    "LLAMAFILE_API_BASE",
)
"""Every key provider/defaults.py reads: a developer's own keys must not pick the model."""


@pytest.fixture(scope="session", autouse=True)
def warm_relay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One relay per test worker (docs/relay.md): the agent-tui processes tests
    start connect to it instead of each importing litellm. Its socket lives in the
    worker's own runtime dir; it is stopped when the worker ends (and would leave by
    itself after AGENT_TUI_RELAY minutes unused). Tests about a command's own provider
    process set AGENT_TUI_RELAY=0."""
    from agent_tui.provider import relay

    runtime = tmp_path_factory.mktemp("runtime")
    os.environ[relay.RUNTIME_ENV] = str(runtime)
    os.environ.setdefault(relay.RELAY_ENV, "10")
    yield runtime
    stop_relays()


def stop_relays() -> None:
    """Stop the relays of the runtime dir in force, and wait until they are gone."""
    from agent_tui.provider import relay

    for path in relay.relays():
        status = relay.ask(path, "stop")
        if status is not None:
            pid = int(str(status["pid"]))
            process_helpers.wait_until(lambda pid=pid: not _alive(pid), f"relay {pid} to stop")
    folder = relay.runtime_dir()
    if folder.parent == Path("/tmp"):  # a test's runtime dir, too long: named by a digest
        shutil.rmtree(folder, ignore_errors=True)  # pytest removes only its own tmp folders


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This test's own relays: its own runtime dir, stopped at the end."""
    from agent_tui.provider import relay

    folder = tmp_path / "runtime"
    folder.mkdir()
    monkeypatch.setenv(relay.RUNTIME_ENV, str(folder))
    monkeypatch.setenv(relay.RELAY_ENV, "10")
    yield folder
    stop_relays()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


REMOTE_START = remote.start
"""The real one: `isolated` replaces it for commands run in this process (run_cli)."""


@pytest.fixture
def on_relay(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands run in this process (run_cli) use the worker's relay, as a person's
    commands do, instead of litellm here: for what the relay does after they end."""
    monkeypatch.setattr(remote, "start", REMOTE_START)


@pytest.fixture(autouse=True)
def _cold_start(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test marked `cold_start` is about a command's own provider process: no relay."""
    if request.node.get_closest_marker("cold_start") is not None:
        from agent_tui.provider import relay

        monkeypatch.setenv(relay.RELAY_ENV, "0")


def forget_windows() -> None:
    """Drop the windows this process found (provider/windows.py), as a new process starts."""
    for task in windows._known.tasks.values():
        task.cancel()
    windows._known = windows._Known()


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own project dir (cwd), data dir and empty user config dir."""
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("AGENT_TUI_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENT_TUI_CONFIG_DIR", str(tmp_path / "user-config"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))  # ~/.claude
    forget_windows()  # windows servers told an earlier test (ports get reused)
    limits._asked.clear()  # model info and credentials checks: asked anew, as by a new process
    auth._checked.clear()
    # Commands run in this process (run_cli) call litellm here, already imported by an
    # earlier test, instead of starting a provider process that imports it again (~4 s
    # each). Every test that starts agent-tui as a process goes through one, as people's
    # commands do (tests/test_provider_process.py is about it).
    monkeypatch.setattr(remote, "start", lambda **_: None)
    # Those processes import litellm at their first request, not at once: most launches
    # of the app here never send one, and each import is ~3 s of CPU (a third of the
    # suite's). test_no_waits.py, about the import in progress, keeps the default.
    monkeypatch.setenv(remote.DISABLE_ENV, "lazy")
    # The app's leader key waits 2 s for its second key; two pilot presses took longer on
    # a loaded machine (4 workers on 2 cores). No test is about the window running out.
    if (app := sys.modules.get("agent_tui.tui.app")) is not None:  # imported at collection
        monkeypatch.setattr(app, "LEADER_WINDOW", 300.0)
    # The suite's projects are the person's own: their agent-tui.json (provider, permissions,
    # hooks) applies as in a trusted project. The trust tests (test_trust.py) start from
    # an untrusted one (`untrusted`).
    person_config({}, tmp_path / "user-config", trusted=tmp_path)
    for name in (
        *PROVIDER_KEYS,
        "AGENT_TUI_CONFIG",
        "AGENT_TUI_DISABLE_AUTOCOMPACT",
        "AGENT_TUI_DISABLE_PRUNE",
    ):
        monkeypatch.delenv(name, raising=False)
    return project


def person_config(
    data: dict[str, Any], folder: Path | None = None, *, trusted: Path | None = None
) -> Path:
    """Write the person's own config (`<config dir>/config.json`); `trusted`: the folder
    of their own projects (`trusted_projects`), default the test's tmp folder."""
    from agent_tui import paths

    folder = folder or paths.config_dir()
    folder.mkdir(parents=True, exist_ok=True)
    if trusted is None and "trusted_projects" not in data:
        trusted = Path(os.environ["AGENT_TUI_DATA_DIR"]).parent  # the test's own folders
    if trusted is not None:
        data = {**data, "trusted_projects": [str(trusted)]}
    path = folder / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def untrusted(isolated: Path) -> Path:
    """The test's project as a cloned repository: no trust recorded, none by config."""
    person_config({"trusted_projects": []})
    return isolated


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def write_config(project: Path, server: FakeOpenAI, **overrides: Any) -> dict[str, Any]:
    """agent-tui.json pointing litellm at the fake server; overrides merge shallowly."""
    config: dict[str, Any] = {
        "model": MODEL,
        "provider": {"openai": {"api_base": server.base_url, "api_key": "test-key"}},
        "models": {MODEL: {"limit": {"context": 100_000, "output": 4_000}}},
        "permission": {"bash": "allow", "edit": "allow", "write": "allow"},
        "retry": {"initial_delay": 0.01, "max_delay": 0.05},
        # Scripted replies are consumed in order: a summary prepared in the background
        # would take one. The tests of preparing (test_prepared.py) turn it on.
        "compaction": {"prepare_at": 0},
        # Language servers on PATH (ruff server in the venv) would add diagnostics to
        # edits of .py files; the tests of diagnostics (test_lsp.py) turn them on.
        "lsp": {"enabled": False},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key] = {**config[key], **value}
        else:
            config[key] = value
    (project / "agent-tui.json").write_text(json.dumps(config), encoding="utf-8")
    return config


def cloned_project(project: Path, server: FakeOpenAI, **project_keys: Any) -> dict[str, Any]:
    """A cloned repository: the person's own config names the provider (the fake server)
    and trusts nothing; the project's `agent-tui.json` holds only `project_keys`."""
    person_config({**write_config(project, server), "trusted_projects": []})
    (project / "agent-tui.json").write_text(json.dumps(project_keys), encoding="utf-8")
    return project_keys


@pytest.fixture
def configured(isolated: Path, fake_llm: FakeOpenAI) -> FakeOpenAI:
    write_config(isolated, fake_llm)
    return fake_llm


# ---- the `process` marker: every test that starts agent-tui as a process ---------------

STARTER = "agent_tui_argv"
STARTERS = {STARTER, "python_argv"}
NOT_FOLLOWED = {"acp_agent"}
"""In-process by default: a test reaches the process only with `subprocess=True`."""


def _names_used(node: ast.AST, uses: dict[str, set[str]]) -> set[str]:
    """The names `node` uses (a call `acp_agent(..., subprocess=True)` counts as the
    starter); records those of every function and class met on the way in `uses`. One
    walk per module: walking each function's subtree again cost a second per worker."""
    found = {node.id} - NOT_FOLLOWED if isinstance(node, ast.Name) else set()
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        wants_process = any(
            k.arg == "subprocess" and isinstance(k.value, ast.Constant) and k.value.value
            for k in node.keywords
        )
        if node.func.id in NOT_FOLLOWED and wants_process:
            found.add(STARTER)
    for child in ast.iter_child_nodes(node):
        found |= _names_used(child, uses)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        uses.setdefault(node.name, set()).update(found)
    return found


@functools.cache
def _reaching_the_starter() -> frozenset[str]:
    """Names of the functions and classes under tests/ that reach `agent_tui_argv`,
    however indirectly (by name: a test that uses one is taken to start a process)."""
    uses: dict[str, set[str]] = {}
    for path in Path(__file__).parent.glob("*.py"):
        _names_used(ast.parse(path.read_text(encoding="utf-8")), uses)
    reaching = set(STARTERS)
    while grown := {n for n, used in uses.items() if n not in reaching and used & reaching}:
        reaching |= grown
    return frozenset(reaching)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reaching = _reaching_the_starter()
    for item in items:
        function = getattr(item, "function", None)
        if function is not None and function.__name__ in reaching:
            item.add_marker(pytest.mark.process)


@pytest.fixture(autouse=True)
def _running(request: pytest.FixtureRequest) -> Iterator[None]:
    process_helpers.running.append(request.node)
    yield
    process_helpers.running.pop()
