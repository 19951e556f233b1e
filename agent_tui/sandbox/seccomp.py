"""The sandbox's seccomp filter: no new Unix-domain sockets, no io_uring.

A read-only mount does not stop `connect()` to a socket file, and the sockets on a
desktop reach outside any sandbox: Docker's (`docker run -v /:/host`), the systemd user
instance and D-Bus (`systemd-run --user`), ssh-agent and gpg-agent (your keys), tmux and
X11 (keystrokes into your terminal). So `socket(AF_UNIX, ...)` fails with EPERM inside;
`socketpair()` (pipes between a program's own processes) still works. io_uring could
open sockets without a system call the filter sees, so it is refused too. Syscalls of
another architecture (32-bit programs) all fail: their socket calls cannot be checked.

The filter is a classic BPF program handed to bwrap (`--seccomp FD`).
"""

from __future__ import annotations

import errno
import platform
import struct

LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
RET_K = 0x06  # BPF_RET | BPF_K
RET_ALLOW = 0x7FFF0000
RET_EPERM = 0x00050000 | errno.EPERM
X32_SYSCALL_BIT = 0x40000000
AF_UNIX = 1
IO_URING_SETUP = 425
"""Same number on every architecture (syscalls added after 5.1 share one table)."""
OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0 = 0, 4, 16
"""struct seccomp_data; arg0's low 32 bits on a little-endian machine."""

ARCHES = {
    "x86_64": (0xC000003E, 41),
    "amd64": (0xC000003E, 41),
    "aarch64": (0xC00000B7, 198),
    "arm64": (0xC00000B7, 198),
}
"""machine -> (AUDIT_ARCH_*, the socket syscall's number)."""


def program() -> bytes | None:
    """The filter for this machine's architecture (None: not one we know)."""
    if (arch := ARCHES.get(platform.machine().lower())) is None:
        return None
    audit_arch, socket_nr = arch
    insns = [
        (LD_ABS, 0, 0, OFFSET_ARCH),  # 0
        (JEQ_K, 1, 0, audit_arch),  # 1: native -> 3
        (RET_K, 0, 0, RET_EPERM),  # 2: another architecture: nothing works
        (LD_ABS, 0, 0, OFFSET_NR),  # 3
        (JGE_K, 4, 0, X32_SYSCALL_BIT),  # 4: x32 -> 9
        (JEQ_K, 3, 0, IO_URING_SETUP),  # 5: -> 9
        (JEQ_K, 0, 3, socket_nr),  # 6: socket -> 7, else -> 10
        (LD_ABS, 0, 0, OFFSET_ARG0),  # 7: its domain
        (JEQ_K, 0, 1, AF_UNIX),  # 8: AF_UNIX -> 9, else -> 10
        (RET_K, 0, 0, RET_EPERM),  # 9
        (RET_K, 0, 0, RET_ALLOW),  # 10
    ]
    return b"".join(struct.pack("<HBBI", *insn) for insn in insns)
