"""No orphans: every process a tool starts ends with agent-tui, even after a SIGKILL.

How (and why this way):

- Each process a tool starts (a bash command, a person's `!command`, a local MCP server)
  runs in its own session and process group (`start_new_session`), so a command and
  everything it spawned can be signalled at once, and carries `AGENT_TUI_OWNER=<pid>-
  <start time>` in its environment (`process_env`). The group is what a stop signals; the
  marker is what proves a process is ours: it survives `setsid`, double forks and
  `disown`, which leave the group, and the start time tells a dead owner from a new
  process that reuses its pid.
- Normal exit (`run` finishing, the app quitting, Ctrl+C, SIGTERM, SIGHUP): `shutdown()`
  SIGTERMs the groups we started and every process that carries our marker, waits up to
  KILL_GRACE_SECONDS, then SIGKILLs what is left. cli.main calls it on the way out and
  from its SIGTERM/SIGHUP handlers (`install_exit_signals`).
- SIGKILL (or a crash) leaves no chance to clean up, so the next start does it:
  `reap_orphans()` (on a thread, off the start-up path) finds on Linux every process of
  ours whose owner is dead by reading `/proc/*/environ` (bench_engine gives its cost),
  and kills it and its group. Elsewhere it falls
  back to the groups recorded in `<data dir>/owners/<owner>` (one file per running
  agent-tui, deleted on a clean exit), signalled only while their leader still leads them.
- A process is only ever signalled when its marker names a dead owner (or us, on exit);
  on Linux through a pidfd opened before the marker is checked, so a pid reused in
  between is never hit. Our own process and its ancestors are never touched.

Not used: PR_SET_PDEATHSIG. It would stop the direct child (the bash shell) at once,
but not what the shell started (`server &` keeps running), it fires when the forking
*thread* ends rather than the process, it needs a `preexec_fn`, which is unsafe while
other threads run (the litellm import thread), and it is Linux-only. A local MCP server
already sees its stdin close when we die, and the next start reaps the rest. A command
left running in the background has a watcher of its own (tool/supervise.py): when
agent-tui dies its pipe closes, and it kills every process of ours at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO

OWNER_ENV = "AGENT_TUI_OWNER"
KILL_GRACE_SECONDS = 1.0
"""Between SIGTERM and SIGKILL when stopping processes on exit or reaping orphans."""
POLL_SECONDS = 0.01
PROC = Path("/proc")
LINUX = sys.platform.startswith("linux") and PROC.is_dir()
STDERR_TAIL_BYTES = 2000
"""How much of a failed server's stderr is kept to say why it stopped."""

_lock = threading.RLock()  # re-entrant: the exit signal handler may interrupt track()
_groups: set[int] = set()
"""Process groups started by this agent-tui that may still have members."""
_token: tuple[int, str, str] | None = None
_reaper: threading.Thread | None = None


# ---- who we are ---------------------------------------------------------------------


def _start_time(pid: int) -> str | None:
    """The process's start time (clock ticks since boot, /proc/PID/stat field 22);
    None when it does not exist (or is a zombie) or on a system without /proc."""
    stat = _stat(pid)
    return stat[19] if stat is not None and stat[0] != "Z" else None


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name: [state, ppid, pgrp, ...]; None if gone."""
    try:
        data = (PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].decode().split()


def owner_token() -> str:
    """This agent-tui's marker value: `<pid>-<start time>` (Linux) or `<pid>-<time>`, then
    `~<its data dir's digest>` (`_scope`): a start reaps only what an agent-tui with the
    same data dir left, as the records under `<data dir>/owners` do without /proc."""
    global _token
    pid, scope = os.getpid(), _scope()
    if _token is None or _token[:2] != (pid, scope):
        start = _start_time(pid) if LINUX else None
        _token = (pid, scope, f"{pid}-{start or time.time_ns()}~{scope}")
    return _token[2]


def _scope() -> str:
    import hashlib

    from agent_tui import paths

    return hashlib.sha256(str(paths.data_dir()).encode()).hexdigest()[:8]


def process_env(env: dict[str, str]) -> dict[str, str]:
    """`env` plus the marker that makes a tool's process (and its children) ours."""
    return {**env, OWNER_ENV: owner_token()}


