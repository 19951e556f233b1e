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

`--processes`: the same work (prepare_at 0.8 only) with each turn a separate `python -m
agent_tui run [--continue]` process started when the previous one has exited, as a script
would; a summary still being written when `run` exits goes on in the relay, which
saves it (context/preparing.py). The fake server and its request log stay in this process. A
compaction at a turn's start is measured from the process's launch, against the launch ->
first request of the turns that start without one. Also: how long each `run` took and
who was preparing a summary when it exited (the bench waits for it).

    .venv/bin/python bench/bench_prepared.py [--scale 1.0] [--turns 4] [--calls 40] [--lines 100]
    .venv/bin/python bench/bench_prepared.py --processes [--turns 4] [--calls 40] [--lines 100]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import prepared_processes
from own_project import own_project
from prepared_processes import (
    RunProcess,
    Watcher,
    process_env,
    read_back,
    run_turn,
    wait_for_preparers,
)

from agent_tui.config.settings import (
    CompactionConfig,
    Config,
    ModelConfig,
    ModelLimit,
    ProviderConfig,
)
from agent_tui.engine_context import EngineContext
from agent_tui.provider.limits import Prices, load_model_info
from agent_tui.records import PreparedSummary
from agent_tui.session.engine import Engine
from agent_tui.storage.db import Database
from tests.engine_helpers import is_summary_request, text_of
from tests.fake_anthropic import Call, FakeAnthropic, Text, ToolUse

MODEL = "anthropic/claude-sonnet-4-5"
WINDOW = ModelLimit(context=60_000, output=8_000)  # usable 52,000
PREPARE_AT = 0.8
GENERATOR = """import sys
n, lines = int(sys.argv[1]), int(sys.argv[2])
for line in range(lines):
    if line == n % lines:
        print(f"MARKER-{n:03d} the key fact of step {n} is {n * 7919 % 10007}")
    else:
        print(f"step {n:03d} line {line:03d}: some output value={n * 31 + line}")
"""


@dataclass
class Arrival:
    at: float
    body: dict[str, Any]
    turn: int


