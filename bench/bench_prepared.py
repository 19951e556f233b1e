"""How long the work stands still at each automatic compaction, with summaries prepared in
the background (compaction.prepare_at 0.8) and without (prepare_at 0, as before).

A fake model as slow as a real one: each step waits ~2 s before it answers, each summary
~15 s (`--scale` shrinks both for a quick look). 4 turns x 40 bash calls of ~1k tokens
each (a marker line in every output) at a 60,000-token window, through the real engine
and litellm's `anthropic/` route against tests/fake_anthropic.py, whose prefix cache
bills like Anthropic's; priced with litellm's map for claude-sonnet-4-5.

Per automatic compaction: the stall (the last step request before it -> the first step
request after it, minus a normal step's interval), the prompt right after it. Then the
prepared / used / discarded summaries, the total input cost, and where every marker went
(a summariser's input, the first request after a compaction, or the final request).
Goals: longest stall <= 2 s beyond a normal step; cost <= 1.05x of without; 0 lost.

    .venv/bin/python bench/bench_prepared.py [--scale 1.0] [--turns 4] [--calls 40]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from agent_tui.config import CompactionConfig, Config, ModelConfig, ModelLimit, ProviderConfig
from agent_tui.engine_context import EngineContext
from agent_tui.provider.limits import Prices, load_model_info
from agent_tui.session.engine import Engine
from agent_tui.storage.db import Database
from tests.engine_helpers import is_summary_request, text_of
from tests.fake_anthropic import Call, FakeAnthropic, Text, ToolUse

MODEL = "anthropic/claude-sonnet-4-5"
WINDOW = ModelLimit(context=60_000, output=8_000)  # usable 52,000
GENERATOR = """import sys
n = int(sys.argv[1])
for line in range(100):
    if line == n % 100:
        print(f"MARKER-{n:03d} the key fact of step {n} is {n * 7919 % 10007}")
    else:
        print(f"step {n:03d} line {line:03d}: some output value={n * 31 + line}")
