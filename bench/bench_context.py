"""Context assembly at scale: a session of 10,000 messages / 100,000 parts with several
compactions. Prints the time to assemble the next request (goal: under 50 ms, however
much history lies before the last compaction), the time of one prune pass, of the recall
search, and of what a compaction adds for pins and the file ledger.

    .venv/bin/python bench/bench_context.py [--messages 10000] [--compactions 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from agent_tui.budget.tokens import counter_for
from agent_tui.config.settings import Config, ModelConfig, ModelLimit, ProviderConfig
from agent_tui.context.ledger import span_ledger
from agent_tui.context.pins import current_pins
from agent_tui.context.prune import select_prunable
from agent_tui.engine_context import EngineContext
from agent_tui.ids import message_id, part_id
from agent_tui.provider.limits import load_model_info
from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    MessageWithParts,
    StepFinishPart,
    StepStartPart,
    TextPart,
    Tokens,
    ToolPart,
    ToolStateCompleted,
    ToolTime,
    UserMessage,
)
from agent_tui.session.decide import finished_after
from agent_tui.step.after_summary import ledger_text
from agent_tui.step.history import load_history
from agent_tui.step.request import build_request, estimate_next
from agent_tui.storage.db import Database

MODEL = "openai/bench-model"
PARTS_PER_ASSISTANT = 19  # step-start, text, 16 tools, step-finish (+1 user part = 10 avg)
OUTPUT = "def handler(request):\n    return process(request.body)  # line of output\n" * 12


def assistant_parts(session_id: str, msg_id: str, n: int) -> list:
    ids = {"session_id": session_id, "message_id": msg_id}
    parts: list = [
        StepStartPart(id=part_id(), **ids),
        TextPart(id=part_id(), text=f"Working on step {n}. " * 5, **ids),
    ]
    for k in range(PARTS_PER_ASSISTANT - 3):
        parts.append(
            ToolPart(
                id=part_id(),
                call_id=f"call_{n}_{k}",
                tool="read",
                **ids,
                state=ToolStateCompleted(
                    input={"file_path": f"src/module_{n % 50}_{k}.py"},
                    output=OUTPUT,
                    title="read",
                    time=ToolTime(start=1, end=2),
                ),
            )
        )
    parts.append(
        StepFinishPart(id=part_id(), reason="stop", **ids, tokens=Tokens(input=20_000, output=500))
    )
    return parts


async def build_session(db: Database, messages: int, compactions: int) -> str:
    session = await db.create_session(str(Path.cwd()), title="bench")
    every = messages // (compactions + 1)
    made = parts = 0
    last_compaction = None
    while made < messages:
        if made and made % every == 0 and made // every <= compactions:
            request = UserMessage(id=message_id(), session_id=session.id, model=MODEL)
            await db.upsert_message(request)
            await db.upsert_part(
                CompactionPart(
                    id=part_id(), session_id=session.id, message_id=request.id, auto=True
                )
            )
            summary = AssistantMessage(
                id=message_id(),
                session_id=session.id,
                parent_id=request.id,
                model=MODEL,
                summary=True,
                finish="stop",
                tokens=Tokens(input=90_000, output=3_000),
            )
            await db.upsert_message(summary)
            await db.upsert_part(
                TextPart(
                    id=part_id(),
                    session_id=session.id,
                    message_id=summary.id,
                    text="## Objective\n" * 200,
                )
            )
            last_compaction = request.id
            made += 2
            parts += 2
            continue
        user = UserMessage(id=message_id(), session_id=session.id, model=MODEL)
        await db.upsert_message(user)
        await db.upsert_part(
            TextPart(
                id=part_id(),
                session_id=session.id,
                message_id=user.id,
                text=f"Please continue with task {made}.",
            )
        )
        assistant = AssistantMessage(
            id=message_id(),
            session_id=session.id,
            parent_id=user.id,
            model=MODEL,
            finish="stop",
            tokens=Tokens(input=20_000, output=500),
        )
        await db.upsert_message(assistant)
        for part in assistant_parts(session.id, assistant.id, made):
            await db.upsert_part(part)
        made += 2
        parts += 1 + PARTS_PER_ASSISTANT
        if made % 1_000 == 0:
            await db.flush()
    await db.flush()
    session = await db.get_session(session.id)
    session.compaction_id = last_compaction
    await db.update_session(session)
    print(f"built {made:,} messages / {parts:,} parts, {compactions} compactions")
    return session.id


def config() -> Config:
    return Config(
        model=MODEL,
        provider={"openai": ProviderConfig(api_base="http://127.0.0.1:9/v1", api_key="x")},
        models={MODEL: ModelConfig(limit=ModelLimit(context=1_000_000, output=8_000))},
    )


async def assemble(ctx: EngineContext, session_id: str) -> tuple[int, int]:
    session = await ctx.db.get_session(session_id)
    history = await load_history(ctx, session)
    request, _ = build_request(
        history,
        model=MODEL,
        directory=Path.cwd(),
        config=ctx.config,
        tools=ctx.registry.definitions(),
    )
    estimate = estimate_next(history, request, finished_after(history, session))
    return len(history), estimate


def timed(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1] if len(ordered) >= 20 else ordered[-1]
    return f"median {statistics.median(ordered) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--compactions", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    counter_for(MODEL)  # load the tokenizer outside the timings
    with tempfile.TemporaryDirectory() as tmp:
        db = await Database.open(Path(tmp) / "bench.db")
        ctx = EngineContext(db=db, config=config())
        await load_model_info(MODEL, ctx.config)  # what the loop awaits before a request
        start = time.perf_counter()
        session_id = await build_session(db, args.messages, args.compactions)
        print(f"build: {time.perf_counter() - start:.1f} s")

        cold_start = time.perf_counter()
        count, estimate = await assemble(ctx, session_id)
        cold = time.perf_counter() - cold_start
        samples = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            await assemble(ctx, session_id)
            samples.append(time.perf_counter() - t0)
        print(
            f"history after the last compaction: {count:,} messages, "
            f"next request ~{estimate:,} tokens"
        )
        print(
            f"assemble next request (load + build + estimate): {timed(samples)}   "
            f"[goal < 50 ms]; first after opening the database (parses from disk): "
            f"{cold * 1000:.0f} ms"
        )

        session = await db.get_session(session_id)
        fresh = await Database.open(Path(tmp) / "bench.db")  # no parsed-history cache
        t0 = time.perf_counter()
        everything = await fresh.all_messages(session_id)
        print(
            f"for comparison, parsing all {len(everything):,} messages from disk: "
            f"{(time.perf_counter() - t0) * 1000:.0f} ms"
        )
        await fresh.close()

        history = await load_history(ctx, session)
        prune_samples = []
        for _ in range(5):
            t0 = time.perf_counter()
            marked, tokens = select_prunable(history, ctx.config.compaction, MODEL)
            prune_samples.append(time.perf_counter() - t0)
        parts = sum(len(m.parts) for m in history)
        print(
            f"first prune pass (nothing pruned yet) over {parts:,} parts: "
            f"{timed(prune_samples)}; would clear {len(marked):,} outputs (~{tokens:,} tokens)"
        )
        await recall_timings(db, session_id, args.messages)
        await pins_and_ledger_timings(db, session_id, history)
        await db.close()


async def pins_and_ledger_timings(
    db: Database, session_id: str, history: list[MessageWithParts]
) -> None:
    """What a compaction adds: finding the pins (a query over every row of the session,
    pins may lie before the boundary) and the file ledger of the span it summarises."""
    everything = await db.all_messages(session_id)
    oldest = [p for m in everything for p in m.parts if isinstance(p, ToolPart)][:3]
    for part in oldest:  # pins on the oldest tool results: before every boundary
        part.pinned = 1
        await db.upsert_part(part)
    await db.flush()
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        found = await current_pins(db, session_id)
        samples.append(time.perf_counter() - t0)
    print(f"pins of the session ({len(found)} pinned, whole session scanned): {timed(samples)}")
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        ledger = span_ledger(history, Path.cwd())
        samples.append(time.perf_counter() - t0)
    parts = sum(len(m.parts) for m in history)
    print(
        f"file ledger of a {len(history):,}-message span ({parts:,} parts, {len(ledger)} files): "
        f"{timed(samples)}; restated as {len(ledger_text(ledger)):,} characters"
    )


async def recall_timings(db: Database, session_id: str, messages: int) -> None:
    """The recall tool's search over the whole session (every part is indexed)."""
    indexed = (await db._fetch("SELECT count(*) FROM part_fts"))[0][0]
    queries = {
        "rare words (one message)": f"continue task {messages // 2}",
        "common word (every output)": "handler",
        "quoted phrase": '"line of output"',
        "no match": "zebra-quartz",
    }
    for label, query in queries.items():
        samples = []
        for _ in range(10):
            t0 = time.perf_counter()
            hits = await db.search_parts(session_id, query, 8)
            samples.append(time.perf_counter() - t0)
        print(f"recall {label:<28} {len(hits)} hits  {timed(samples)}   [goal < 100 ms]")
    print(f"search index: {indexed:,} parts")


if __name__ == "__main__":
    asyncio.run(main())
