"""What a hook's `transcript_path` costs an event (hooks/transcript.py): the session
written out in Claude Code's JSONL shape, at 1,000 and 10,000 messages (ten parts
each): the first event writes it whole, every later one only what is new since.

    .venv/bin/python bench/bench_transcript.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

EVENTS = 5


async def main() -> None:
    from bench_context import build_session

    from agent_tui.hooks.transcript import write_transcript
    from agent_tui.storage.db import Database

    folder = Path(tempfile.mkdtemp(prefix="bench-transcript-"))
    os.environ["AGENT_TUI_DATA_DIR"] = str(folder)
    db = await Database.open(folder / "bench.db")
    try:
        for count in (1_000, 10_000):
            session = await build_session(db, count, 0)
            times = []
            for _ in range(EVENTS):
                start = time.perf_counter()
                path = await write_transcript(db, session, folder)
                times.append((time.perf_counter() - start) * 1000)
            later = sorted(times[1:])[len(times[1:]) // 2]
            size = path.stat().st_size / 2**20
            print(
                f"{count:>6,} messages: first event {times[0]:,.0f} ms (the whole file, "
                f"{size:,.1f} MiB), each later event {later:,.1f} ms median"
            )
    finally:
        await db.close()


if __name__ == "__main__":
    asyncio.run(main())
