"""The person's relay (provider/relay.py, docs/relay.md): one litellm for every
command, each command's own world kept (its PATH, variables, project), another
install's or credentials' relay never used, gone when idle, restarted after a crash,
reachable by its user alone. These start agent-tui as a process: that is the subject."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from agent_tui.provider import relay
from tests.fake_openai import Call, FakeOpenAI, Gated, Hang, Text, ToolCalls
from tests.process_helpers import agent_tui_argv, wait_until, with_sitecustomize
from tests.serve_helpers import env as process_env

pytestmark = pytest.mark.process


def run(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        agent_tui_argv(*args),
        cwd=project,
        env={**process_env(), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def started(project: Path, *args: str) -> subprocess.Popen[str]:
    """agent-tui ARGS running in `project`, its output piped."""
    return subprocess.Popen(
        agent_tui_argv(*args),
        cwd=project,
        env=process_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def relay_status() -> list[dict[str, object]]:
    return json.loads(run(Path.cwd(), "relay", "--json").stdout)


def bash(command: str) -> ToolCalls:
    return ToolCalls([Call("bash", json.dumps({"command": command}))])


def test_commands_share_one_relay_and_each_keeps_its_own_world(
    configured: FakeOpenAI, isolated: Path, tmp_path: Path, runtime: Path
) -> None:
    tools = {}
    for name in ("one", "two"):
        folder = tmp_path / f"bin-{name}"
        folder.mkdir()
        (folder / "whoami-tool").write_text(f"#!/bin/sh\necho tool-{name}\n")
        (folder / "whoami-tool").chmod(0o755)
        tools[name] = f"{folder}:{os.environ['PATH']}"
    for name in ("one", "two"):
        configured.script(bash('whoami-tool; echo "mark-$MY_MARK"'), Text(f"done {name}"))
        done = run(isolated, "run", "go", PATH=tools[name], MY_MARK=name)
        assert done.returncode == 0, done.stderr
        result = configured.requests[-1]["messages"][-1]["content"]
        assert f"tool-{name}" in result and f"mark-{name}" in result, result
    (status,) = relay_status()
    assert status["current"] and int(str(status["served"])) >= 2
    assert status["litellm"], "litellm is loaded once, in the relay"


def test_other_credentials_or_another_install_never_share_a_relay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = {"PATH": "/usr/bin", "OPENAI_API_KEY": "k1", "HOME": "/home/a", "MY_MARK": "x"}
    key = relay.relay_key(base)
    terminal = {"TERM_PROGRAM_VERSION": "3.3a", "TMUX": "/tmp/tmux-0/default,1,0"}
    assert relay.relay_key({**base, "MY_MARK": "y", "PATH": "/bin", **terminal}) == key
    assert relay.relay_key({**base, "OPENAI_API_KEY": "k2"}) != key
    assert relay.relay_key({**base, "HOME": "/home/b"}) != key
    assert relay.relay_key({**base, "HTTPS_PROXY": "http://proxy"}) != key
    assert relay.relay_key({**base, "AZURE_API_VERSION": "2024-10-21"}) != key
    monkeypatch.setattr(relay, "_code_stamp", lambda: "another version")
    assert relay.relay_key(base) != key


def test_kill_9_of_the_relay_mid_turn_is_said_once_and_the_next_command_works(
    configured: FakeOpenAI, isolated: Path, runtime: Path
) -> None:
    configured.script(Hang(), Text("after the crash"))
    process = started(isolated, "run", "first")
    try:
        configured.wait_for_requests(1, timeout=60)  # the turn is under way, in the relay
        (status,) = relay_status()
        os.kill(int(str(status["pid"])), signal.SIGKILL)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 1, err
    assert err.count("agent-tui's relay") == 1 and "ended unexpectedly" in err, err
    done = run(isolated, "run", "--continue", "second")
    assert done.returncode == 0 and "after the crash" in done.stdout, done.stderr
    # The first prompt was saved before the crash: the continued session holds both.
    prompts = [m["content"] for m in configured.requests[-1]["messages"] if m["role"] == "user"]
    assert any("first" in str(p) for p in prompts) and any("second" in str(p) for p in prompts)


def test_the_relay_leaves_after_its_idle_time(
    configured: FakeOpenAI, isolated: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(relay.RELAY_ENV, "0.01")  # 0.6 s
    configured.script(Text("hi"))
    assert run(isolated, "run", "go").returncode == 0
    (path,) = relay.relays()
    wait_until(lambda: not path.exists(), "the idle relay to leave")
    assert relay_status() == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_another_user_cannot_reach_the_relay(
    configured: FakeOpenAI, isolated: Path, runtime: Path
) -> None:
    configured.script(Text("hi"))
    assert run(isolated, "run", "go").returncode == 0
    (path,) = relay.relays()
    assert (path.parent.stat().st_mode & 0o777) == 0o700
    assert (path.stat().st_mode & 0o077) == 0
    probe = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n    s.connect(sys.argv[1]); print('CONNECTED')\n"
        "except OSError as e:\n    print('REFUSED', e.errno)\n"
    )
    python = next((p for p in ("/usr/bin/python3", "/bin/python3") if os.path.exists(p)), None)
    if python is None:
        pytest.skip("no system python for another user to run")
    done = subprocess.run(
        [python, "-c", probe, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        user=65534,
    )
    assert "REFUSED" in done.stdout, done.stdout + done.stderr


def test_relay_status_and_stop(configured: FakeOpenAI, isolated: Path, runtime: Path) -> None:
    configured.script(Text("hi"))
    assert run(isolated, "run", "go").returncode == 0
    shown = run(isolated, "relay")
    assert "Relay" in shown.stdout and "MiB" in shown.stdout, shown.stdout
    stopped = run(isolated, "relay", "--stop").stdout
    assert "Relay" in stopped and "stopped" in stopped, stopped
    assert relay.relays() == []


async def test_a_summary_being_written_when_its_command_ends_is_finished_for_the_next(
    configured: FakeOpenAI, runtime: Path
) -> None:
    """A detachable request (a summary prepared in the background) goes on in the relay
    when the command that sent it ends; the next command sending the same request gets
    it without a second request to the provider."""
    import asyncio
    import threading

    from agent_tui.provider.remote import ProviderProcess
    from agent_tui.provider.stream_events import ModelRequest, TextDelta

    gate = threading.Event()
    configured.responder = lambda body: Gated(Text("the whole summary"), gate)
    request = ModelRequest(
        model="openai/test-model",
        api_base=configured.base_url,
        api_key="test-key",
        messages=[{"role": "user", "content": "summarise"}],
        detachable=True,
    )

    async def text_of(process: ProviderProcess) -> str:
        return "".join([e.text async for e in process.stream(request) if isinstance(e, TextDelta)])

    first = ProviderProcess(connection=await asyncio.to_thread(relay.connect_or_start, 10))
    reading = asyncio.create_task(text_of(first))
    await asyncio.to_thread(configured.wait_for_requests, 1, 60)
    reading.cancel()  # the command that asked ends, mid-summary
    first.close()
    second = ProviderProcess(connection=await asyncio.to_thread(relay.connect_or_start, 10))
    gate.set()
    assert await asyncio.wait_for(text_of(second), 60) == "the whole summary"
    second.close()
    assert len(configured.requests) == 1, "the summary was not written again"


async def test_a_summary_its_command_left_is_saved_by_the_relay_and_one_stopped_is_not(
    configured: FakeOpenAI, isolated: Path, runtime: Path
) -> None:
    """The relay saves a prepared summary whose command ended before it (`leave`), with
    its text, usage and cost, and holds the session's preparation lock until then; a
    summary the person stopped (Esc: the stream cancelled) stops and is never saved."""
    import asyncio
    import threading

    from agent_tui import paths
    from agent_tui.context.prepared_left import relay_locks
    from agent_tui.provider.remote import ProviderProcess
    from agent_tui.provider.stream_events import ModelRequest, SaveWhenLeft
    from agent_tui.usage import Prices
    from tests.engine_helpers import open_engine

    async with open_engine() as engine:
        session = await engine.new_session(isolated)
    gate = threading.Event()
    configured.responder = lambda body: Gated(
        Text(f"summary of {body['messages'][0]['content']}"), gate
    )

    def request(words: str, ident: str) -> ModelRequest:
        skeleton = {"id": ident, "session_id": session.id, "last_id": "m", "messages": 2}
        skeleton |= {"fingerprint": "f", "model": "openai/test-model"}
        return ModelRequest(
            model="openai/test-model",
            api_base=configured.base_url,
            api_key="test-key",
            messages=[{"role": "user", "content": words}],
            detachable=True,
            save_when_left=SaveWhenLeft(
                database=str(paths.database_path()), prepared=skeleton, prices=Prices(output=0.5)
            ),
        )

    async def asked(words: str, ident: str, *, leaving: bool) -> None:
        process = ProviderProcess(connection=await asyncio.to_thread(relay.connect_or_start, 10))
        reading = asyncio.create_task(anext(aiter(process.stream(request(words, ident)))))
        await asyncio.to_thread(configured.wait_for_requests, len(configured.requests) + 1, 60)
        if leaving:
            assert process.leave()  # the command ends: the relay takes it
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
        process.close()

    locks = relay_locks(paths.database_path())
    await asyncio.to_thread(configured.wait_for_requests, 0)
    await asked("the stopped one", "prp_1", leaving=False)
    await asked("the left one", "prp_2", leaving=True)
    assert locks.holder(session.id) is not None  # the relay prepares it now
    gate.set()
    await asyncio.to_thread(wait_until, lambda: locks.holder(session.id) is None, "the save")
    async with open_engine() as engine:
        (saved,) = await engine.ctx.db.prepared_summaries(session.id)
    assert (saved.id, saved.text, saved.status) == ("prp_2", "summary of the left one", "ready")
    assert saved.tokens.output > 0 and saved.cost == saved.tokens.output * 0.5


def test_serve_and_acp_reach_litellm_through_the_warm_relay(
    configured: FakeOpenAI, isolated: Path, runtime: Path
) -> None:
    """`serve` and an editor's `acp` stay connected to the relay while they run (they
    import no litellm of their own)."""
    from tests.serve_helpers import serve

    with serve(isolated):
        wait_until(lambda: len(relay_status()) == 1, "serve's relay")
        (status,) = relay_status()
        assert status["connections"] == 1, status  # serve's, beside the one asking
    acp = subprocess.Popen(
        agent_tui_argv("acp"), cwd=isolated, env=process_env(), stdin=subprocess.PIPE
    )
    try:
        wait_until(lambda: relay_status()[0]["connections"] == 1, "acp's connection")
    finally:
        acp.kill()
        acp.wait()


def test_a_run_on_the_warm_relay_keeps_its_own_world_and_stdin(
    configured: FakeOpenAI, isolated: Path, tmp_path: Path, runtime: Path
) -> None:
    configured.script(Text("first"))
    assert run(isolated, "run", "go").returncode == 0  # the relay is up
    folder = tmp_path / "bin-own"
    folder.mkdir()
    (folder / "whoami-tool").write_text("#!/bin/sh\necho tool-own\n")
    (folder / "whoami-tool").chmod(0o755)
    configured.script(bash('whoami-tool; echo "mark-$MY_MARK"; pwd'), Text("done here"))
    done = subprocess.run(
        agent_tui_argv("run", "-"),
        cwd=isolated,
        env={**process_env(), "PATH": f"{folder}:{os.environ['PATH']}", "MY_MARK": "own"},
        input="the words from stdin",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "done here" in done.stdout, done.stderr
    asked = configured.requests[-1]["messages"]
    assert any("the words from stdin" in str(m["content"]) for m in asked)
    result = asked[-1]["content"]
    assert "tool-own" in result and "mark-own" in result and str(isolated) in result, result


def in_world(shell: str, *args: str) -> list[str]:
    """`agent-tui ARGS` started by `sh -c SHELL; exec agent-tui ARGS`: a caller that set
    its umask or limits first, as a person's shell or a CI step does."""
    return ["sh", "-c", f'{shell}; exec "$@"', "sh", *agent_tui_argv(*args)]


