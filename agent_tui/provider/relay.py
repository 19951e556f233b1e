"""The person's relay (litellm loaded once in a process of theirs, relaying their
commands' model requests), client side: find it, or start it, and connect.

One provider process (provider/worker.py, litellm imported once) serves every command of
the same person on this machine, over a Unix socket in a 0700 folder of theirs. It is
found by a name that holds everything that must match for it to be used (docs/relay.md):
this agent-tui's code, the Python running it, and the credentials in the environment
(a command whose keys differ gets a relay of its own). The first command that needs it
starts it, detached; it exits after `relay.idle` minutes without a connection.

Import-light (os, sys, socket, stat, struct, hashlib): `__main__` connects before the CLI is
imported.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import socket
import stat
import struct
import sys
import time
from pathlib import Path

RUNTIME_ENV = "AGENT_TUI_RUNTIME_DIR"
"""Where the relay's socket lives (default: $XDG_RUNTIME_DIR, else the temp dir), in a
folder `agent-tui-<uid>` of mode 0700 inside it."""
RELAY_ENV = "AGENT_TUI_RELAY"
"""0: no relay (each command starts its own provider process, as before); a number: its
idle minutes, over the config's."""
FORMER_ENV = "AGENT_TUI_ENGINE"
"""RELAY_ENV's former name, read when RELAY_ENV is unset (docs/relay.md)."""
FORMER_KEY = "engine"
"""The config key `relay`'s former name (config/settings.py reads it too)."""
DEFAULT_IDLE_MINUTES = 30.0
"""How long a relay nobody uses stays (config `relay.idle`; 0: never start one)."""
START_WAIT = 10.0
"""Seconds a command waits for a new relay to listen (it binds before importing)."""
CREDENTIAL_WORDS = (
    "KEY", "TOKEN", "SECRET", "PASSWORD", "BASE", "URL", "ENDPOINT", "HOST", "PROJECT",
    "REGION", "LOCATION", "ORG", "API_VERSION", "PROXY", "CERT", "CA_BUNDLE", "PROFILE",
    "LITELLM", "AWS", "AZURE", "VERTEX", "GOOGLE", "OPENAI", "ANTHROPIC", "GEMINI",
)  # fmt: skip
"""Variables whose name holds one of these may change what litellm sends where: they are
part of the relay's name, so a command never uses a relay made with other ones."""
ALSO = ("HOME", "XDG_CONFIG_HOME")
"""Where litellm finds credential files (~/.aws, gcloud's): part of the name too."""
SOCKET_PATH_MAX = 107
"""A Unix socket's address holds 108 bytes, its terminating NUL included."""
MAX_FOLDER = SOCKET_PATH_MAX - len("/relay-0123456789abcdef.sock")
"""Longer, and `relay-<key>.sock` would not fit in a Unix socket's address (the relay
could not listen)."""
IGNORED = ("AGENT_TUI_OWNER", "AGENT_TUI_CONFIG_DIR", "AGENT_TUI_DATA_DIR", "AGENT_TUI_CONFIG")
TERMINAL = ("TERM", "TMUX", "SSH_", "KITTY_", "VSCODE_", "WT_", "ITERM", "KONSOLE", "VTE_")
"""A terminal's own variables (TERM_PROGRAM_VERSION, SSH_CONNECTION's host): never
credentials, and they differ from one terminal to the next."""


class Unavailable(OSError):
    """No relay can run here; the message is the one line `agent-tui relay` shows (each
    command then runs litellm in a provider process of its own)."""


