"""A pytest plugin: the run ends when its summary is printed, whatever a test left behind.

A test that fails before it closes what it opened leaves threads that are not daemons:
aiosqlite's worker thread (0.22) lives until its connection is closed, and the traceback
pytest keeps for the report holds the connection. At exit the interpreter joins such
threads, so one failing test made the whole run hang after its summary, until CI's
limit, instead of ending red. This plugin names what was left and ends the process with
pytest's own exit status. Every run ends that way: the interpreter's teardown after the
summary only finalised what tests left for the collector, printing noise.
"""

from __future__ import annotations

import os
import sys
import threading

import pytest

_status: list[int] = []


def leftover_threads() -> list[threading.Thread]:
    """Threads that would keep the interpreter from exiting."""
    main = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _status.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if not _status:
        return
    left = leftover_threads()
    if left:
        names = ", ".join(sorted({t.name for t in left}))
        print(
            f"exit_guard: {len(left)} thread(s) still running after the session ({names}); "
            "a test did not close what it opened. Exiting without waiting for them.",
            file=sys.stderr,
        )
    # Either way, without the interpreter's teardown: it only finalises what the tests
    # left for the collector (litellm's pooled HTTP sessions warn through a logger that
    # can no longer import), after the summary, for nothing.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_status[-1])
