"""Formatters (config `format`, step/formatting.py) with a real one: ruff format, a dev
dependency, run in the sandbox after write and edit."""

from __future__ import annotations

import sys
from pathlib import Path

from agent_tui.session import undo as turns
from tests.conftest import write_config
from tests.engine_helpers import open_engine, tool_results, write
from tests.fake_openai import FakeOpenAI, Text

RUFF = str(Path(sys.executable).parent / "ruff")
UGLY = "x = {  'a':1,'b' :2 }\ndef f( a,b ):\n    return a+b\n"
FORMATTED = 'x = {"a": 1, "b": 2}\n\n\ndef f(a, b):\n    return a + b\n'


async def test_a_written_file_is_formatted_the_result_says_so_and_undo_restores_it(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, format={".py": f"{RUFF} format {{file}}"})
    (isolated / "mod.py").write_text("old = 1\n")
    fake_llm.script(write("mod.py", UGLY), Text("written"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "write the module")
        assert result is not None and result.outcome == "stop"
        assert (isolated / "mod.py").read_text() == FORMATTED
        told = tool_results(fake_llm.requests[1])[-1]
        assert "mod.py was reformatted by" in told and "ruff format" in told
        assert "read it again before editing it" in told
        # Every view's diff (the app's tool line, ACP's edit diff) is of the file as it is.
        (part,) = [
            p
            for m in await engine.ctx.db.all_messages(session.id)
            for p in m.parts
            if getattr(p, "tool", None) == "write"
        ]
        diff = part.state.metadata["diff"]
        assert '+x = {"a": 1, "b": 2}' in diff and "'a':1" not in diff, diff
        from agent_tui.acp.tool_calls import diff_content

        shown = diff_content(str(isolated / "mod.py"), diff)
        assert shown is not None and shown.new_text == FORMATTED
        await turns.undo(await engine.scope(session.id))
    assert (isolated / "mod.py").read_text() == "old = 1\n", "as before the edit"


async def test_a_file_already_formatted_or_without_a_formatter_gets_no_note(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, format={"py": [RUFF, "format", "{file}"]})
    fake_llm.script(write("ok.py", FORMATTED), write("notes.txt", "a  b\n"), Text("done"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "write both")
    assert "[format]" not in tool_results(fake_llm.requests[1])[-1]
    assert "[format]" not in tool_results(fake_llm.requests[2])[-1]
    assert (isolated / "notes.txt").read_text() == "a  b\n"


async def test_a_failing_or_missing_formatter_is_a_one_line_note_and_the_edit_stands(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(
        isolated,
        fake_llm,
        format={".py": f"{RUFF} format {{file}}", ".js": "no-such-formatter-xyz {file}"},
    )
    fake_llm.script(write("bad.py", "def (:\n"), write("app.js", "let a=1\n"), Text("done"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "write them")
        assert result is not None and result.outcome == "stop"
    syntax = tool_results(fake_llm.requests[1])[-1]
    missing = tool_results(fake_llm.requests[2])[-1]
    for told in (syntax, missing):
        (note,) = [line for line in told.splitlines() if line.startswith("[format]")]
        assert "could not format" in note
    assert (isolated / "bad.py").read_text() == "def (:\n"
    assert (isolated / "app.js").read_text() == "let a=1\n"
