"""Blocked is explained: when a sandboxed command fails because the sandbox stopped it,
one line saying what was blocked and which setting would allow it.

Read from the command's own output (what the OS told it: read-only file system,
permission denied or no such file on a hidden path, network unreachable), checked
against the policy it ran under, so an ordinary failure is never blamed on the sandbox.
"""

from __future__ import annotations

import re
from pathlib import Path

from agent_tui.sandbox.policy import SandboxPolicy, resolve

PREFIX = "[sandbox]"
READ_ONLY_FS = re.compile(
    r"read-only file system|\bEROFS\b|\[Errno 30\]|device or resource busy|\bEBUSY\b",
    re.IGNORECASE,
)
"""EBUSY: renaming a new file over a read-only mount (git's config.lock -> config)."""
NOT_READABLE = re.compile(
    r"permission denied|no such file or directory|\bEACCES\b|\bENOENT\b|\[Errno (?:2|13)\]",
    re.IGNORECASE,
)
NO_NETWORK = re.compile(
    r"network is unreachable|could not resolve host|temporary failure in name resolution|"
    r"name or service not known|no address associated with hostname|connection refused|"
    r"failed to establish a new connection|failed to connect|couldn't connect|"
    r"\bENETUNREACH\b|\bEAI_AGAIN\b|\bENOTFOUND\b|"
    r"\bECONNREFUSED\b|\[Errno (?:101|111|-2|-3)\]",
    re.IGNORECASE,
)
QUOTED = re.compile(r"""['"`‘“]([^'"`’”\n]+)['"`’”]""")
PATH_WORD = re.compile(r"(?:^|[\s(=])((?:~|/|\.\.?/)[^\s:'\",)]*)")
BEFORE_ERROR = re.compile(
    r"([^\s:'\"]+): (?:read-only file system|permission denied|no such file or directory|"
    r"device or resource busy)",
    re.IGNORECASE,
)
PROC_PID = re.compile(r"/proc/(\d+)")
NOT_PERMITTED = re.compile(r"operation not permitted|\bEPERM\b|\[Errno 1\]", re.IGNORECASE)
SOCKET_WORDS = re.compile(r"socket|\.sock\b|unix:|d-?bus|agent|docker", re.IGNORECASE)
BACKGROUND = re.compile(r"(?<![&>|<])&(?![&>])|\b(?:nohup|setsid|disown)\b")
BWRAP_FAILED = re.compile(r"^bwrap: (.+)$", re.MULTILINE)


def explain(output: str, policy: SandboxPolicy) -> str | None:
    """The line for a failed command's output, or None when the sandbox is not why."""
    if setup := BWRAP_FAILED.search(output):
        return f"{PREFIX} The sandbox could not start: {setup.group(1).strip()}"
    lines = output.splitlines()
    for line in lines:
        if NOT_READABLE.search(line) and (found := _hidden(line, policy)):
            return found
    for line in lines:
        if READ_ONLY_FS.search(line):
            return _read_only(line, policy)
    if NOT_PERMITTED.search(output) and SOCKET_WORDS.search(output):
        return (
            f"{PREFIX} Unix sockets cannot be opened in the sandbox: daemons outside it "
            "(Docker, D-Bus, systemd, ssh-agent, gpg-agent, tmux) are out of reach; "
            "sandbox.enabled: false turns the sandbox off."
        )
    if not policy.network and any(NO_NETWORK.search(line) for line in lines):
        return (
            f"{PREFIX} The sandbox has no network: connections fail (127.0.0.1 included: "
            "it is the sandbox's own loopback, not this machine's); "
            "sandbox.network: true would allow them."
        )
    return None


def background_note(command: str) -> str | None:
    """For a command that may leave processes running: they end with it in the sandbox."""
    if not BACKGROUND.search(command):
        return None
    return (
        f"{PREFIX} Processes this command left running in the background were stopped when "
        "it ended (the sandbox has its own process namespace); sandbox.enabled: false "
        "keeps them running."
    )


def created_config_note(policy: SandboxPolicy) -> str | None:
    """When a command created agent-tui's project config (it could not be mounted
    read-only before it existed): the person should look before the next start."""
    created = [path.name for path in policy.absent_config if path.exists()]
    if not created or policy.read_only:
        return None
    return (
        f"{PREFIX} This command created {' and '.join(created)} in the project, which "
        "agent-tui reads when it starts (permissions, sandbox settings): the person should "
        "check it before the next start."
    )


def _paths(line: str, cwd: Path) -> list[Path]:
    """Path-looking words of an error line, resolved against the command's folder."""
    words = [m.group(1) for m in BEFORE_ERROR.finditer(line)]
    words += [w for w in (m.group(1) for m in QUOTED.finditer(line)) if "/" in w or w[:1] == "~"]
    words += [m.group(1) for m in PATH_WORD.finditer(line)]
    paths = []
    for word in words:
        word = word.strip().rstrip(".,;)")
        if not word or word in (".", "..") or " " in word:
            continue
        path = Path(word).expanduser()
        paths.append(resolve(path if path.is_absolute() else cwd / path))
    return paths


def _hidden(line: str, policy: SandboxPolicy) -> str | None:
    if proc := PROC_PID.search(line):
        return (
            f"{PREFIX} /proc/{proc.group(1)} is not visible: the sandbox has its own process "
            "namespace, so agent-tui and every process outside it are out of reach "
            "(sandbox.enabled: false turns the sandbox off)."
        )
    for path in _paths(line, policy.cwd):
        if (denied := policy.denial(path)) is None:
            continue
        if denied.source == "sandbox.deny_read":
            how = f"remove {denied.shown} from sandbox.deny_read to allow reading it"
        else:
            how = "no setting exposes it (sandbox.enabled: false turns the sandbox off)"
        return f"{PREFIX} {path} is hidden from commands ({denied.source}); {how}."
    return None


def _read_only(line: str, policy: SandboxPolicy) -> str:
    path = next((p for p in _paths(line, policy.cwd) if not policy.may_write(p)), None)
    where = f" {path}" if path else ""
    if policy.read_only:
        return (
            f"{PREFIX} Plan mode runs commands in a read-only sandbox: nothing can be "
            f"written{f' ({path})' if path else ''}. Propose the change in your plan; the "
            "build agent makes it."
        )
    if path is not None and any(path.is_relative_to(p) for p in policy.protected):
        return (
            f"{PREFIX} {path} is read-only in the sandbox: git hooks and config and "
            "agent-tui's project config run later outside it, so only the person changes "
            "them (sandbox.enabled: false turns the sandbox off)."
        )
    suggestion = _suggest(path, policy.home) if path else "the folder"
    return (
        f"{PREFIX} Writing{where} was blocked: outside the project and $TMPDIR the file "
        f'system is read-only; sandbox.writable: ["{suggestion}"] would allow it.'
    )


def _suggest(path: Path, home: Path) -> str:
    """What to name in sandbox.writable: the folder written into (the file itself when
    that folder is ~ or /), with ~ for the home folder."""
    target = path if path.parent in (home, Path(path.anchor)) else path.parent
    if target.is_relative_to(home):
        return "~/" + str(target.relative_to(home))
    return str(target)
