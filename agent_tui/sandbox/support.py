"""Can commands be sandboxed here? bubblewrap on PATH, Linux, and namespaces that work:
checked once per process by running the sandbox itself on `true` (a container without
user namespaces fails that, not `bwrap --version`)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
from dataclasses import dataclass

from agent_tui import procs
from agent_tui.sandbox import seccomp

INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap)"
BWRAP_ENV = "AGENT_TUI_BWRAP"
"""The bwrap program to use instead of the one on PATH."""
PROBE_TIMEOUT_S = 10.0
BASE_FLAGS = (
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    "--unshare-pid",
    "--unshare-ipc",
    "--die-with-parent",
    "--new-session",
    "--cap-drop", "ALL",
)  # fmt: skip
"""Every sandbox starts with these (policy.py adds the project, masks and network)."""


@dataclass(frozen=True)
class SandboxSupport:
    available: bool
    bwrap: str | None = None
    """The bwrap executable (when found)."""
    reason: str = ""
    """Why commands cannot be sandboxed, for the notice: what is missing and what to do."""


_cached: dict[tuple[str, str | None], SandboxSupport] = {}


def _unavailable(reason: str, bwrap: str | None = None) -> SandboxSupport:
    return SandboxSupport(available=False, bwrap=bwrap, reason=reason)


async def probe() -> SandboxSupport:
    """Whether bwrap runs a sandbox here; cached for the process (per bwrap program)."""
    if not sys.platform.startswith("linux"):
        return _unavailable(
            f"{sys.platform} has no bubblewrap; agent-tui's sandbox is Linux-only for now"
        )
    wanted = os.environ.get(BWRAP_ENV) or "bwrap"
    key = (wanted, shutil.which(wanted))
    if key not in _cached:  # two first commands at once probe twice: harmless
        _cached[key] = await _run_probe(wanted, key[1])
    return _cached[key]


async def start_helper(*argv: str, pass_fds: tuple[int, ...] = ()) -> asyncio.subprocess.Process:
    """Start a program the sandbox's set-up runs (a probe, a namespace's maker): no
    input, no output but its errors; reaped at the next start if left running."""
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        pass_fds=pass_fds,
        env=procs.process_env(dict(os.environ)),
    )


async def end_helper(proc: asyncio.subprocess.Process) -> None:
    """Kill a program `start_helper` started, if it still runs, and reap it."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


async def _run_probe(wanted: str, bwrap: str | None) -> SandboxSupport:
    if bwrap is None:
        return _unavailable(f"{wanted} is not installed; {INSTALL_HINT}")
    filter_program = seccomp.program()
    read_end, write_end = os.pipe()
    try:
        if filter_program is not None:
            os.write(write_end, filter_program)  # ~100 bytes: never blocks on a pipe
    finally:
        os.close(write_end)
    try:
        with_filter = ["--seccomp", str(read_end)] if filter_program is not None else []
        proc = await start_helper(
            bwrap, *BASE_FLAGS, *with_filter, "--unshare-net", "--", "true", pass_fds=(read_end,)
        )
    except OSError as exc:
        return _unavailable(f"{bwrap} could not be run ({exc})", bwrap)
    finally:
        os.close(read_end)
    try:
        _, err = await asyncio.wait_for(proc.communicate(), PROBE_TIMEOUT_S)
    except TimeoutError:
        await end_helper(proc)
        return _unavailable(f"{bwrap} did not finish within {PROBE_TIMEOUT_S:g} s", bwrap)
    except BaseException:  # cancelled (the engine closed mid-probe): it must not outlive us
        await asyncio.shield(end_helper(proc))
        raise
    if proc.returncode != 0:
        detail = err.decode(errors="replace").strip().splitlines()
        why = detail[-1] if detail else f"exit code {proc.returncode}"
        return _unavailable(
            f"bubblewrap cannot create a sandbox here ({why}); user namespaces may be "
            "disabled (some containers), see docs/security.md",
            bwrap,
        )
    return SandboxSupport(available=True, bwrap=bwrap)
