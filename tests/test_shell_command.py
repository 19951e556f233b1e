"""`!command`: the person's shell command is shown as a tool line and reaches the model
with the next message, without a model call of its own."""

from __future__ import annotations

from pathlib import Path

from agent_tui.records import TextPart, ToolPart, ToolStateCompleted
from agent_tui.session.sending import run_shell
from tests.conftest import write_config
from tests.engine_helpers import open_engine, text_of
from tests.fake_openai import FakeOpenAI, Text


async def test_shell_output_reaches_the_next_request(isolated: Path, fake_llm: FakeOpenAI) -> None:
    # bash is "ask" by default: the person's own command must not need approval.
    write_config(isolated, fake_llm, permission={})
    fake_llm.script(Text("I see hi."))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        part = await run_shell(await engine.scope(session.id), "echo hi-from-shell")
        assert fake_llm.requests == []  # the ! itself calls no model
        assert isinstance(part.state, ToolStateCompleted)
        assert part.state.output.strip() == "hi-from-shell"
        await engine.prompt(session.id, "what did it print?")
        messages = await engine.ctx.db.all_messages(session.id)
    (request,) = fake_llm.requests
    sent = "\n".join(text_of(m) for m in request["messages"] if m["role"] == "user")
    assert "echo hi-from-shell" in sent and "hi-from-shell\n</output>" in sent
    assert sent.index("</output>") < sent.index("what did it print?")
    first = messages[0]
    assert [type(p) for p in first.parts] == [ToolPart, TextPart]
    assert isinstance(first.parts[1], TextPart) and first.parts[1].synthetic