@dataclass
class SlowModel:
    """Answers by what it is asked; sleeps like a real model before answering."""

    calls_per_turn: int
    step_seconds: float
    summary_seconds: float
    lines: int = 100
    """Lines each bash call prints (100: ~1.1k tokens a step)."""
    made: int = 0
    turn: int = 0
    turn_made: int = 0
    summaries: int = 0
    crossing: int | None = None
    """End a turn this many steps after a summary was asked in it (--crossing)."""
    turn_cap: int | None = None
    arrivals: list[Arrival] = field(default_factory=list)
    summary_replies: dict[int, float] = field(default_factory=dict)
    """When each summary's answer was sent, by its number (1, 2, … in order asked)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_turn(self, turn: int) -> None:
        with self.lock:
            self.turn, self.turn_made, self.turn_cap = turn, 0, None

    def respond(self, body: dict[str, Any]) -> Text | ToolUse:
        with self.lock:
            self.arrivals.append(Arrival(time.monotonic(), body, self.turn))
            summary = is_summary_request(body)
            if summary:
                self.summaries += 1
                written = self.summaries
                if self.crossing is not None and self.turn_cap is None:
                    self.turn_cap = self.turn_made + self.crossing
            else:
                cap = min(self.calls_per_turn, self.turn_cap or self.calls_per_turn)
                n = self.made if self.turn_made < cap else None
                if n is not None:
                    self.made += 1
                    self.turn_made += 1
        if summary:
            time.sleep(self.summary_seconds)
            with self.lock:
                self.summary_replies[written] = time.monotonic()
            return Text(f"SUMMARY {written}: " + "progress " * 300)
        time.sleep(self.step_seconds)
        if n is None:
            return Text("This turn's steps are done.")
        command = json.dumps({"command": f"python3 gen.py {n} {self.lines}"})
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
    at_turn_start: list[bool] = field(default_factory=list)
    """Per compaction: before a turn's first step (measured from the process's launch)."""
    runs: list[RunProcess] = field(default_factory=list)
    lead_in: float | None = None
    around: list[tuple[float, float]] = field(default_factory=list)
    summaries: list[tuple[float, float | None, int]] = field(default_factory=list)
    """(asked, answered, turn running when asked), in s since the first turn started."""
    left_behind: list[str] = field(default_factory=list)
    asked_at: list[int] = field(default_factory=list)
    """Per prepared summary: the prompt tokens of the step that started it."""
    preparers: list[tuple[str, float, float]] = field(default_factory=list)
    """(Processes) every preparer seen: who, first and last seen (s)."""


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


@dataclass
class Stalls:
    """The request log cut at the compactions."""

    stalls: list[float]
    at_turn_start: list[bool]
    normal: float
    afters: list[dict[str, Any]]
    around: list[tuple[float, float]] = field(default_factory=list)
    """Per compaction: (the last step request before it, the first after it)."""
    lead_in: float | None = None
    """(Processes) a `run`'s launch -> its first request, median over turns without a
    compaction before their first step."""


def cut(arrivals: list[Arrival], launches: list[float] | None = None) -> Stalls:
    """Per compaction, the last step request before it -> the first after it, minus a
    normal step's interval. With `launches` (each turn a process), a compaction before a
    turn's first step is measured from the process's launch, minus the launch -> first
    request of the turns that start without one."""
    steps = [a for a in arrivals if not is_summary_request(a.body)]
    gaps: list[float] = []
    lead_ins: list[float] = []
    raw: list[tuple[float, bool]] = []
    around: list[tuple[float, float]] = []
    afters: list[dict[str, Any]] = []
    for before, after in itertools.pairwise(steps):
        at_start = launches is not None and after.turn != before.turn
        since = launches[after.turn] if at_start and launches else before.at
        compacted = summary_of(after.body) != summary_of(before.body)
        if compacted:
            raw.append((after.at - since, at_start))
            afters.append(after.body)
            around.append((before.at, after.at))
        else:
            (lead_ins if at_start else gaps).append(after.at - since)
    if launches is not None and steps:
        lead_ins.append(steps[0].at - launches[0])
    normal = statistics.median(gaps)
    lead_in = statistics.median(lead_ins) if lead_ins else normal
    stalls = [t - (lead_in if at_start else normal) for t, at_start in raw]
    starts = [at_start for _, at_start in raw]
    lead_in = lead_in if launches is not None else None
    return Stalls(stalls, starts, normal, afters, around, lead_in)


def outcome(
    label: str,
    model: SlowModel,
    cuts: Stalls,
    compactions: int,
    rows: list[PreparedSummary],
    cost: float,
    wall: float,
) -> Run:
    return Run(
        label=label,
        stalls=cuts.stalls,
        normal_step=cuts.normal,
        prompts_after=[len(json.dumps(after)) // 4 for after in cuts.afters],
        compactions=compactions,
        prepared=len(rows),
        used=sum(p.status == "used" for p in rows),
        discarded=sum(p.status == "discarded" for p in rows),
        cost=cost,
        fate=marker_fate([a.body for a in model.arrivals], cuts.afters, model.made),
        wall=wall,
        asked_at=[getattr(p, "asked_at", 0) for p in rows],  # 0: a build before the field
        at_turn_start=cuts.at_turn_start,
        lead_in=cuts.lead_in,
        around=cuts.around,
    )


async def run(label: str, prepare_at: float, args: argparse.Namespace, root: Path) -> Run:
    project = root / label
    project.mkdir()
    (project / "gen.py").write_text(GENERATOR, encoding="utf-8")
    os.environ["AGENT_TUI_DATA_DIR"] = str(project / "data")
    model = SlowModel(args.calls, 2.0 * args.scale, 15.0 * args.scale, args.lines)
    prices = (await load_model_info(MODEL, Config())).prices
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
                model.next_turn(turn)
                result = await engine.prompt(session.id, f"Turn {turn}: run the next steps.")
                assert result is not None and result.outcome == "stop", result
                compactions += result.compactions
            wall = time.monotonic() - started
            rows = await db.prepared_summaries(session.id)
            await engine.close()
        finally:
            await db.close()
        usages = list(server.usages)
    cost = input_cost(usages, prices)
    return outcome(label, model, cut(model.arrivals), compactions, rows, cost, wall)


# ---- --processes: each turn a `run` process -----------------------------------------------


def process_config(base_url: str, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "model": MODEL,
        "provider": {"anthropic": {"api_base": base_url, "api_key": "bench"}},
        "models": {MODEL: {"limit": WINDOW.model_dump(exclude_none=True)}},
        "permission": {"bash": "allow"},
        "max_steps": args.calls + 5,
        "compaction": {"prepare_at": PREPARE_AT},
    }


async def run_processes(args: argparse.Namespace, root: Path) -> Run:
    project = root / "project"
    project.mkdir()
    (project / "gen.py").write_text(GENERATOR, encoding="utf-8")
    model = SlowModel(args.calls, 2.0 * args.scale, 15.0 * args.scale, args.lines)
    model.crossing = args.crossing
    prices = (await load_model_info(MODEL, Config())).prices
    with FakeAnthropic() as server:
        server.responder = model.respond
        config = process_config(server.base_url, args)
        (project / "agent-tui.json").write_text(json.dumps(config), encoding="utf-8")
        own_project(project, root / "user-config")
        runs: list[RunProcess] = []
        with Watcher(root / "data") as watcher:
            try:
                for turn in range(args.turns):
                    model.next_turn(turn)
                    runs.append(await asyncio.to_thread(run_turn, project, root, turn))
            finally:  # nothing outlives the bench, a failed run included
                left_behind = await asyncio.to_thread(wait_for_preparers, project, root / "data")
                stop = [sys.executable, "-m", "agent_tui", "relay", "--stop"]
                await asyncio.to_thread(subprocess.run, stop, env=process_env(root))
        usages = list(server.usages)
    compactions, rows = await read_back(root / "data")
    launches = [r.launched for r in runs]
    result = outcome(
        f"processes: each turn a `run --continue` (prepare_at 0.8, AGENT_TUI_RELAY "
        f"{args.relay}, crossing {args.crossing}, {args.lines} lines a step)",
        model,
        cut(model.arrivals, launches),
        compactions,
        rows,
        input_cost(usages, prices),
        runs[-1].exited - runs[0].launched,
    )
    result.runs = runs
    result.left_behind = left_behind
    result.preparers = [
        (who, first - launches[0], last - launches[0])
        for who, (first, last) in sorted(watcher.seen.items(), key=lambda item: item[1])
    ]
    asked = [a for a in model.arrivals if is_summary_request(a.body)]
    replies = model.summary_replies
    result.summaries = [
        (a.at - launches[0], replies[n] - launches[0] if n in replies else None, a.turn)
        for n, a in enumerate(asked, start=1)
    ]
    return result


def report(result: Run) -> None:
    stalls = ", ".join(
        f"{s:.1f}{' (at a turn start)' if at_start else ''}"
        for s, at_start in itertools.zip_longest(result.stalls, result.at_turn_start)
    )
    prompts = ", ".join(f"{p:,}" for p in result.prompts_after) or "none"
    print(f"[{result.label}] {result.compactions} automatic compactions; wall {result.wall:.0f} s")
    print(f"  normal step interval            {result.normal_step:.2f} s")
    print(f"  stall beyond a normal step, s   {stalls or 'none'}")
    print(f"  prompt after compaction, ~tok   {prompts}")
    print(f"  summaries prepared/used/discarded {result.prepared}/{result.used}/{result.discarded}")
    print(f"  total input cost                ${result.cost:.4f}")
    print(f"  markers                         {result.fate}")
    if any(result.asked_at):
        threshold = WINDOW.context - WINDOW.output
        asked = ", ".join(f"{t:,} ({t / threshold:.2f})" for t in result.asked_at)
        print(f"  summaries asked at, tokens      {asked} of the threshold {threshold:,}")
    if result.runs:
        report_processes(result)


def report_processes(result: Run) -> None:
    zero = result.runs[0].launched
    print(f"  run launch -> first request     {result.lead_in:.2f} s (median)")
    for turn, r in enumerate(result.runs):
        left = ", ".join(holder.describe() for holder in r.preparers)
        print(
            f"  run {turn}: {r.launched - zero:6.1f} -> {r.exited - zero:6.1f} s, took "
            f"{r.exited - r.launched:5.1f} s; preparer running at exit: {left or 'none'}"
        )
    for who, first, last in result.preparers:
        print(f"  preparer {who}: seen {first:6.1f} -> {last:6.1f} s")
    for n, (asked, answered, turn) in enumerate(result.summaries, start=1):
        done = f"{answered:6.1f}" if answered is not None else "   n/a"
        print(f"  summary {n}: asked {asked:6.1f} s, answered {done} s (during run {turn})")
    for n, (before, after) in enumerate(result.around, start=1):
        print(
            f"  compaction {n}: last step request before {before - zero:6.1f} s, "
            f"first after {after - zero:6.1f} s"
        )
    print(f"  processes left at the end       {'; '.join(result.left_behind) or 'none'}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the model's delays")
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--calls", type=int, default=40, help="bash calls per turn")
    parser.add_argument(
        "--lines",
        type=int,
        default=100,
        help="lines each bash call prints (100: ~1.1k tokens a step; 200: ~2.3k, so that "
        "prepare_at's lead is fewer steps than a summary takes)",
    )
    parser.add_argument(
        "--processes", action="store_true", help="each turn a separate `run --continue` process"
    )
    parser.add_argument(
        "--crossing",
        type=int,
        help="(--processes) a turn ends this many steps after a summary was asked in it: the "
        "summary is still being written when `run` exits, and the next run needs it soon",
    )
    parser.add_argument(
        "--relay",
        default="30",
        help="(--processes) the runs' AGENT_TUI_RELAY: idle minutes of the relay, 0 none",
    )
    parser.add_argument("--keep", type=Path, help="(--processes) work in this new directory, kept")
    args = parser.parse_args()
    if args.processes:
        prepared_processes.RELAY[0] = args.relay
        with tempfile.TemporaryDirectory() as tmp:
            if args.keep:
                args.keep.mkdir(parents=True)
            result = await run_processes(args, (args.keep or Path(tmp)).resolve())
        report(result)
        longest, lost = max(result.stalls, default=0.0), result.fate["lost"]
        print(
            f"verdict: longest stall {longest:.1f} s beyond a step (goal <= 2) "
            f"{'MET' if longest <= 2 else 'MISSED'}; markers lost {lost} "
            f"{'MET' if lost == 0 else 'MISSED'}"
        )
        return
    with tempfile.TemporaryDirectory() as tmp:
        before = await run("waiting (prepare_at 0)", 0.0, args, Path(tmp))
        report(before)
        after = await run(f"prepared (prepare_at {PREPARE_AT})", PREPARE_AT, args, Path(tmp))
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
