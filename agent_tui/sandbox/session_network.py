"""One session's network while sandbox.network is off: a namespace with only loopback (no
route out, as bubblewrap's --unshare-net gives each command), made once and joined by the
session's commands, so that a server one of them starts in the background answers a
later one, and no other session's command, nor anything on this machine, reaches it.

bubblewrap has no option to join a network namespace, so the namespace is made by a
bwrap that starts (`--unshare-net`, which also brings loopback up), says its child's pid
(`--info-fd`), waits while agent-tui opens that child's namespace (`--block-fd`), then
exits: agent-tui's open descriptor keeps the namespace, and no process is left holding
it. Each command then starts as `nsenter --net=/proc/AGENT_TUI/fd/N [--user=…] -- bwrap …`
without --unshare-net (the user namespace that owns the network, where bwrap made one:
not root). Closing the descriptors (`close`: the session let go, the engine closing, or
agent-tui's own end, SIGKILL included) frees the namespace once its last command ends.
Where any of it fails, commands keep a network of their own each, and the person is told
once (`warn`)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import resource
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from agent_tui.sandbox.support import end_helper, start_helper

NSENTER_ENV = "AGENT_TUI_NSENTER"
"""The nsenter program to use instead of the one on PATH (util-linux)."""
NS_GET_USERNS = 0xB701
"""ioctl(2) on a namespace: a descriptor of the user namespace that owns it."""
MAKE_TIMEOUT_S = 10.0
FIRST_HELD_FD = 256
"""Held namespaces get descriptor numbers from here up, each a number not used before
(until the limit makes them start again): a command line naming a closed session's
descriptor can never find another session's namespace under that number."""
FALLBACK = (
    "Background servers are not reachable from later commands: sandboxed commands each "
    "get a network of their own here ({reason})."
)


class NetworkUnavailable(Exception):
    """The shared namespace cannot be made or joined here (the reason, for the notice)."""


class _Numbers:
    next = FIRST_HELD_FD


def _held(fd: int) -> int:
    """`fd` moved to a number no namespace of this process had before (kept where the
    descriptor limit leaves none: the number is then reused, as before this move)."""
    limit = min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1 << 20)
    if _Numbers.next >= limit:
        _Numbers.next = FIRST_HELD_FD
    try:
        moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _Numbers.next)
    except OSError:
        return fd
    os.close(fd)
    _Numbers.next = moved + 1
    return moved


@dataclass(frozen=True)
class _Namespace:
    net: int
    user: int | None
    """The owner of `net` when it is not agent-tui's own user namespace."""

    def close(self) -> None:
        for fd in (self.net, self.user):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


class SessionNetwork:
    """A session's loopback-only network namespace, made at its first sandboxed command."""

    def __init__(self, warn: Callable[[str], None] | None = None) -> None:
        self.warn = warn
        """Tells the person, once, that the namespace could not be made."""
        self._namespace: _Namespace | None = None
        self._failed: str | None = None
        self._lock = asyncio.Lock()

    @property
    def inode(self) -> int | None:
        """The namespace's inode (what /proc/PID/ns/net names), while it is held."""
        return os.fstat(self._namespace.net).st_ino if self._namespace else None

    async def join_argv(self, bwrap: str) -> tuple[str, ...]:
        """The program line that starts a command in the namespace, bwrap to follow;
        () when it cannot be made here (the command then takes --unshare-net)."""
        async with self._lock:
            if self._namespace is None and self._failed is None:
                nsenter = shutil.which(os.environ.get(NSENTER_ENV) or "nsenter")
                try:
                    if nsenter is None:
                        raise NetworkUnavailable("nsenter from util-linux is not installed")
                    self._namespace = await _make(bwrap, nsenter)
                except (NetworkUnavailable, TimeoutError, OSError) as exc:
                    self._failed = str(exc) or f"no answer within {MAKE_TIMEOUT_S:g} s"
                    if self.warn is not None:
                        self.warn(FALLBACK.format(reason=self._failed))
            return () if self._namespace is None else _join_argv(self._namespace)

    def close(self) -> None:
        """Let the namespace go (it ends with the last command still in it)."""
        namespace, self._namespace, self._failed = self._namespace, None, None
        if namespace is not None:
            namespace.close()


