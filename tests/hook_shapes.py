"""Claude Code's hook inputs as shapes: what agent-tui sends a hook is compared, field by
field, with what Claude Code 2.1.197 sent its hooks (tests/fixtures/claude_code_hooks,
recorded by record.py there). A shape is a field's JSON type (object, array, string,
number, bool, null), an object's the shapes of its fields, an array's that of its first
element (unless the two are tagged objects of different `type`s, two variants of a union):
ids, paths and text differ between any two runs and are not compared. Every field
Claude Code sends, agent-tui sends with the same type, but those `EXEMPT` names, each of
which docs/wiring.md's table of differences lists with its reason."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).parent / "fixtures" / "claude_code_hooks"
WIRING = Path(__file__).parent.parent / "docs" / "wiring.md"
DIFFERENCES_HEADING = "### Where agent-tui differs from Claude Code on purpose"

EXEMPT = frozenset(
    {
        "effort",
        "model",
        "background_tasks",
        "session_crons",
        "tool_input.output_mode",
        "tool_input.-n",
        "tool_response.toolStats",
        *(
            f"tool_response.usage.{name}"
            for name in (
                "server_tool_use",
                "service_tier",
                "cache_creation",
                "inference_geo",
                "iterations",
                "speed",
            )
        ),
    }
)
"""Fields (by their path in the event) Claude Code sends and agent-tui does not, on
purpose: each is named in docs/wiring.md's table, which says why."""

Key = tuple[str, str, bool]
"""An event as the comparison pairs them: its name, its tool, whether in a subagent."""


def key(event: dict[str, Any]) -> Key:
    return event["hook_event_name"], event.get("tool_name", ""), "agent_id" in event


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: a bool is an int in Python
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def differences(theirs: Any, ours: Any, path: str = "") -> list[str]:
    """Where `ours` has not the shape of `theirs` (Claude Code's); one line each."""
    where = path or "the event"
    if json_type(theirs) != json_type(ours):
        return [f"{where} is {json_type(ours)}, Claude Code's is {json_type(theirs)}"]
    if isinstance(theirs, list):
        if not theirs or not ours or _variants(theirs[0], ours[0]):
            return []  # nothing to compare an element with
        return differences(theirs[0], ours[0], f"{path}[]")
    if not isinstance(theirs, dict):
        return []
    found = []
    for name, value in theirs.items():
        inner = f"{path}.{name}" if path else name
        if name not in ours:
            found += [] if inner in EXEMPT else [f"{inner} is missing"]
            continue
        if inner in EXEMPT:
            found.append(f"{inner} is exempted but sent: drop the exemption if it always is")
        found += differences(value, ours[name], inner)
    return found


def _variants(theirs: Any, ours: Any) -> bool:
    """Two elements of a list of tagged objects with different tags (`{type:
    "addDirectories", directories}` beside `{type: "addRules", rules}`): each is one of
    the shapes the list may hold, and neither says what the other should have."""
    tags = [x.get("type") if isinstance(x, dict) else None for x in (theirs, ours)]
    return all(isinstance(tag, str) for tag in tags) and tags[0] != tags[1]


def recorded() -> list[dict[str, Any]]:
    """Claude Code's hook inputs, one per fixture file."""
    files = sorted(p for p in RECORDED.glob("*.json") if not p.name.startswith("_"))
    return [json.loads(p.read_text(encoding="utf-8"))["input"] for p in files]


@dataclass
class Comparison:
    compared: set[Key] = field(default_factory=set)
    """The kinds of event agent-tui sent that Claude Code's recording has."""
    problems: list[str] = field(default_factory=list)


def compare_with_recorded(ours: list[dict[str, Any]]) -> Comparison:
    """Each event agent-tui sent beside the recorded event of its kind closest to it in
    shape (a kind's events come in variants: a Grep by its output mode, an
    InstructionsLoaded by why the file was loaded, a PostToolBatch by its tools); kinds
    Claude Code's recording lacks are left out."""
    theirs_by_key: dict[Key, list[dict[str, Any]]] = {}
    for theirs in recorded():
        theirs_by_key.setdefault(key(theirs), []).append(theirs)
    result = Comparison()
    for mine in ours:
        candidates = theirs_by_key.get(key(mine))
        if not candidates:
            continue
        result.compared.add(key(mine))
        found = min((differences(theirs, mine) for theirs in candidates), key=len)
        name, tool, in_subagent = key(mine)
        label = " ".join(filter(None, [name, tool, "(in a subagent)" * in_subagent]))
        lines = [f"{label}: {line}" for line in found]
        result.problems += [line for line in lines if line not in result.problems]
    return result


def exemptions_not_in_wiring() -> list[str]:
    """The exempted field names docs/wiring.md's table of differences does not name."""
    text = WIRING.read_text(encoding="utf-8")
    table = text.split(DIFFERENCES_HEADING, 1)[1].split("\n## ", 1)[0]
    return sorted(p for p in EXEMPT if f"`{p.rsplit('.', 1)[-1]}`" not in table)
