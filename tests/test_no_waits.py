"""Nothing on the event loop waits for litellm (provider/api.py): a message sent while
litellm is still importing — in the app's provider process, or on the ACP agent's import
thread — leaves the app typing and the agent answering other requests.

litellm's import is held for as long as a test needs by a `sitecustomize` (on the
processes' PYTHONPATH) that stops `import litellm` until a gate file exists; nothing of
agent-tui is changed. Held, the request cannot have reached the fake server: whatever the
person sees meanwhile was drawn without litellm."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agent_tui.provider import remote
from tests.acp_client import RecordingClient, acp_agent, prompt
from tests.fake_openai import FakeOpenAI, Text
from tests.process_helpers import wait_until, with_sitecustomize
from tests.pty_helpers import PtyAgent

HOLD_LITELLM = """
import importlib.abc, importlib.machinery, os, pathlib, sys, time

class Held(importlib.abc.Loader):
    def __init__(self, real):
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)

    def create_module(self, spec):
        return self.real.create_module(spec)

    def exec_module(self, module):
        pathlib.Path({started!r}).write_text(str(os.getpid()))
        while not os.path.exists({gate!r}):
            time.sleep(0.02)
        self.real.exec_module(module)

class Hold(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "litellm":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader = Held(spec.loader)
        return spec

sys.meta_path.insert(0, Hold())
"""
"""The hold is in the module's execution, where only litellm's own module lock is held
(not in find_spec, which runs under the interpreter's global import lock: every other
import of the process would wait too)."""


pytestmark = pytest.mark.cold_start


@pytest.fixture(autouse=True)
def _eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider process imports litellm at once, as people's do (conftest makes the
    suite's lazy), in a process of the command's own, not the suite's relay:
    these tests are about that import in progress (`cold_start`)."""
    monkeypatch.delenv(remote.DISABLE_ENV)


class HeldImport:
    """`import litellm` waits, in every process started with `env`, until `release()`."""

    def __init__(self, tmp_path: Path) -> None:
        self.started = tmp_path / "litellm-import-started"
        self.gate = tmp_path / "litellm-import-released"
        text = HOLD_LITELLM.format(started=str(self.started), gate=str(self.gate))
        self.env = with_sitecustomize(tmp_path / "hold-litellm", text)

    def wait_started(self) -> None:
        wait_until(self.started.exists, "litellm's import to start (and be held)", 60)

    def release(self) -> None:
        self.gate.write_text("go", encoding="utf-8")


TYPED = b"zqxjkvwpfy"
"""Keys typed one every KEY_EVERY seconds after the message is sent."""
KEY_EVERY = 0.1
KEY_DEADLINE = 10.0
"""Each key must be on screen within this while litellm is held (a blocked event loop
would draw none until the release: the deadline only bounds the test's wait)."""


def test_the_app_types_on_while_the_provider_process_imports_litellm(
    configured: FakeOpenAI, isolated: Path, tmp_path: Path
) -> None:
    held = HeldImport(tmp_path)
    configured.responder = lambda body: Text("Answered once litellm was there.")  # titles too
    agent = PtyAgent(isolated, env=held.env)
    try:
        agent.wait_for(b"100,000 tokens")  # the session is open
        held.wait_started()
        agent.type(b"hello\r")
        agent.wait_for(b"hello")
        late: list[float] = []
        for index in range(len(TYPED)):
            time.sleep(KEY_EVERY)  # a person's pace, not a wait for state
            sent = time.monotonic()
            agent.type(TYPED[index : index + 1])
            agent.wait_for(TYPED[: index + 1], deadline=KEY_DEADLINE)
            late.append(time.monotonic() - sent)
        assert not held.gate.exists() and configured.requests == []  # all of it while held
        print(f"key echo while litellm imports: max {max(late) * 1000:.0f} ms")
        held.release()
        agent.wait_for(b"Answered once litellm was there.")
    finally:
        held.release()
        code = agent.quit()
    assert code == 0


async def test_an_acp_prompt_while_litellm_imports_leaves_other_requests_answered(
    configured: FakeOpenAI, isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldImport(tmp_path)
    monkeypatch.setenv("PYTHONPATH", held.env["PYTHONPATH"])
    configured.responder = lambda body: Text("Answered once litellm was there.")  # titles too
    client = RecordingClient()
    try:
        async with acp_agent(client, isolated, subprocess=True) as (conn, _):
            first = await conn.new_session(cwd=str(isolated), mcp_servers=[])
            await asyncio.to_thread(held.wait_started)
            turn = asyncio.create_task(
                conn.prompt(session_id=first.session_id, prompt=prompt("hello"))
            )
            second = await conn.new_session(cwd=str(isolated), mcp_servers=[])
            listed = await conn.list_sessions(cwd=str(isolated))
            assert not turn.done() and configured.requests == []  # answered while held
            assert second.session_id != first.session_id
            assert first.session_id in {s.session_id for s in listed.sessions}
            held.release()
            response = await turn
    finally:
        held.release()
    assert response.stop_reason == "end_turn"
    assert client.text(first.session_id) == "Answered once litellm was there."
