"""What "one loop per session" costs (storage/session_lock.py, session/follow.py). Prints:

- taking and releasing a session's lock (open + flock + write who holds it + unlink),
  and asking who holds it, in µs;
- how long after the running loop's last step is saved a second engine waiting on that
  session (another connection: what another process is) returns the answer; the goal is
  under FOLLOW_INTERVAL plus a read (~150 ms);
- the CPU a waiting engine spends per second while nothing changes (goal: under 2%).

Two engines in one process on one database, against the fake OpenAI server.

    .venv/bin/python bench/bench_session_lock.py [--runs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from own_project import own_project  # noqa: E402

from agent_tui.config.settings import load_config  # noqa: E402
from agent_tui.engine_context import EngineContext  # noqa: E402
from agent_tui.events import Event, MessageUpdated, Notice  # noqa: E402
from agent_tui.records import AssistantMessage  # noqa: E402
from agent_tui.session.engine import Engine  # noqa: E402
from agent_tui.session.follow import FOLLOW_INTERVAL  # noqa: E402
from agent_tui.storage.db import Database  # noqa: E402
from agent_tui.storage.session_lock import SessionLocks  # noqa: E402
from tests.fake_openai import FakeOpenAI, Gated, Text  # noqa: E402

IDLE_SECONDS = 2.0


def bench_lock(folder: Path, rounds: int = 2000) -> None:
    locks = SessionLocks(folder, "bench")
    taken = []
    for _ in range(rounds):
        start = time.perf_counter()
        lock = locks.try_acquire("ses_bench")
        assert lock is not None
        lock.release()
        taken.append(time.perf_counter() - start)
    held = locks.try_acquire("ses_bench")
    other = SessionLocks(folder, "other")
    asked = []
    for _ in range(rounds):
        start = time.perf_counter()
        assert other.holder("ses_bench") is not None
        asked.append(time.perf_counter() - start)
    assert held is not None
    held.release()
    print(f"take + release a session lock: {statistics.median(taken) * 1e6:.0f} µs (median)")
    print(f"who holds it (busy):           {statistics.median(asked) * 1e6:.0f} µs (median)")


async def one_round(server: FakeOpenAI, a: Engine, b: Engine, idle: bool) -> tuple[float, float]:
    """(seconds from the owner's last step saved to the waiter's return, CPU share while
    waiting with nothing changing)."""
    gate = threading.Event()
    server.script(Gated(Text(" done"), gate, text="working"), Text("answer for the waiter"))
    session = await a.new_session(Path.cwd())
    finished_at: list[float] = []
    queued = asyncio.Event()

    def on_owner(event: Event) -> None:
        info = getattr(event, "info", None)
        if isinstance(event, MessageUpdated) and isinstance(info, AssistantMessage):
            if info.finish == "stop" and info.parent_id != first_user[0]:
                finished_at.append(time.perf_counter())

    def on_waiter(event: Event) -> None:
        if isinstance(event, Notice) and "is busy in" in event.message:
            queued.set()

    first_user: list[str] = [""]
    unsubscribe = a.ctx.bus.subscribe(on_owner)
    unwatch = b.ctx.bus.subscribe(on_waiter)
    requests = len(server.requests)
    running = asyncio.create_task(a.prompt(session.id, "task"))
    await asyncio.to_thread(server.wait_for_requests, requests + 1, 60)
    first_user[0] = (await a.ctx.db.all_messages(session.id))[0].info.id
    waiting = asyncio.create_task(b.prompt(session.id, "question"))
    await queued.wait()
    share = 0.0
    if idle:
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(IDLE_SECONDS)  # measuring an idle wait: nothing to wait on
        share = (time.process_time() - cpu) / (time.perf_counter() - wall)
    gate.set()
    await waiting
    returned = time.perf_counter()
    await running
    unsubscribe()
    unwatch()
    return returned - finished_at[-1], share


async def bench_follow(runs: int) -> None:
    with FakeOpenAI() as server, tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        os.chdir(project)
        os.environ["AGENT_TUI_DATA_DIR"] = str(Path(tmp) / "data")
        os.environ["AGENT_TUI_CONFIG_DIR"] = str(Path(tmp) / "cfg")
        own_project(project)
        (project / "agent-tui.json").write_text(
            json.dumps(
                {
                    "model": "openai/bench",
                    "provider": {"openai": {"api_base": server.base_url, "api_key": "x"}},
                    "models": {"openai/bench": {"limit": {"context": 100000, "output": 4000}}},
                }
            )
        )
        db_path = Path(tmp) / "data" / "agent-tui.db"
        db_a, db_b = await Database.open(db_path), await Database.open(db_path)
        a = Engine(EngineContext(db=db_a, config=load_config(), front_end="owner"))
        b = Engine(EngineContext(db=db_b, config=load_config(), front_end="waiter"))
        try:
            latencies, shares = [], []
            for run in range(runs):
                latency, share = await one_round(server, a, b, idle=run == 0)
                latencies.append(latency)
                if run == 0:
                    shares.append(share)
        finally:
            await a.close()
            await b.close()
            await db_a.close()
            await db_b.close()
    print(
        f"answer seen by the waiter after the owner saved it: median "
        f"{statistics.median(latencies) * 1000:.0f} ms (max {max(latencies) * 1000:.0f}, "
        f"n={runs}; polled every {FOLLOW_INTERVAL * 1000:.0f} ms)"
    )
    print(f"CPU while waiting, nothing changing: {shares[0] * 100:.1f}% of one core")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_lock(Path(tmp))
    asyncio.run(bench_follow(args.runs))


if __name__ == "__main__":
    main()