def _join_argv(namespace: _Namespace, nsenter: str | None = None) -> tuple[str, ...]:
    nsenter = nsenter or shutil.which(os.environ.get(NSENTER_ENV) or "nsenter") or "nsenter"
    own = f"/proc/{os.getpid()}/fd"
    argv = [nsenter, f"--net={own}/{namespace.net}"]
    if namespace.user is not None:
        argv += [f"--user={own}/{namespace.user}", "--preserve-credentials"]
    return (*argv, "--")


async def _make(bwrap: str, nsenter: str) -> _Namespace:
    """Make the namespace (a short-lived bwrap) and check that a command can join it."""
    info_read, info_write = os.pipe()
    block_read, block_write = os.pipe()
    try:
        argv = _holder_argv(bwrap, info_write, block_read)
        proc = await start_helper(*argv, pass_fds=(info_write, block_read))
    except OSError as exc:
        for fd in (info_read, info_write, block_read, block_write):
            os.close(fd)
        raise NetworkUnavailable(f"{bwrap} could not be run ({exc})") from exc
    os.close(info_write)
    os.close(block_read)
    namespace: _Namespace | None = None
    try:
        info = await asyncio.wait_for(asyncio.to_thread(_read_info, info_read), MAKE_TIMEOUT_S)
        namespace = _open(info)
    except (TimeoutError, OSError, ValueError, KeyError) as exc:
        raise NetworkUnavailable(f"bubblewrap made no network namespace ({exc})") from exc
    finally:
        os.close(block_write)  # the bwrap goes on to exit
        await _ended(proc, namespace)
        os.close(info_read)
    await _check_join(namespace, nsenter)
    return namespace


def _holder_argv(bwrap: str, info_fd: int, block_fd: int) -> list[str]:
    """No --dev: a bwrap that mounts /dev maps the person to root in the namespace's
    owner, and a command joining that owner would then run as root in it."""
    return [
        bwrap, "--ro-bind", "/", "/", "--unshare-net", "--die-with-parent",
        "--info-fd", str(info_fd), "--block-fd", str(block_fd), "--", "true",
    ]  # fmt: skip


def _read_info(fd: int) -> dict[str, int]:
    """bwrap's --info-fd JSON (it may keep the pipe open while it waits on --block-fd)."""
    data = b""
    while chunk := os.read(fd, 4096):
        data += chunk
        with contextlib.suppress(ValueError):
            return json.loads(data)
    raise ValueError("bwrap said nothing about its namespaces")


def _open(info: dict[str, int]) -> _Namespace:
    """The child's namespace, checked to be the one bwrap made (not a reused pid's)."""
    net = os.open(f"/proc/{info['child-pid']}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        if os.fstat(net).st_ino != info["net-namespace"]:
            raise ValueError("the namespace's process was gone before it could be opened")
        owner = fcntl.ioctl(net, NS_GET_USERNS)
    except BaseException:
        os.close(net)
        raise
    if os.fstat(owner).st_ino == os.stat("/proc/self/ns/user").st_ino:
        os.close(owner)  # agent-tui's own (root): joining it again would fail
        return _Namespace(_held(net), None)
    return _Namespace(_held(net), _held(owner))


async def _ended(
    proc: asyncio.subprocess.Process, namespace: _Namespace | None, program: str = "bwrap"
) -> None:
    """Wait for `program`; a failure or a hang leaves no namespace behind."""
    try:
        _, err = await asyncio.wait_for(proc.communicate(), MAKE_TIMEOUT_S)
    except BaseException:
        await asyncio.shield(end_helper(proc))
        if namespace is not None:
            namespace.close()
        raise
    if proc.returncode != 0 and namespace is not None:
        namespace.close()
        lines = err.decode(errors="replace").strip().splitlines()
        raise NetworkUnavailable(lines[-1] if lines else f"{program} exit code {proc.returncode}")


async def _check_join(namespace: _Namespace, nsenter: str) -> None:
    """Join it once with `true`: where setns(2) is refused, no command could."""
    proc = await start_helper(*_join_argv(namespace, nsenter), "true")
    await _ended(proc, namespace, "nsenter")
