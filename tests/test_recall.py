"""The recall tool end to end: text from before two compactions and a pruned output's
original are found through the FTS5 index, and one original comes back in full by id."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agent_tui.step.messages import CLEARED_OUTPUT
from agent_tui.storage.search import fts_query
from tests.conftest import write_config
from tests.engine_helpers import open_engine, tool_results
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls


def bash(command: str) -> ToolCalls:
    return ToolCalls([Call("bash", json.dumps({"command": command}))])


def recall(**arguments: object) -> ToolCalls:
    return ToolCalls([Call("recall", json.dumps(arguments))])


async def test_recall_reaches_across_two_compactions_and_returns_originals(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm)
    fake_llm.script(
        bash("echo 'deploy failed: ALPHA-7731 missing /srv/alpha.conf'"),
        Text("noted"),
        Text("FIRST SUMMARY"),
        bash("echo 'BETA-4410 ok'"),
        Text("second turn done"),
        Text("SECOND SUMMARY"),
        recall(query="ALPHA-7731"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "deploy the alpha service")
        await engine.compact(session.id)
        await engine.prompt(session.id, "now beta")
        await engine.compact(session.id)
        # The model asks for a fact only the first span had.
        found_id: dict[str, str] = {}

        def answer(body: dict) -> ToolCalls | Text:
            result = tool_results(body)[-1]
            if "id" not in found_id:
                found_id["id"] = re.search(r"\[(prt_\w+)\] tool bash", result).group(1)
                return recall(query="x", id=found_id["id"])
            return Text("the alpha deploy failed on a missing config")

        fake_llm.responder = answer
        result = await engine.prompt(session.id, "why did alpha fail?")
        assert result is not None and result.outcome == "stop", result

    search_result = tool_results(fake_llm.requests[-2])[-1]
    assert "ALPHA-7731 missing /srv/alpha.conf" in search_result
    assert "compacted away" in search_result
    # The first summary never mentioned it: only recall brought it back.
    assert "ALPHA" not in json.dumps(fake_llm.requests[-3]["messages"][:3])
    full = tool_results(fake_llm.requests[-1])[-1]
    assert full.startswith("[prt_") or full.startswith("[msg_")
    assert "Tool bash" in full and "deploy failed: ALPHA-7731 missing /srv/alpha.conf" in full


async def test_a_pruned_output_is_found_and_returned_in_full(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, compaction={"prune_protect": 0, "prune_minimum": 10})
    big = "python3 -c \"print('GAMMA-991 ' + 'filler ' * 400)\""
    for turn in range(4):
        fake_llm.script(bash(big if turn == 0 else f"echo turn {turn}"), Text(f"done {turn}"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        for turn in range(4):  # the first turn's output is pruned after the third
            await engine.prompt(session.id, f"turn {turn}")
        pruned_view = next(
            m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"
        )
        assert pruned_view.startswith(CLEARED_OUTPUT)
        part_id = re.search(r"recall id (prt_\w+)", pruned_view).group(1)
        hits = await engine.ctx.db.search_parts(session.id, "GAMMA-991")
        assert [hit.part_id for hit in hits] == [part_id]
        assert hits[0].pruned and not hits[0].compacted and hits[0].tool == "bash"
        original = await engine.ctx.db.find_original(session.id, part_id)
        assert original is not None
        assert "GAMMA-991 filler" in original.parts[0].state.output  # type: ignore[union-attr]
        # Another session cannot see it.
        other = await engine.new_session(isolated)
        assert await engine.ctx.db.search_parts(other.id, "GAMMA-991") == []
        assert await engine.ctx.db.find_original(other.id, part_id) is None


def test_queries_are_quoted_so_fts_syntax_is_literal() -> None:
    assert fts_query('disk "No space left" NEAR') == '"disk" "No space left" "NEAR"'
    assert fts_query("a OR b", any_term=True) == '"a" OR "OR" OR "b"'
    assert fts_query('say "hi') == '"say" """hi"'
    assert fts_query("   ") is None
