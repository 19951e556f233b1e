"""Backoff for retryable provider errors, honouring Retry-After."""

from __future__ import annotations

import asyncio
import contextlib

from agent_tui.config.settings import RetryConfig


def retry_delay(attempt: int, config: RetryConfig, retry_after: float | None) -> float:
    """Seconds to wait before retry number `attempt` (1-based)."""
    if retry_after is not None and retry_after >= 0:
        return min(retry_after, config.max_delay)
    return min(config.initial_delay * (2 ** (attempt - 1)), config.max_delay)


async def sleep_unless(abort: asyncio.Event, seconds: float) -> bool:
    """Sleep; return True if `abort` was set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(abort.wait(), timeout=seconds)
    return abort.is_set()