"""


@dataclass
class SlowModel:
    """Answers by what it is asked; sleeps like a real model before answering."""

    calls_per_turn: int
    step_seconds: float
    summary_seconds: float
    made: int = 0
    turn_made: int = 0
    summaries: int = 0
    arrivals: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def respond(self, body: dict[str, Any]) -> Text | ToolUse:
        with self.lock:
            self.arrivals.append((time.monotonic(), body))
            summary = is_summary_request(body)
            if summary:
                self.summaries += 1
                written = self.summaries
            else:
                n = self.made if self.turn_made < self.calls_per_turn else None
                if n is not None:
                    self.made += 1
                    self.turn_made += 1
        if summary:
            time.sleep(self.summary_seconds)
            return Text(f"SUMMARY {written}: " + "progress " * 300)
        time.sleep(self.step_seconds)
        if n is None:
            return Text("This turn's steps are done.")
        command = json.dumps({"command": f"python3 gen.py {n}"})
        return ToolUse([Call("bash", command)], text=f"Step {n}.")


@dataclass
class Run:
    label: str
    stalls: list[float]
    normal_step: float
    prompts_after: list[int]
    compactions: int
    prepared: int
    used: int
    discarded: int
    cost: float
    fate: dict[str, int]
    wall: float


def input_cost(usages: list[dict[str, int]], prices: Prices) -> float:
    return sum(
        u["input_tokens"] * prices.input
        + u["cache_read_input_tokens"] * prices.cache_read
        + u["cache_creation_input_tokens"] * prices.cache_write
        for u in usages
    )


def summary_of(body: dict[str, Any]) -> str | None:
    """The summary a step request starts from, if any (the history after a compaction)."""
    for message in body["messages"][:3]:
        text = text_of(message)
        if text.startswith("SUMMARY "):
            return text
    return None


def marker_fate(bodies: list[dict[str, Any]], afters: list[dict[str, Any]], steps: int) -> dict:
    summaries = [json.dumps(b["messages"]) for b in bodies if is_summary_request(b)]
    after_text = [json.dumps(b["messages"]) for b in afters]
    final = json.dumps([b for b in bodies if not is_summary_request(b)][-1]["messages"])
    fate = {"summariser": 0, "tail": 0, "final": 0, "lost": 0}
    for n in range(steps):
        tag = f"MARKER-{n:03d}"
        if any(tag in s for s in summaries):
            fate["summariser"] += 1
        elif any(tag in a for a in after_text):
            fate["tail"] += 1
        elif tag in final:
            fate["final"] += 1
        else:
            fate["lost"] += 1
    return fate


async def run(label: str, prepare_at: float, args: argparse.Namespace, root: Path) -> Run:
    project = root / label
    project.mkdir()
    (project / "gen.py").write_text(GENERATOR, encoding="utf-8")
    os.environ["AGENT_TUI_DATA_DIR"] = str(project / "data")
    model = SlowModel(args.calls, 2.0 * args.scale, 15.0 * args.scale)
    prices = asyncio.run(load_model_info(MODEL, Config())).prices
    with FakeAnthropic() as server:
        server.responder = model.respond
        config = Config(
            model=MODEL,
            provider={"anthropic": ProviderConfig(api_base=server.base_url, api_key="bench")},
            models={MODEL: ModelConfig(limit=WINDOW)},
            permission={"bash": "allow"},
            max_steps=args.calls + 5,
            compaction=CompactionConfig(prepare_at=prepare_at),
        )
        db = await Database.open(project / "data" / "agent-tui.db")
        started = time.monotonic()
        try:
            engine = Engine(EngineContext(db=db, config=config))
            session = await engine.new_session(project)
            compactions = 0
            for turn in range(args.turns):
                model.turn_made = 0
                result = await engine.prompt(session.id, f"Turn {turn}: run the next steps.")
                assert result is not None and result.outcome == "stop", result
                compactions += result.compactions
            wall = time.monotonic() - started
            rows = await db.prepared_summaries(session.id)
            await engine.close()
        finally:
            await db.close()
        usages = list(server.usages)
    steps = [(t, b) for t, b in model.arrivals if not is_summary_request(b)]
    gaps: list[float] = []
    stalls: list[float] = []
    prompts_after: list[int] = []
    afters: list[dict[str, Any]] = []
    for (t0, before), (t1, after) in itertools.pairwise(steps):
        if summary_of(after) != summary_of(before):
            stalls.append(t1 - t0)
            afters.append(after)
            prompts_after.append(len(json.dumps(after)) // 4)
        else:
            gaps.append(t1 - t0)
    normal = statistics.median(gaps)
    bodies = [b for _, b in model.arrivals]
    return Run(
        label=label,
        stalls=[s - normal for s in stalls],
        normal_step=normal,
        prompts_after=prompts_after,
        compactions=compactions,
        prepared=len(rows),
        used=sum(p.status == "used" for p in rows),
        discarded=sum(p.status == "discarded" for p in rows),
        cost=input_cost(usages, prices),
        fate=marker_fate(bodies, afters, model.made),
        wall=wall,
    )


def report(result: Run) -> None:
    stalls = ", ".join(f"{s:.1f}" for s in result.stalls) or "none"
    prompts = ", ".join(f"{p:,}" for p in result.prompts_after) or "none"
    print(f"[{result.label}] {result.compactions} automatic compactions; wall {result.wall:.0f} s")
    print(f"  normal step interval            {result.normal_step:.2f} s")
    print(f"  stall beyond a normal step, s   {stalls}")
    print(f"  prompt after compaction, ~tok   {prompts}")
    print(f"  summaries prepared/used/discarded {result.prepared}/{result.used}/{result.discarded}")
    print(f"  total input cost                ${result.cost:.4f}")
    print(f"  markers                         {result.fate}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the model's delays")
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--calls", type=int, default=40, help="bash calls per turn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before = await run("waiting (prepare_at 0)", 0.0, args, Path(tmp))
        report(before)
        after = await run("prepared (prepare_at 0.8)", 0.8, args, Path(tmp))
        report(after)
    longest = max(after.stalls, default=0.0)
    ratio = after.cost / before.cost
    lost = after.fate["lost"]
    print(
        f"verdict: longest stall {longest:.1f} s beyond a step (goal <= 2; waiting: "
        f"{max(before.stalls, default=0.0):.1f}) {'MET' if longest <= 2 else 'MISSED'}; "
        f"cost {ratio:.3f}x (goal <= 1.05) {'MET' if ratio <= 1.05 else 'MISSED'}; "
        f"markers lost {lost} {'MET' if lost == 0 else 'MISSED'}"
    )


if __name__ == "__main__":
    asyncio.run(main())