def runtime_dir() -> Path:
    """The person's own 0700 folder for relay sockets (made, and checked to be theirs);
    Unavailable when it cannot be."""
    chosen = os.environ.get(RUNTIME_ENV)
    if chosen and not os.path.isdir(chosen):
        raise Unavailable(f"{RUNTIME_ENV} is {chosen}, which is not an existing folder")
    base = chosen or os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    folder = Path(base) / f"agent-tui-{os.getuid()}"
    if len(os.fsencode(folder)) > MAX_FOLDER:
        digest = hashlib.sha256(str(folder).encode()).hexdigest()[:8]
        folder = Path("/tmp") / f"agent-tui-{os.getuid()}-{digest}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError as exc:
        raise Unavailable(f"cannot make the folder {folder} ({exc.strerror or exc})") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise Unavailable(f"{folder} is not a folder but a link or a file")
    if info.st_uid != os.getuid():  # another user made it first: theirs to read and replace
        raise Unavailable(f"{folder} belongs to another user (uid {info.st_uid})")
    if info.st_mode & 0o077:
        mode = stat.S_IMODE(info.st_mode)
        raise Unavailable(f"{folder} is open to other users (mode {mode:04o}, not 0700)")
    return folder


def unavailable() -> str | None:
    """Why no relay can run for this person here (one line), or None: the runtime folder
    (missing, another user's, open to others) or Unix sockets refused (a seccomp filter)."""
    try:
        runtime_dir()
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
    except Unavailable as exc:
        return str(exc)
    except OSError as exc:
        return f"Unix sockets are refused here ({type(exc).__name__}: {exc.strerror or exc})"
    return None


@functools.lru_cache(maxsize=1)
def _code_stamp() -> str:
    """This agent-tui's code as installed: its version, path and files' sizes and times
    (an edited checkout is another relay). Read once per process: what it imported is
    the code it runs, whatever is edited since."""
    from agent_tui import __version__

    here = Path(__file__).resolve().parent.parent
    # The environment (a venv: its packages, litellm's version) and the interpreter, not
    # the name it was started by (`python` and `python3` are the same one).
    parts = [__version__, str(here), sys.prefix, os.path.realpath(sys.executable), sys.version]
    for folder, _, names in sorted(os.walk(here)):
        for name in sorted(names):
            if name.endswith(".py"):
                info = os.stat(os.path.join(folder, name))
                parts.append(f"{name}:{info.st_size}:{info.st_mtime_ns}")
    return "\n".join(parts)


def credential_env(environ: dict[str, str] | os._Environ[str] | None = None) -> dict[str, str]:
    environ = os.environ if environ is None else environ
    return {
        k: v
        for k, v in sorted(environ.items())
        if k in ALSO or (k not in IGNORED and _credential(k.upper()))
    }


def _credential(name: str) -> bool:
    return not name.startswith(TERMINAL) and any(word in name for word in CREDENTIAL_WORDS)


def relay_key(environ: dict[str, str] | None = None) -> str:
    digest = hashlib.sha256(_code_stamp().encode())
    for name, value in credential_env(environ).items():
        digest.update(f"\0{name}={value}".encode())
    return digest.hexdigest()[:16]


def socket_path(environ: dict[str, str] | None = None) -> Path:
    return runtime_dir() / f"relay-{relay_key(environ)}.sock"


def connect(path: Path) -> socket.socket | None:
    """A connection to the relay at `path`; None when none listens there (or Unix
    sockets are refused here: `unavailable` says so)."""
    try:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        client.connect(str(path))
    except OSError:
        client.close()
        return None
    return client


def connect_or_start(idle_minutes: float) -> socket.socket | None:
    """The relay's connection, starting one when none answers (None: it could not be
    started; the command starts a provider process of its own). Unavailable when none
    can run here."""
    path = socket_path()
    found = connect(path)
    if found is not None:
        return found
    why_not = unavailable()
    if why_not is not None:
        raise Unavailable(why_not)
    argv = [sys.executable, "-P", "-m", "agent_tui.relay_process", "--serve", str(path)]
    return start_once(path, [*argv, "--idle", str(idle_minutes * 60)])


