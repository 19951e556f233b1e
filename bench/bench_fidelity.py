"""What a long turn keeps through compaction: 60 tool calls at a 20,000-token window.

One request makes the agent run 60 bash calls (each output 50 lines, ~750 tokens, with a
marker line at its start, middle or end) through the real engine and litellm against the
fake OpenAI-compatible server. Prints, per compaction, the summariser calls and their
input, the prompt right after; the compactions in 60 steps; and where each step's
marker went: into the summariser's input, into a kept tail, or lost. Tokens are counted
the way the fake provider counts them (4 characters a token, tools included).

    .venv/bin/python bench/bench_fidelity.py [--steps 60]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from agent_tui.config import Config, ModelConfig, ModelLimit, ProviderConfig
from agent_tui.session.context import EngineContext
from agent_tui.session.engine import Engine
from agent_tui.storage.db import Database
from tests.compaction_scenario import (
    USABLE,
    Scenario,
    compactions,
    marker_fate,
    prompt_tokens,
)
from tests.fake_openai import FakeOpenAI

MODEL = "openai/bench-model"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
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
        kept = sum(1 for m in (compaction.after or {"messages": []})["messages"]
                   if m["role"] == "tool")
        print(f"  #{n}: summariser calls {compaction.summariser_calls}, input "
              f"{compaction.summariser_input:,} tokens; prompt after {after:,} "
              f"({after * 100 / USABLE:.0f}% of usable), tool results kept verbatim {kept}")
    afters = [prompt_tokens(c.after) for c in found if c.after]
    if afters:
        print(f"prompt after compaction            median {statistics.median(afters):,.0f}, "
              f"max {max(afters):,} tokens (goal <= {USABLE // 2:,})")
    total = args.steps
    print(f"markers in the summariser's input  {fate['summariser']}/{total} "
          f"({fate['summariser'] * 100 / total:.0f}%)")
    print(f"markers only in a kept tail        {fate['tail']}/{total}")
    print(f"markers still in the window        {fate['final']}/{total}")
    print(f"markers lost                       {fate['lost']}/{total}")
    calls = [c.summariser_calls for c in found]
    print(f"verdict: one call per compaction {'MET' if set(calls) <= {1} else 'MISSED'}, "
          f"<= 6 compactions {'MET' if len(found) <= 6 else 'MISSED'}, "
          f"after <= 50% {'MET' if afters and max(afters) <= USABLE // 2 else 'MISSED'}, "
          f"nothing lost {'MET' if not fate['lost'] else 'MISSED'}")


if __name__ == "__main__":
    asyncio.run(main())
