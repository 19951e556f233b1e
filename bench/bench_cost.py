"""Input cost of a long tool session on the Anthropic path, with prompt caching on and off.

A scripted 40-step session (each step one bash call printing ~1k tokens, as in the
side-by-side runs in FACTS.md) runs through the real engine and litellm's `anthropic/`
route against the fake Anthropic server (tests/fake_anthropic.py), whose prefix cache
matches the way Anthropic's does: breakpoints, and a lookback of ~20 blocks. Priced with
litellm's price map for claude-sonnet-4-5. Goals: input cost with caching <= 0.3x of
without, and a median share of the prompt read from cache >= 85% from step 3 on.

    .venv/bin/python bench/bench_cost.py [--steps 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from agent_tui.config.settings import Config, ModelConfig, ProviderConfig
from agent_tui.engine_context import EngineContext
from agent_tui.provider.limits import Prices, load_model_info
from agent_tui.session.engine import Engine
from agent_tui.storage.db import Database
from tests.fake_anthropic import Call, FakeAnthropic, Text, ToolUse

MODEL = "anthropic/claude-sonnet-4-5"
LINES_PER_OUTPUT = 100  # ~1k tokens per bash output


def script(steps: int) -> list[ToolUse | Text]:
    replies: list[ToolUse | Text] = []
    for n in range(steps):
        command = (
            f'for i in $(seq 1 {LINES_PER_OUTPUT}); do echo "step {n} line $i: some output"; done'
        )
        replies.append(ToolUse([Call("bash", json.dumps({"command": command}))], text=f"Step {n}."))
    replies.append(Text("All steps are done."))
    return replies


def input_cost(usage: dict[str, int], prices: Prices) -> float:
    return (
        usage["input_tokens"] * prices.input
        + usage["cache_read_input_tokens"] * prices.cache_read
        + usage["cache_creation_input_tokens"] * prices.cache_write
    )


def prompt_tokens(usage: dict[str, int]) -> int:
    return (
        usage["input_tokens"]
        + usage["cache_read_input_tokens"]
        + usage["cache_creation_input_tokens"]
    )


async def run_session(steps: int, cache: bool, root: Path) -> tuple[list[dict[str, int]], float]:
    """The fake's usage per step, and the engine's time per step (without the fake)."""
    project = root / ("cached" if cache else "uncached")
    project.mkdir()
    os.environ["AGENT_TUI_DATA_DIR"] = str(project / "data")
    with FakeAnthropic() as server:
        server.script(*script(steps))
        config = Config(
            model=MODEL,
            provider={"anthropic": ProviderConfig(api_base=server.base_url, api_key="bench")},
            models={MODEL: ModelConfig(cache=cache)},
            permission={"bash": "allow"},
            max_steps=steps + 5,
        )
        db = await Database.open(project / "data" / "agent-tui.db")
        try:
            engine = Engine(EngineContext(db=db, config=config))
            session = await engine.new_session(project)
            started = time.perf_counter()
            result = await engine.prompt(session.id, "Run the steps one by one.")
            wall = time.perf_counter() - started
        finally:
            await db.close()
        assert result is not None and result.outcome == "stop", result
        return list(server.usages), wall / max(len(server.usages), 1)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    prices = asyncio.run(load_model_info(MODEL, Config())).prices
    with tempfile.TemporaryDirectory() as tmp:
        cached, step_time = await run_session(args.steps, True, Path(tmp))
        uncached, _ = await run_session(args.steps, False, Path(tmp))
    cost_on = sum(input_cost(u, prices) for u in cached)
    cost_off = sum(input_cost(u, prices) for u in uncached)
    shares = [u["cache_read_input_tokens"] / prompt_tokens(u) for u in cached[2:]]
    ratio = cost_on / cost_off
    median_share = statistics.median(shares)
    print(
        f"model {MODEL}: input ${prices.input * 1e6:.2f}/M, cache read "
        f"${prices.cache_read * 1e6:.2f}/M, cache write ${prices.cache_write * 1e6:.2f}/M"
    )
    print(f"steps (model calls)            {len(cached)}")
    print(
        f"prompt at first / last step    {prompt_tokens(cached[0]):,} / "
        f"{prompt_tokens(cached[-1]):,} tokens"
    )
    print(f"input cost, caching off        ${cost_off:.4f}")
    print(f"input cost, caching on         ${cost_on:.4f}")
    print(f"ratio on/off                   {ratio:.3f}x  (goal <= 0.3x)")
    print(
        f"median cache-read share        {median_share * 100:.1f}% from step 3 on "
        f"(min {min(shares) * 100:.1f}%; goal >= 85%)"
    )
    print(f"wall time per step             {step_time * 1000:.0f} ms (bash + engine + fake)")
    print(
        f"verdict: cost {'MET' if ratio <= 0.3 else 'MISSED'}, "
        f"share {'MET' if median_share >= 0.85 else 'MISSED'}"
    )


if __name__ == "__main__":
    asyncio.run(main())
