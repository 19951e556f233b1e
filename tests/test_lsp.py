"""Diagnostics after edits (lsp/) with a real language server over stdio: `ruff server`,
a dev dependency, named by its path in the venv."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from agent_tui.config.lsp_config import LspConfig
from agent_tui.context.breakdown import report as report_of
from agent_tui.events import Notice
from agent_tui.lsp.language_servers import LspServers, introduced
from agent_tui.lsp.lsp_client import Diagnostic
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
        scope = await engine.scope(session.id)
        report = await report_of(scope.workspace, scope.directory, await scope.history(), None)
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
            (client,) = engine.ctx.workspace.lsp._clients.values()
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


FAKE_LSP = str(Path(__file__).resolve().parent / "fake_lsp.py")
SHORT = 0.2
"""lsp.timeout of the misbehaving servers: the most any check may wait for them."""


def servers(mode: str, notices: list[str]) -> LspServers:
    command = [sys.executable, FAKE_LSP, mode]
    config = LspConfig.model_validate(
        {"timeout": SHORT, "python": {"command": command, "extensions": [".py"]}}
    )
    return LspServers(config, dict(os.environ), notices.append)


async def test_a_server_that_never_answers_holds_no_edit_past_the_timeout(tmp_path: Path) -> None:
    """It never answers `initialize`: each check gives up at lsp.timeout ("still
    starting"); the start itself gives up in the background after three times that, with
    one notice, and later checks skip the server."""
    notices: list[str] = []
    lsp = servers("silent", notices)
    path = tmp_path / "a.py"
    try:
        said = await lsp.check(tmp_path, path, None, "x = 1\n")
        assert said == "[diagnostics] python: still starting; this edit was not checked."
        while not notices:  # the start's own deadline, in the background
            said = await lsp.check(tmp_path, path, "x = 1\n", "x = 2\n")
            assert said in ("", "[diagnostics] python: still starting; this edit was not checked.")
        assert await lsp.check(tmp_path, path, "x = 2\n", "x = 3\n") == ""
    finally:
        await lsp.close()
    assert len(notices) == 1 and "did not start" in notices[0]


async def test_a_server_that_never_publishes_is_said_once_per_edit(tmp_path: Path) -> None:
    notices: list[str] = []
    lsp = servers("mute", notices)
    try:
        said = await lsp.check(tmp_path, tmp_path / "a.py", None, "x = 1\n")
    finally:
        await lsp.close()
    assert said == f"[diagnostics] python: no answer within {SHORT:g} s." and notices == []


async def test_a_server_that_stops_reading_is_killed_not_waited_for(tmp_path: Path) -> None:
    """Its input pipe fills up: the edit's text cannot be sent. The write gives up at the
    timeout, the server is killed (a message half written cannot be taken back) and a new
    one starts for the next edit."""
    lsp = servers("deaf", [])
    try:
        await lsp.check(tmp_path, tmp_path / "a.py", None, "x = 1\n")  # started: answers
        (client,) = lsp._clients.values()
        assert client.proc is not None
        big = "x = 1\n" * 200_000  # more than any pipe's buffer
        said = await lsp.check(tmp_path, tmp_path / "a.py", None, big)  # a file written whole
        assert await asyncio.wait_for(client.proc.wait(), 60) != 0, "the stuck server was killed"
        assert said == f"[diagnostics] python: no answer within {SHORT:g} s."
        said = await lsp.check(tmp_path, tmp_path / "a.py", None, "x = 2\n")
        assert said.startswith("[diagnostics] python:") and client not in lsp._clients.values()
    finally:
        await lsp.close()


def test_a_new_error_is_reported_at_its_own_line_not_an_older_ones() -> None:
    """The edit adds, at line 5, an error with the same text as an older one (line 9 after
    the edit): the new one is reported at line 5."""
    before = "".join(f"line{n}\n" for n in range(1, 9))
    after = before.replace("line4\n", "line4\nnew_bad\n")
    old = [Diagnostic(line=8, message="Undefined name `x`", code="F821")]
    new = [
        Diagnostic(line=5, message="Undefined name `x`", code="F821"),
        Diagnostic(line=9, message="Undefined name `x`", code="F821"),
    ]
    assert [d.line for d in introduced(old, new, 1, before, after)] == [5]
    # Where the edit rewrote the older error's own line, it is matched by its text.
    rewritten = before.replace("line8\n", "line8 changed\n")
    moved = [Diagnostic(line=8, message="Undefined name `x`", code="F821")]
    assert introduced(old, moved, 1, before, rewritten) == []


async def test_ruff_reports_a_repeated_error_at_the_line_the_edit_added_it(tmp_path: Path) -> None:
    """The same error text above and below an older one: reported where it was added
    (ruff lists the older one first; test_a_new_error_is_reported_at_its_own_line… has
    a server that lists them the other way)."""
    config = LspConfig.model_validate(PYTHON_SERVER)
    lsp = LspServers(config, dict(os.environ), lambda _: None)
    before = "def f():\n    return 1\n\n\nprint(missing)\n\n\ndef g():\n    return 2\n"
    path = tmp_path / "mod.py"
    try:
        for old, new, line in (
            ("return 1", "return missing", 2),
            ("return 2", "return missing", 9),
        ):
            after = before.replace(old, new)
            said = await lsp.check(tmp_path, path, before, after)
            assert "introduced 1 error" in said, said
            assert f"line {line}: error: Undefined name `missing`" in said, said
            await lsp.check(tmp_path, path, after, before)  # back as it was
    finally:
        await lsp.close()