def _fields(token: str) -> tuple[str, str, str]:
    """A marker's pid, start time and data dir digest (`owner_token`'s format)."""
    pid_text, _, rest = token.partition("-")
    start, _, scope = rest.partition("~")
    return pid_text, start, scope


def owner_alive(token: str) -> bool:
    """True while the agent-tui named by a marker runs (a reused pid does not count)."""
    pid_text, start, _ = _fields(token)
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if LINUX:
        return _start_time(pid) == start
    return _exists(os.kill, pid)  # no start time to compare: alive rather than kill a stranger


def _exists(kill: Callable[[int, int], None], target: int) -> bool:
    """Whether signal 0 (`os.kill`: a process, `os.killpg`: a group) finds `target`,
    another user's included."""
    try:
        kill(target, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


# ---- tracking the groups we start ---------------------------------------------------


def _registry_file(token: str) -> Path:
    from agent_tui import paths

    return paths.data_dir() / "owners" / token


def track(pgid: int) -> None:
    """Remember a process group a tool just started (its leader's pid is the pgid)."""
    with _lock:
        for gone in [g for g in _groups if not _exists(os.killpg, g)]:
            _groups.discard(gone)  # forget ended groups before their ids can be reused
        _groups.add(pgid)
    if not LINUX:  # the /proc scan needs no record; the fallback does
        with contextlib.suppress(OSError):
            path = _registry_file(owner_token())
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="ascii") as file:
                file.write(f"{pgid}\n")


def release(pgid: int) -> None:
    """Forget a group once it has no members left (a command that left nothing behind)."""
    if not _exists(os.killpg, pgid):
        with _lock:
            _groups.discard(pgid)


# ---- finding and stopping processes -------------------------------------------------


@dataclass(frozen=True)
class Found:
    pid: int
    pgid: int
    owner: str


def _marker(pid: int, name: str = OWNER_ENV) -> str | None:
    """The value of `name` (the owner marker) in the process's environment."""
    try:
        data = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    key = name.encode() + b"="
    for entry in data.split(b"\0"):
        if entry.startswith(key):
            return entry[len(key) :].decode(errors="replace")
    return None


def _ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        if (stat := _stat(pid)) is None:
            break
        pid = int(stat[1])
    return pids


def scan(wanted: Callable[[str], bool]) -> list[Found]:
    """(Linux) Live processes whose marker satisfies `wanted`, never us or an ancestor."""
    if not LINUX:
        return []
    spared = _ancestors()
    found = []
    for entry in os.scandir(PROC):
        if not entry.name.isdigit() or int(entry.name) in spared:
            continue
        pid = int(entry.name)
        if (owner := _marker(pid)) is None or not wanted(owner):
            continue
        if (stat := _stat(pid)) is not None and stat[0] != "Z":
            found.append(Found(pid, int(stat[2]), owner))
    return found


def kill_marked(name: str, value: str) -> int:
    """(Linux) SIGKILL our live processes whose environment sets `name` to `value` (a
    background command's own marker: what left its group with `setsid` too); how many."""
    token = owner_token()
    found = [f for f in scan(lambda owner: owner == token) if _marker(f.pid, name) == value]
    _signal(found, set(), signal.SIGKILL)
    return len(found)


def _signal(found: Iterable[Found], groups: set[int], sig: signal.Signals) -> None:
    """Signal each process if its marker still matches, then `groups` and each group
    holding one of the processes."""
    groups = set(groups)  # the caller's set stays as it was
    for proc in found:
        groups.add(proc.pgid)
        with contextlib.suppress(AttributeError, OSError):  # no pidfd here, or gone
            pidfd = os.pidfd_open(proc.pid)
            try:
                if _marker(proc.pid) == proc.owner:  # the pidfd is this process, not a reuse
                    signal.pidfd_send_signal(pidfd, sig)
            finally:
                os.close(pidfd)
    for pgid in groups:
        if pgid > 1 and pgid != os.getpgrp():
            with contextlib.suppress(OSError):
                os.killpg(pgid, sig)


