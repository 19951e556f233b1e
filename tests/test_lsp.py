"""Diagnostics after edits (lsp/) with a real language server over stdio: `ruff server`,
a dev dependency, named by its path in the venv."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from agent_tui.events import Notice
from tests.conftest import write_config
from tests.engine_helpers import edit, open_engine, write
from tests.fake_openai import FakeOpenAI, Text

RUFF = str(Path(sys.executable).parent / "ruff")
PYTHON_SERVER = {"enabled": True, "python": {"command": [RUFF, "server"], "extensions": [".py"]}}


def tool_messages(server: FakeOpenAI) -> list[str]:
    """Every tool result the model read, in order."""
    found: list[str] = []
    for request in server.requests:
        for message in request["messages"]:
            if message["role"] == "tool" and message["content"] not in found:
                found.append(message["content"])
    return found


async def test_new_errors_are_reported_fixed_ones_are_not_and_old_ones_stay_unsaid(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, lsp=PYTHON_SERVER)
    # An older error the edits do not touch: never reported.
    (isolated / "mod.py").write_text("def f():\n    return older_missing\n\nx = 1\n")
    fake_llm.script(
        edit("mod.py", "x = 1", "x = undefined_thing + 1"),
        edit("mod.py", "x = undefined_thing + 1", "x = 2"),
        write("fresh.py", "import os\n\nprint(also_missing)\n"),
        Text("done"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "edit the module")
        assert result is not None and result.outcome == "stop", result
        report = await engine.context_report(session.id)
    introduced, fixed, fresh = tool_messages(fake_llm)
    assert "[diagnostics] python: this edit introduced 1 error in mod.py:" in introduced
    assert "line 4: error: Undefined name `undefined_thing` (F821)" in introduced
    assert "older_missing" not in introduced
    assert "[diagnostics]" not in fixed
    # A new file: all its errors are new; warnings (the unused import) only when asked.
    assert "line 3: error: Undefined name `also_missing` (F821)" in fresh
    assert "F401" not in fresh
    assert "Language servers:" in report and "python:" in report


async def test_warnings_when_asked_and_at_most_max_diagnostics(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    lsp = {**PYTHON_SERVER, "warnings": True, "max_diagnostics": 2}
    write_config(isolated, fake_llm, lsp=lsp)
    body = "import os\n" + "".join(f"print(missing_{n})\n" for n in range(4))
    fake_llm.script(write("many.py", body), Text("done"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "write it")
    (told,) = tool_messages(fake_llm)
    # F401 the unused import, and what else ruff's defaults warn of.
    assert "introduced 4 errors and " in told and "warning" in told
    assert told.count("  line ") == 2 and "… and " in told


async def test_a_missing_server_is_a_notice_and_the_edit_stands(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    missing = {
        "enabled": True,
        "python": {"command": ["no-such-language-server"], "extensions": [".py"]},
    }
    write_config(isolated, fake_llm, lsp=missing)
    fake_llm.script(write("a.py", "print(nope)\n"), write("b.py", "x = 1\n"), Text("ok"))
    notices: list[str] = []
    async with open_engine() as engine:
        engine.ctx.bus.subscribe(
            lambda e: notices.append(e.message) if isinstance(e, Notice) else None
        )
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "write")
        assert result is not None and result.outcome == "stop"
    assert (isolated / "a.py").read_text() == "print(nope)\n"
    said = [n for n in notices if "no-such-language-server" in n]
    assert said == [
        "Language server `no-such-language-server` not found: no diagnostics after edits "
        "of python files (config lsp.python)."
    ], "one notice, not one per edit"
    assert all("[diagnostics]" not in told for told in tool_messages(fake_llm))


async def test_a_crashed_server_restarts_once_then_stays_off(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, lsp=PYTHON_SERVER)
    fake_llm.script(
        write("a.py", "print(first_missing)\n"),
        Text("one"),
        write("b.py", "print(second_missing)\n"),
        Text("two"),
        write("c.py", "print(third_missing)\n"),
        Text("three"),
    )
    notices: list[str] = []
    async with open_engine() as engine:
        engine.ctx.bus.subscribe(
            lambda e: notices.append(e.message) if isinstance(e, Notice) else None
        )
        session = await engine.new_session(isolated)

        def kill_server() -> None:
            (client,) = engine.ctx.lsp._clients.values()
            assert client.proc is not None
            os.kill(client.proc.pid, signal.SIGKILL)

        await engine.prompt(session.id, "first")
        kill_server()
        await engine.prompt(session.id, "second")
        kill_server()
        await engine.prompt(session.id, "third")
    first, second, third = tool_messages(fake_llm)
    assert "first_missing" in first
    assert "second_missing" in second, "restarted after the crash"
    assert "[diagnostics]" not in third
    assert any("stopped again after a restart" in n for n in notices)