def start_once(path: Path, argv: list[str]) -> socket.socket | None:
    """Start `argv`, the server for `path`, detached, unless one answers there: one start
    among commands launched together (a lock beside the socket), a dead server's socket
    removed first. A connection to the server found or started (waiting for it to
    listen), or None."""
    import fcntl

    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = connect(path)
        if found is not None:
            return found
        path.unlink(missing_ok=True)  # a dead server's
        spawn_detached(argv, path.with_suffix(".log"))
        deadline = time.monotonic() + START_WAIT
        while time.monotonic() < deadline:
            found = connect(path)
            if found is not None:
                return found
            time.sleep(0.01)
    return None


def listen_private(path: str) -> tuple[socket.socket, int]:
    """A Unix socket listening at `path` that only its user may connect to (created with
    umask 0177, in the 0700 runtime folder), and its inode: how its server tells that the
    path is still its own (`still_own`)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(path)
    except OSError:
        server.close()
        raise
    finally:
        os.umask(old)
    server.listen(64)
    return server, os.stat(path).st_ino


def still_own(path: str, inode: int) -> bool:
    """Whether the socket at `path` is still the one its server bound (not removed, not
    replaced by another server's)."""
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False


def remove_own(path: str, inode: int) -> None:
    """Remove the server's socket as it leaves, unless another server's replaced it."""
    if still_own(path, inode):
        with contextlib.suppress(OSError):
            os.unlink(path)


def peer_pid(conn: socket.socket) -> int:
    """The pid of the process at the other end of a Unix socket (SO_PEERCRED's first field)."""
    ucred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", ucred)[0])


OFF = ("0", "off", "false", "no")
"""The values of an environment switch that turn its part off."""


def switched_off(name: str) -> bool:
    """Whether the environment variable `name` turns its part off (OFF)."""
    return os.environ.get(name, "").strip().lower() in OFF


def spawn_detached(argv: list[str], log: Path) -> None:
    """`argv` detached (double fork: not this command's child, its own session, no
    terminal), writing to `log`: the relay."""
    from agent_tui.procs import OWNER_ENV

    env = {k: v for k, v in os.environ.items() if k != OWNER_ENV}  # not a tool of this one
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                out = os.open(str(log), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                os.dup2(null, 0)
                os.dup2(out, 1)
                os.dup2(out, 2)
                os.closerange(3, 1024)
                os.chdir("/")  # it serves every project: it holds none (nor imports from one)
                os.execve(argv[0], argv, env)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def ask(path: Path, op: str) -> dict[str, object] | None:
    """One request to the relay at `path` (`status`, `stop`): its answer, or None when
    none listens there."""
    import json

    client = connect(path)
    if client is None:
        return None
    with client, client.makefile("rwb") as stream:
        stream.write(json.dumps({"id": 1, "op": op}).encode() + b"\n")
        stream.flush()
        line = stream.readline()
    try:
        reply = json.loads(line)
    except ValueError:
        return None
    return reply.get("ok") if isinstance(reply, dict) else None


def relays() -> list[Path]:
    """The sockets of this person's relays (any version or credentials)."""
    try:
        return sorted(runtime_dir().glob("relay-*.sock"))
    except OSError:
        return []


def idle_minutes() -> float:
    """`relay.idle` of the config in force here (0 when AGENT_TUI_RELAY=0)."""
    env = RELAY_ENV if RELAY_ENV in os.environ else FORMER_ENV
    if switched_off(env):
        return 0.0
    setting = os.environ.get(env, "").strip().lower()
    with contextlib.suppress(ValueError):
        return max(float(setting), 0.0)
    try:
        from agent_tui.config.layers import raw_value

        value = raw_value("relay", "idle")
        if value is None:
            value = raw_value(FORMER_KEY, "idle")
    except Exception:  # a broken config: the CLI reports it; no relay meanwhile
        return 0.0
    if value is None:
        return DEFAULT_IDLE_MINUTES
    return float(value) if isinstance(value, (int, float)) and value >= 0 else 0.0
