"""unless_aborted: the one way a turn's abort ends a model stream, a summary chunk, a web
fetch or an MCP call early."""

from __future__ import annotations

import asyncio

import pytest

from agent_tui.aborting import unless_aborted


async def test_the_work_s_result_or_error_when_not_aborted() -> None:
    async def answer() -> str:
        return "done"

    async def fail() -> str:
        raise ValueError("broken")

    assert await unless_aborted(answer(), asyncio.Event()) == "done"
    with pytest.raises(ValueError, match="broken"):
        await unless_aborted(fail(), asyncio.Event())


async def test_abort_cancels_the_work_and_waits_for_its_cleanup() -> None:
    abort, started, cleaned = asyncio.Event(), asyncio.Event(), []

    async def slow() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # cleanup that itself awaits
            cleaned.append(True)
            raise RuntimeError("cleanup's own error is not the caller's")
        return "never"

    waiting = asyncio.create_task(unless_aborted(slow(), abort))
    await started.wait()
    abort.set()
    assert await waiting is None
    assert cleaned == [True]


async def test_cancelling_the_caller_cancels_the_work() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    waiting = asyncio.create_task(unless_aborted(slow(), asyncio.Event()))
    await started.wait()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await asyncio.wait_for(cancelled.wait(), 10)


async def test_cancelling_the_caller_during_the_cleanup_is_not_swallowed() -> None:
    abort, started, cleaning, release = (asyncio.Event() for _ in range(4))

    async def slow() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaning.set()
            await release.wait()  # a slow cleanup: the caller is cancelled meanwhile

    waiting = asyncio.create_task(unless_aborted(slow(), abort))
    await started.wait()
    abort.set()
    await cleaning.wait()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