def _stop(find: Callable[[], list[Found]], groups: set[int], grace: float) -> int:
    """SIGTERM, wait up to `grace` for everything to end, SIGKILL the rest. The count
    of processes found at first (groups without a marked member count as one)."""
    found = find()
    if not found and not groups:
        return 0
    _signal(found, groups, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while True:
        left = find()
        alive = {g for g in groups if _exists(os.killpg, g) and (not LINUX or _has_live_member(g))}
        if not left and not alive:
            break
        if time.monotonic() >= deadline:
            _signal(left, alive, signal.SIGKILL)
            break
        time.sleep(POLL_SECONDS)
    return len(found) + len(groups - {f.pgid for f in found})


def _has_live_member(pgid: int) -> bool:
    """(Linux) A non-zombie process in the group: zombies await a reaper we may not be."""
    stats = (_stat(int(entry.name)) for entry in os.scandir(PROC) if entry.name.isdigit())
    return any(stat is not None and stat[0] != "Z" and int(stat[2]) == pgid for stat in stats)


# ---- on exit ------------------------------------------------------------------------


def shutdown(grace: float = KILL_GRACE_SECONDS) -> int:
    """Stop every process our tools started (exit path). Returns how many were found."""
    token = owner_token()
    reaper = _reaper
    if reaper is not None and reaper is not threading.current_thread():
        reaper.join(grace * 2)  # a short command must not leave a start-up reap half done
    with _lock:
        groups = set(_groups)
        _groups.clear()
    if LINUX:
        # Only groups that still hold a process of ours: an ended group's id may be reused.
        groups &= {f.pgid for f in scan(lambda owner: owner == token)}
        count = _stop(lambda: scan(lambda owner: owner == token), groups, grace)
    else:
        count = _stop(list, {g for g in groups if _exists(os.killpg, g)}, grace)
    with contextlib.suppress(OSError):
        _registry_file(token).unlink(missing_ok=True)
    return count


def install_exit_signals() -> Callable[[], None]:
    """SIGTERM and SIGHUP stop our processes before agent-tui dies of the signal.
    Returns a function that puts the previous handlers back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous: dict[signal.Signals, object] = {}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        shutdown()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            previous[sig] = signal.signal(sig, on_signal)

    def restore() -> None:
        for sig, handler in previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, handler)  # type: ignore[arg-type]

    return restore


# ---- at start: what a killed agent-tui left behind ----------------------------------


def reap_orphans(grace: float = KILL_GRACE_SECONDS) -> int:
    """Stop processes whose agent-tui is dead; delete dead owners' records. Returns how
    many processes (or groups, without /proc) were found."""
    token = owner_token()
    scope = _fields(token)[2]
    alive: dict[str, bool] = {}

    def orphaned(owner: str) -> bool:
        if owner == token or _fields(owner)[2] != scope:
            return False  # ours, or left with another data dir: reaped by its next start
        if owner not in alive:
            alive[owner] = owner_alive(owner)
        return not alive[owner]

    count = _stop(lambda: scan(orphaned), set(), grace) if LINUX else 0
    with contextlib.suppress(OSError):
        folder = _registry_file(token).parent
        for record in folder.iterdir() if folder.is_dir() else ():
            if not orphaned(record.name):
                continue
            if not LINUX:
                count += _stop(list, _recorded_groups(record), grace)
            record.unlink(missing_ok=True)
    return count


def _recorded_groups(record: Path) -> set[int]:
    """Groups in a dead owner's record whose leader still leads them (an ended group's
    id may have been reused by an unrelated process, which would not lead that group)."""
    groups = set()
    with contextlib.suppress(OSError):
        for line in record.read_text(encoding="ascii").split():
            if line.isdigit():
                pgid = int(line)
                with contextlib.suppress(OSError):
                    if os.getpgid(pgid) == pgid:
                        groups.add(pgid)
    return groups


def reap_in_background() -> threading.Thread:
    """`reap_orphans` on a daemon thread: start-up does not wait for it."""
    global _reaper
    with _lock:
        if _reaper is None or not _reaper.is_alive():
            _reaper = threading.Thread(target=_reap_quietly, name="reap-orphans", daemon=True)
            _reaper.start()
    return _reaper


def _reap_quietly() -> None:
    with contextlib.suppress(Exception):  # a start-up nicety must never break start-up
        reap_orphans()


def stderr_tail(file: IO[bytes] | None) -> str:
    """The end of what a server wrote to its stderr file ("" if none, or closed)."""
    if file is None or file.closed:
        return ""
    try:
        file.seek(0, 2)
        file.seek(max(0, file.tell() - STDERR_TAIL_BYTES))
        return file.read().decode("utf-8", "replace").strip()
    except (OSError, ValueError):
        return ""
