"""What a long session keeps through compaction, at a 20,000-token window.

Default: 60 tool calls in one turn. `--facts`: 150 steps over 5 requests with 37 planted
facts (paths, commands, error texts, numbers, and a constraint in each request), and
for each kind the share that reached the summariser, a kept tail, and `recall`.

One request makes the agent run 60 bash calls (each output 50 lines, ~750 tokens, with a
marker line at its start, middle or end) through the real engine and litellm against the
fake OpenAI-compatible server. Prints, per compaction, the summariser calls and their
input, the prompt right after; the compactions in 60 steps; and where each step's
marker went: into the summariser's input, into a kept tail, or lost. Tokens are counted
the way the fake provider counts them (4 characters a token, tools included).

    .venv/bin/python bench/bench_fidelity.py [--steps 60] [--facts]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from agent_tui.config.settings import Config, ModelConfig, ModelLimit, ProviderConfig
from agent_tui.engine_context import EngineContext
from agent_tui.session.engine import Engine
from agent_tui.storage.db import Database
from tests.compaction_scenario import (
    USABLE,
    FactScenario,
    Scenario,
    compactions,
    fact_query,
    marker_fate,
    planted_fact,
    prompt_tokens,
)
from tests.engine_helpers import is_summary_request
from tests.fake_openai import FakeOpenAI

MODEL = "openai/bench-model"


def bench_config(server: FakeOpenAI, steps: int) -> Config:
    return Config(
        model=MODEL,
        provider={"openai": ProviderConfig(api_base=server.base_url, api_key="bench")},
        models={MODEL: ModelConfig(limit=ModelLimit(context=20_000, output=4_000))},
        permission={"bash": "allow"},
        max_steps=steps * 3,
    )


async def facts_main() -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as server:
        project = Path(tmp)
        os.environ["AGENT_TUI_DATA_DIR"] = str(project / "data")
        scenario = FactScenario()
        requests_text = scenario.install(project, server)
        db = await Database.open(project / "data" / "agent-tui.db")
        try:
            engine = Engine(EngineContext(db=db, config=bench_config(server, scenario.steps)))
            session = await engine.new_session(project)
            for text in requests_text:
                result = await engine.prompt(session.id, text)
                assert result is not None and result.outcome == "stop", result
            requests = list(server.requests)
            found = compactions(requests)
            summary_bodies = [json.dumps(r["messages"]) for r in requests if is_summary_request(r)]
            after_bodies = [json.dumps(c.after["messages"]) for c in found if c.after]
            final = json.dumps(requests[-1]["messages"])
            rows: dict[str, list[int]] = {}
            facts = [
                (kind, planted_fact(kind, k), fact_query(kind, k))
                for kind, k in scenario.facts.values()
            ]
            facts += [
                ("constraint", f"never modify config/prod_{t:02d}.yaml", f'"prod_{t:02d}"')
                for t in range(scenario.turns)
            ]
            for kind, fact, query in facts:
                row = rows.setdefault(kind, [0, 0, 0, 0, 0])
                summarised = any(fact in body for body in summary_bodies)
                row[0] += 1
                row[1] += summarised
                row[2] += any(fact in b for b in after_bodies)
                row[3] += not summarised and fact in final  # never compacted yet
                row[4] += await _recalled(db, session.id, query, fact)
        finally:
            await db.close()
    print(
        f"{scenario.steps} tool calls in {scenario.turns} requests at a 20,000-token window: "
        f"{len(found)} compactions, summariser calls {[c.summariser_calls for c in found]}"
    )
    print(
        f"{'kind':<11} {'facts':>5} {'summariser':>11} {'kept tail':>10} "
        f"{'not yet compacted':>18} {'lost':>5} {'recall':>7}"
    )
    total = [0, 0, 0, 0, 0]
    for kind, row in [*rows.items(), ("all", None)]:
        if row is None:
            row = total
        else:
            total = [a + b for a, b in zip(total, row, strict=True)]
        n, summ, tail, live, rec = row
        lost = n - summ - live
        print(
            f"{kind:<11} {n:>5} {summ * 100 / n:>10.0f}% {tail * 100 / n:>9.0f}% "
            f"{live * 100 / n:>17.0f}% {lost:>5} {rec * 100 / n:>6.0f}%"
        )
    print("goal: every compacted fact reaches the summariser (lost 0), recall finds 100%")


async def _recalled(db: Database, session_id: str, query: str, fact: str) -> int:
    for hit in await db.search_parts(session_id, query, 8):
        original = await db.find_original(session_id, hit.part_id)
        if original is not None and fact in original.model_dump_json():
            return 1
    return 0


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--facts", action="store_true", help="the planted-facts session")
    args = parser.parse_args()
    if args.facts:
        await facts_main()
        return
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as server:
        project = Path(tmp)
        os.environ["AGENT_TUI_DATA_DIR"] = str(project / "data")
        scenario = Scenario(steps=args.steps)
        request_text = scenario.install(project, server)
        config = Config(
            model=MODEL,
            provider={"openai": ProviderConfig(api_base=server.base_url, api_key="bench")},
            models={MODEL: ModelConfig(limit=ModelLimit(context=20_000, output=4_000))},
            permission={"bash": "allow"},
            max_steps=args.steps * 3,
        )
        db = await Database.open(project / "data" / "agent-tui.db")
        try:
            engine = Engine(EngineContext(db=db, config=config))
            session = await engine.new_session(project)
            result = await engine.prompt(session.id, request_text)
        finally:
            await db.close()
        assert result is not None and result.outcome == "stop", result
        requests = list(server.requests)

    found = compactions(requests)
    fate = marker_fate(requests, args.steps)
    print(f"{args.steps} tool calls at a 20,000-token window (usable {USABLE:,})")
    print(f"compactions                        {len(found)}")
    for n, compaction in enumerate(found, 1):
        after = prompt_tokens(compaction.after) if compaction.after else 0
        kept = sum(
            1 for m in (compaction.after or {"messages": []})["messages"] if m["role"] == "tool"
        )
        print(
            f"  #{n}: summariser calls {compaction.summariser_calls}, input "
            f"{compaction.summariser_input:,} tokens; prompt after {after:,} "
            f"({after * 100 / USABLE:.0f}% of usable), tool results kept verbatim {kept}"
        )
    afters = [prompt_tokens(c.after) for c in found if c.after]
    if afters:
        print(
            f"prompt after compaction            median {statistics.median(afters):,.0f}, "
            f"max {max(afters):,} tokens (goal <= {USABLE // 2:,})"
        )
    total = args.steps
    print(
        f"markers in the summariser's input  {fate['summariser']}/{total} "
        f"({fate['summariser'] * 100 / total:.0f}%)"
    )
    print(f"markers only in a kept tail        {fate['tail']}/{total}")
    print(f"markers still in the window        {fate['final']}/{total}")
    print(f"markers lost                       {fate['lost']}/{total}")
    calls = [c.summariser_calls for c in found]
    print(
        f"verdict: one call per compaction {'MET' if set(calls) <= {1} else 'MISSED'}, "
        f"<= 6 compactions {'MET' if len(found) <= 6 else 'MISSED'}, "
        f"after <= 50% {'MET' if afters and max(afters) <= USABLE // 2 else 'MISSED'}, "
        f"nothing lost {'MET' if not fate['lost'] else 'MISSED'}"
    )


if __name__ == "__main__":
    asyncio.run(main())
