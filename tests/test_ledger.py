"""The file ledger through the real engine: tools, snapshots (real git), two compactions,
and what the next request restates after the summary."""

from __future__ import annotations

import json
from pathlib import Path

from agent_tui.context.ledger import span_ledger
from agent_tui.records import (
    AssistantMessage,
    FileChange,
    FileRecord,
    MessageWithParts,
    PatchPart,
    ToolPart,
    ToolStateCompleted,
)
from agent_tui.step.after_summary import LEDGER_HEADER, ledger_text
from tests.conftest import write_config
from tests.engine_helpers import conversation, is_summary_request, open_engine, text_of
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls


def call(name: str, **arguments: str) -> Call:
    return Call(name, json.dumps(arguments))


async def test_the_ledger_lists_every_file_after_two_compactions(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    # No verbatim tail: every step is summarised, so every file is in the ledger.
    write_config(isolated, fake_llm, compaction={"tail_tokens": 0})
    (isolated / "README.md").write_text("# project\n\nabout it\n", encoding="utf-8")
    (isolated / "old.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    (isolated / "docs").mkdir()
    (isolated / "docs" / "guide.md").write_text("guide\n", encoding="utf-8")
    app = str(isolated / "src" / "app.py")
    fake_llm.script(
        ToolCalls(
            [
                call("write", file_path=app, content="a = 1\nb = 2\nc = 3\n"),
                call("read", file_path=str(isolated / "README.md")),
                call("bash", command="rm old.txt"),
                call("bash", command="printf 'x\\ny\\n' > made.txt"),
            ]
        ),
        Text("turn 1 done"),
        Text("SUMMARY-1"),
        ToolCalls(
            [
                call("edit", file_path=app, old_string="b = 2", new_string="b = 20"),
                call("bash", command="rm made.txt"),
                call("read", file_path=str(isolated / "docs" / "guide.md")),
            ]
        ),
        Text("turn 2 done"),
        Text("SUMMARY-2"),
        Text("turn 3 answer"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "turn 1")
        await engine.compact(session.id)
        await engine.prompt(session.id, "turn 2")
        await engine.compact(session.id)
        await engine.prompt(session.id, "turn 3")
        export = await engine.ctx.db.export_session(session.id)
    assert not (isolated / "old.txt").exists() and not (isolated / "made.txt").exists()
    expected = [
        "- README.md — read",
        "- docs/guide.md — read",
        "- made.txt — created, deleted (+2 -2)",
        "- old.txt — deleted (+0 -3)",
        "- src/app.py — created, edited (+4 -1)",
    ]
    after = conversation(fake_llm.requests[-1])
    assert text_of(after[1]) == "SUMMARY-2"
    restated = text_of(after[2])
    assert LEDGER_HEADER + "\n" + "\n".join(expected) in restated
    # Each summary stores its ledger: the second one merges the first one's.
    summaries = [
        m.info for m in export.messages if isinstance(m.info, AssistantMessage) and m.info.summary
    ]
    first, second = summaries
    assert [r.path for r in first.ledger] == ["README.md", "made.txt", "old.txt", "src/app.py"]
    assert next(r for r in first.ledger if r.path == "src/app.py").actions == ["created"]
    assert ledger_text(second.ledger).splitlines()[1:] == expected
    # The summariser is told the ledger exists (so it does not list files for it).
    summary_requests = [r for r in fake_llm.requests if is_summary_request(r)]
    assert len(summary_requests) == 2
    for request in summary_requests:
        instruction = text_of(request["messages"][-1])
        assert "file ledger of every file read, created, edited or deleted" in instruction
    # Snapshots recorded each step's changes with their line counts.
    patches = [p for m in export.messages for p in m.parts if isinstance(p, PatchPart)]
    assert FileChange(path="old.txt", status="deleted", added=0, removed=3) in patches[0].changes


def test_without_snapshots_edit_and_write_report_their_own_changes(tmp_path: Path) -> None:
    def tool(name: str, path: str, **metadata: object) -> ToolPart:
        return ToolPart(
            id=f"prt_{name}{len(metadata)}",
            session_id="ses",
            message_id="msg_1",
            call_id="c",
            tool=name,
            state=ToolStateCompleted(
                input={"file_path": path}, output="Wrote it.", metadata=metadata
            ),
        )

    step = MessageWithParts(
        info=AssistantMessage(id="msg_1", session_id="ses", parent_id="msg_0", finish="stop"),
        parts=[
            tool(
                "write",
                str(tmp_path / "a.py"),
                files=[str(tmp_path / "a.py")],
                created=True,
                additions=3,
                deletions=0,
            ),
            tool(
                "edit",
                str(tmp_path / "a.py"),
                files=[str(tmp_path / "a.py")],
                additions=1,
                deletions=1,
            ),
            tool("edit", "/elsewhere/b.py", files=["/elsewhere/b.py"], additions=2, deletions=5),
        ],
    )
    earlier = AssistantMessage(
        id="msg_0",
        session_id="ses",
        parent_id="msg_q",
        summary=True,
        finish="stop",
        ledger=[
            FileRecord(path="a.py", actions=["read"]),
            FileRecord(path="gone.py", actions=["deleted"], removed=9),
        ],
    )
    ledger = span_ledger([MessageWithParts(info=earlier), step], tmp_path)
    assert [(r.path, r.actions, r.added, r.removed) for r in ledger] == [
        ("/elsewhere/b.py", ["edited"], 2, 5),
        ("a.py", ["read", "created", "edited"], 4, 1),
        ("gone.py", ["deleted"], 0, 9),
    ]
    # A reverted summary's ledger is not merged (its span is back in the history).
    reverted = earlier.model_copy(update={"reverted": True})
    assert [r.path for r in span_ledger([MessageWithParts(info=reverted)], tmp_path)] == []
