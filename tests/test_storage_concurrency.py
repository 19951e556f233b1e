"""Two agent-tui processes writing to one database at the same time both succeed."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
from pathlib import Path

import agent_tui

PARTS_PER_WORKER = 200

WORKER = """
import asyncio, sys
from pathlib import Path

from agent_tui import ids
from agent_tui.storage.db import Database
from agent_tui.records import TextPart, UserMessage

async def main(path, name, count):
    db = await Database.open(Path(path), flush_interval=0.005)
    session = await db.create_session("/shared", name)
    info = UserMessage(id=ids.message_id(), session_id=session.id)
    await db.upsert_message(info, flush=True)
    for i in range(count):
        part = TextPart(id=ids.part_id(), session_id=session.id, message_id=info.id,
                        text=f"{name} {i}")
        # A mix of batched writes and immediate ones, as a streaming turn does.
        await db.upsert_part(part, flush=i % 10 == 0)
        await asyncio.sleep(0.001)
    await db.close()
    print(session.id)

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


async def run_worker(script: Path, db_path: Path, name: str) -> str:
    repo_root = Path(agent_tui.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo_root), *sys.path])}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        str(db_path),
        name,
        str(PARTS_PER_WORKER),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, stderr.decode()
    return stdout.decode().strip()


async def test_two_processes_write_concurrently(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    db_path = tmp_path / "shared" / "agent-tui.db"  # both processes create it at once

    session_ids = await asyncio.gather(
        run_worker(script, db_path, "one"), run_worker(script, db_path, "two")
    )

    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM part").fetchone() == (2 * PARTS_PER_WORKER,)
        for session_id in session_ids:
            count = conn.execute(
                "SELECT count(*) FROM part WHERE session_id = ?", (session_id,)
            ).fetchone()
            assert count == (PARTS_PER_WORKER,)
        assert conn.execute("SELECT count(*) FROM session").fetchone() == (2,)