def test_a_run_keeps_its_callers_umask_and_limits_on_a_relay_another_started(
    configured: FakeOpenAI, isolated: Path, runtime: Path
) -> None:
    """Nothing stands in for the caller (no preloaded process forks `run`): the relay,
    started by a command with umask 000, only talks to providers; the next `run`, under
    umask 077 and `ulimit -n 256`, makes 0600 files through bash and the write tool, and
    its bash commands see its file limit."""
    configured.script(Text("relay up"))
    first = subprocess.run(
        in_world("umask 000", "run", "start the relay"),
        cwd=isolated,
        env=process_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == 0 and "relay up" in first.stdout, first.stderr
    assert len(relay.relays()) == 1
    configured.script(
        bash("touch by-bash.txt; echo limit=$(ulimit -n) umask=$(umask)"),
        ToolCalls([Call("write", json.dumps({"file_path": "by-write.txt", "content": "w"}))]),
        Text("made both"),
    )
    done = subprocess.run(
        in_world("umask 077; ulimit -n 256", "run", "make two files"),
        cwd=isolated,
        env=process_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "made both" in done.stdout, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    bash_result = configured.requests[-2]["messages"][-1]["content"]
    assert "limit=256" in bash_result and "umask=0077" in bash_result, bash_result
    for name in ("by-bash.txt", "by-write.txt"):
        assert (isolated / name).stat().st_mode & 0o777 == 0o600, name


GATED_RELAY = """
import os, sys, time
if "--serve" in sys.argv:  # the relay: held until the test opens its gate
    while not os.path.exists({gate!r}):
        time.sleep(0.02)
"""


def test_the_app_draws_while_the_relay_it_starts_is_not_listening_yet(
    configured: FakeOpenAI, isolated: Path, tmp_path: Path, runtime: Path
) -> None:
    """No relay runs (the first launch after its idle time): the app starts one and
    draws its first frame without waiting for it to listen, then uses it."""
    from tests.pty_helpers import PtyAgent

    gate = tmp_path / "gate"
    env = with_sitecustomize(tmp_path / "hook", GATED_RELAY.format(gate=str(gate)))
    agent = PtyAgent(isolated, env=env)
    try:
        agent.wait_for(b"Message the agent")  # drawn while the relay is held
        assert not any(relay.connect(path) for path in relay.relays())
        gate.touch()

        def connected() -> bool:  # the app's connection to the relay it started
            answers = [relay.ask(path, "status") for path in relay.relays()]
            return any(a and int(str(a.get("connections"))) >= 1 for a in answers)

        wait_until(connected, "the app connected to the relay it started")
    finally:
        assert agent.quit() == 0
