"""Preparations that outlive the command that started them.

`agent-tui run` exits when its turn ends, and the app, the ACP agent or the server may
quit while a summary is being written. Every front-end prepares in its own process while
it runs; when it closes with a preparation under way, as git finishes an automatic gc
after the command has returned, a detached `agent-tui prepare` process (`spawn`) writes
the summary, and the next command on that session uses it (or waits for the rest of it
at the threshold: `wait_elsewhere`). The hand-over starts the summariser call again (a
process cannot pass on a request in flight); preparing in the command itself while it
runs costs nothing more and is ready sooner than a process that must start first (a
detached preparer asks 8-13 s after it is spawned: bench_prepared --processes). `run`,
which exits as soon as its turn ends, starts a standby beside each preparation instead:
it imports while the preparation runs, waits for its lock, and takes over at once if the
preparation ended with no summary saved (the command exited or was killed).

Whoever prepares a session's summary holds its lock in `<database dir>/prepare-locks`
(the session locks' mechanism, storage/session_lock.py): two processes never prepare the
same session at once, a killed preparer's lock is dropped by the kernel, and `sessions
--json` shows who prepares now. The detached process ends when the summary is saved, on
an error, or after `compaction.prepare_max_age`; it writes nothing until the summary is
whole (context/prepared.py), so a kill -9 leaves nothing half-written.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from pathlib import Path

from agent_tui import paths
from agent_tui.engine_context import EngineContext
from agent_tui.ids import now_ms
from agent_tui.provider import remote
from agent_tui.storage.session_lock import LockHolder, SessionLock, SessionLocks

log = logging.getLogger(__name__)
STANDBY = ("agent-tui run",)
"""Front-ends that exit as soon as their turn ends: each preparation they start has a
standby beside it, already started when the command exits (a process takes 5-13 s to
start and ask: bench_prepared --processes)."""
_children: list[subprocess.Popen[bytes]] = []
"""The detached processes this one started (reaped when they end, while it lives)."""

LOCK_DIR = "prepare-locks"
GONE_WAIT = 1.0
"""Seconds a standby that got the lock waits to see its command gone (killed)."""
POLL = 0.1
"""Seconds between looks at another process's preparation while waiting for it."""
DETACHED = "agent-tui prepare"
"""The front-end name of the detached process (the name its lock file gives)."""


def locks(ctx: EngineContext) -> SessionLocks:
    return SessionLocks(ctx.db.path.parent / LOCK_DIR, ctx.front_end)


def claim(ctx: EngineContext, session_id: str) -> SessionLock | None:
    """The session's preparation lock, or None while another preparer holds it."""
    return locks(ctx).try_acquire(session_id)


def _cut(ctx: EngineContext, session_id: str) -> Path:
    return locks(ctx).folder / f"{session_id}.cut"


def mark_cut(ctx: EngineContext, session_id: str) -> None:
    """The command closes with the session's preparation under way: its standby takes
    over (rather than a process started now, which would ask 5-13 s later)."""
    _cut(ctx, session_id).touch()


def elsewhere(ctx: EngineContext, session_id: str) -> LockHolder | None:
    """Who prepares the session's summary now in another process (or another engine)."""
    if ctx.live(session_id).is_preparing:
        return None  # this engine's own
    return locks(ctx).holder(session_id)


async def wait_elsewhere(ctx: EngineContext, session_id: str, abort: asyncio.Event) -> bool:
    """Until another process's preparation of the session ends (its summary is then in
    the database); False when `abort` was set first."""
    while elsewhere(ctx, session_id) is not None:
        if abort.is_set():
            return False
        await asyncio.sleep(POLL)
    return not abort.is_set()


def spawn(
    ctx: EngineContext,
    session_id: str,
    model: str,
    agent: str,
    upto: str,
    *,
    standby: bool = False,
) -> None:
    """`agent-tui prepare` for the session, detached: it outlives this process.
    `standby`: it waits for this process's own preparation and takes over only if that
    one ends without a summary (this process exited or was killed)."""
    log_file = paths.data_dir() / "logs" / "prepare.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "agent_tui", "prepare", "--session", session_id]
    argv += ["--model", model, "--agent", agent, "--upto", upto]
    argv += ["--standby-since", str(now_ms())] if standby else []
    _children[:] = [child for child in _children if child.poll() is None]
    with log_file.open("ab") as out:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            cwd=os.getcwd(),
            start_new_session=True,  # not the terminal's: Ctrl+C in the shell is not its
        )
    _children.append(child)
    log.info("handed the preparation of %s to a detached process", session_id)


async def run_detached(
    ctx: EngineContext,
    session_id: str,
    model: str,
    agent: str,
    upto: str,
    standby_since: int | None = None,
) -> int:
    """The detached process's work: prepare unless another preparer holds the session,
    within `prepare_max_age`; 0 whether or not a summary came of it. A standby (spawned
    at `standby_since` beside its command's own preparation) waits for that one's lock
    and prepares only if it ended with no summary saved since."""
    from agent_tui.context.prepared import prepare
    from agent_tui.provider.limits import load_with_summariser

    if standby_since is None:
        lock = claim(ctx, session_id)
    else:
        parent = os.getppid()  # the command: another parent once it is gone
        if not remote.lazy():  # litellm imported while it waits, so it takes over at once
            await load_with_summariser(model, ctx.config)
        lock = await _take_over(ctx, session_id, standby_since, parent)
    if lock is None:
        return 0  # another process prepares it, or the command's own preparation ended
    try:
        info = await load_with_summariser(model, ctx.config)
        work = prepare(ctx, session_id, info, agent, upto=upto)
        await asyncio.wait_for(work, ctx.config.compaction.prepare_max_age or None)
    except Exception:  # a failed preparation is only a compaction that will wait
        log.warning("preparing a summary for %s failed", session_id, exc_info=True)
    finally:
        lock.release()
    return 0


async def _take_over(
    ctx: EngineContext, session_id: str, since: int, parent: int
) -> SessionLock | None:
    """The lock once its command's preparation has let it go, when that preparation was
    cut off: the command said so as it closed, or it is gone (killed); and no summary was
    saved since `since` (another standby took over). None otherwise (the preparation
    ended as preparations do, with a summary or with nothing to do) or after
    `prepare_max_age`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ctx.config.compaction.prepare_max_age
    while (lock := claim(ctx, session_id)) is None:
        if loop.time() > deadline:
            return None
        await asyncio.sleep(POLL)
    cut, gone_by = _cut(ctx, session_id), loop.time() + GONE_WAIT
    while not (told := cut.exists()) and os.getppid() == parent and loop.time() < gone_by:
        await asyncio.sleep(POLL)  # a killed command drops the lock before it is gone
    cut.unlink(missing_ok=True)
    saved = await ctx.db.prepared_summaries(session_id)
    if (told or os.getppid() != parent) and not any(p.created >= since for p in saved):
        return lock
    lock.release()
    return None
