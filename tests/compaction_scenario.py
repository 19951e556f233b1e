"""The long-turn scenario of the compaction-continuity work, shared by its test and
bench/bench_fidelity.py: one request makes the agent run N tool calls at a 20,000-token
window; each output is 50 lines (~750 tokens) with a marker line at its start, middle or
end, so one can tell which facts reached the summariser or the kept tail."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.engine_helpers import is_summary_request
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls

WINDOW = {"limit": {"context": 20_000, "output": 4_000}}  # usable 16,000
USABLE = 16_000
PERSON_REQUEST = (
    "Run gen.py for every step from 0 to {last}, one call each, and keep the numbers it "
    "prints: I need the MARKER lines at the end. Do not skip any step."
)
GENERATOR = """import sys
n = int(sys.argv[1])
where = (0, 25, 49)[n % 3]
for line in range(50):
    if line == where:
        print(f"MARKER-{n:03d} the key fact of step {n} is {n * 7919 % 10007}")
    else:
        print(f"step {n:03d} line {line:02d}: value={n * 31 + line} path=src/mod_{n}/f{line}.py ok")
"""
SUMMARY_WORDS = 300


def marker(n: int) -> str:
    return f"MARKER-{n:03d}"


def prompt_tokens(body: dict[str, Any]) -> int:
    """The fake's way of counting a request (4 characters a token), tools included."""
    return (len(json.dumps(body["messages"])) + len(json.dumps(body.get("tools") or []))) // 4


@dataclass
class Scenario:
    steps: int = 60
    calls_made: int = 0
    summaries: int = 0
    summary_texts: list[str] = field(default_factory=list)

    def install(self, project: Path, server: FakeOpenAI) -> str:
        (project / "gen.py").write_text(GENERATOR, encoding="utf-8")
        server.responder = self.respond
        return PERSON_REQUEST.format(last=self.steps - 1)

    def respond(self, body: dict[str, Any]) -> Text | ToolCalls:
        if is_summary_request(body):
            self.summaries += 1
            text = f"SUMMARY-{self.summaries}: " + "progress detail " * (SUMMARY_WORDS // 2)
            self.summary_texts.append(text)
            return Text(text)
        if self.calls_made >= self.steps:
            return Text("All steps ran; the markers are above.")
        n = self.calls_made
        self.calls_made += 1
        command = json.dumps({"command": f"python3 gen.py {n}"})
        return ToolCalls([Call("bash", command, id=f"call_{n:03d}")], text=f"Step {n}.")


@dataclass
class Compaction:
    """One compaction as the provider saw it."""

    summariser_calls: int
    summariser_input: int  # fake-counted tokens of the summary request(s)
    before: dict[str, Any]  # the last normal request before it
    after: dict[str, Any] | None  # the first normal request after it


def compactions(requests: list[dict[str, Any]]) -> list[Compaction]:
    found: list[Compaction] = []
    index = 0
    while index < len(requests):
        if not is_summary_request(requests[index]):
            index += 1
            continue
        start = index
        while index < len(requests) and is_summary_request(requests[index]):
            index += 1
        found.append(
            Compaction(
                summariser_calls=index - start,
                summariser_input=sum(prompt_tokens(r) for r in requests[start:index]),
                before=requests[start - 1],
                after=requests[index] if index < len(requests) else None,
            )
        )
    return found


def marker_fate(requests: list[dict[str, Any]], steps: int) -> dict[str, int]:
    """For each step's marker: whether it reached a summary request, a kept tail (the first
    request after a compaction), only the final request, or nothing (lost)."""
    summary_bodies = [json.dumps(r["messages"]) for r in requests if is_summary_request(r)]
    after_bodies = [json.dumps(c.after["messages"]) for c in compactions(requests) if c.after]
    final = json.dumps(requests[-1]["messages"])
    fate = {"summariser": 0, "tail": 0, "final": 0, "lost": 0}
    for n in range(steps):
        tag = marker(n)
        if any(tag in body for body in summary_bodies):
            fate["summariser"] += 1
        elif any(tag in body for body in after_bodies):
            fate["tail"] += 1
        elif tag in final:
            fate["final"] += 1
        else:
            fate["lost"] += 1
    return fate


# -- planted facts over a long multi-turn session (bench_fidelity --facts) ----------------

FACT_KINDS = ("path", "command", "error", "number")
FACT_GENERATOR = """import json, sys
n = int(sys.argv[1])
facts = json.load(open("facts.json"))
fact = facts.get(str(n))
for line in range(50):
    if fact and line == 25:
        print(fact)
    else:
        print(f"step {n:03d} line {line:02d}: value={n * 31 + line} path=src/mod_{n}/f{line}.py ok")
"""


def planted_fact(kind: str, k: int) -> str:
    """One fact line of a kind; each has a distinctive phrase recall is asked for."""
    return {
        "path": f"wrote the ledger to src/billing/ledger_{k:02d}_final.py",
        "command": f"ran: pytest -k test_refund_{k:02d} --maxfail=1",
        "error": f"ValueError: negative balance in account {7000 + k}",
        "number": f"the checksum of batch {k:02d} is {918273 + k * 37}",
    }[kind]


def fact_query(kind: str, k: int) -> str:
    return {
        "path": f'"ledger_{k:02d}_final"',
        "command": f'"test_refund_{k:02d}"',
        "error": f'"account {7000 + k}"',
        "number": f'"batch {k:02d}"',
    }[kind]


@dataclass
class FactScenario:
    """`turns` requests from the person, each making the agent run `steps_per_turn` tool
    calls; facts of every kind planted in outputs, and a constraint in each request."""

    turns: int = 5
    steps_per_turn: int = 30
    every: int = 4
    calls_made: int = 0
    summaries: int = 0
    facts: dict[int, tuple[str, int]] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return self.turns * self.steps_per_turn

    def install(self, project: Path, server: FakeOpenAI) -> list[str]:
        """Write the generator and its facts; returns the person's requests."""
        lines: dict[str, str] = {}
        for index, step in enumerate(range(2, self.steps, self.every)):
            kind = FACT_KINDS[index % len(FACT_KINDS)]
            self.facts[step] = (kind, index)
            lines[str(step)] = planted_fact(kind, index)
        (project / "facts.json").write_text(json.dumps(lines), encoding="utf-8")
        (project / "gen.py").write_text(FACT_GENERATOR, encoding="utf-8")
        server.responder = self.respond
        return [
            f"Part {turn}: run gen.py for the next {self.steps_per_turn} steps. "
            f"Constraint {turn}: never modify config/prod_{turn:02d}.yaml."
            for turn in range(self.turns)
        ]

    def respond(self, body: dict[str, Any]) -> Text | ToolCalls:
        if is_summary_request(body):
            self.summaries += 1
            return Text(f"SUMMARY-{self.summaries}: " + "progress detail " * 150)
        done_in_turn = self.calls_made % self.steps_per_turn
        turn_over = self.calls_made and done_in_turn == 0 and _ended_turn(body)
        if turn_over or self.calls_made >= self.steps:
            return Text("This part is done.")
        n = self.calls_made
        self.calls_made += 1
        command = json.dumps({"command": f"python3 gen.py {n}"})
        return ToolCalls([Call("bash", command, id=f"call_{n:03d}")], text=f"Step {n}.")


def _ended_turn(body: dict[str, Any]) -> bool:
    """The last message is a tool result: the agent is mid-turn, so the turn has not
    ended yet (one more reply ends it)."""
    return body["messages"][-1]["role"] == "tool"
