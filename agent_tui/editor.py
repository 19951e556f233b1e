"""Text a person gives a headless command: from $VISUAL / $EDITOR, a file, or stdin."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
import tempfile
from pathlib import Path

from agent_tui.errors import EditorError, UsageError

STDIN = "-"


def run_message(words: list[str]) -> str:
    """`run`'s message: its words joined (`-`: stdin); a UsageError when it is empty."""
    text = " ".join(words)
    if text.strip() == STDIN:
        text = sys.stdin.read()
    if not text.strip():
        raise UsageError('The message is empty: agent-tui run "what to do".')
    return text


async def read_text_arg(path: str, option: str) -> str:
    """The text of the file `option` names (`-`: stdin), as UTF-8."""
    if path == STDIN:
        return await asyncio.to_thread(sys.stdin.read)
    file = Path(path).expanduser()
    try:
        return await asyncio.to_thread(file.read_text, "utf-8")
    except FileNotFoundError:
        raise UsageError(
            f"{option} {path}: no such file. Give the path of a text file, or - to read stdin."
        ) from None
    except UnicodeDecodeError:
        raise UsageError(f"{option} {path}: the file is not UTF-8 text.") from None
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot read it ({exc.strerror or exc}).") from None


def editor_command() -> tuple[list[str], str]:
    """($VISUAL or $EDITOR as an argv, the variable's name)."""
    for name in ("VISUAL", "EDITOR"):
        if not (value := os.environ.get(name, "").strip()):
            continue
        try:
            argv = shlex.split(value)
        except ValueError as exc:
            raise UsageError(f"${name} ({value!r}) is not a valid command line: {exc}.") from None
        if argv:
            return argv, name
    raise UsageError(
        "No editor to open: set $EDITOR (e.g. `export EDITOR=nano`) or $VISUAL, or give the "
        "text with --set-file PATH (- reads stdin)."
    )


async def edit_text(text: str, filename: str) -> str:
    """Open `text` in the person's editor; what they saved. The editor runs in the
    foreground in our own process group (it needs the terminal), and is waited for."""
    argv, variable = editor_command()
    with tempfile.TemporaryDirectory(prefix="agent-tui-") as folder:
        path = Path(folder) / filename
        await asyncio.to_thread(path.write_text, text.rstrip("\n") + "\n", "utf-8")
        try:
            process = await asyncio.create_subprocess_exec(*argv, str(path))
        except OSError as exc:
            raise EditorError(
                f"The editor {argv[0]!r} (from ${variable}) could not be started: "
                f"{exc.strerror or exc}. Set ${variable} to an installed editor, or give the "
                "text with --set-file PATH. Nothing was saved."
            ) from None
        code = await process.wait()
        if code != 0:
            raise EditorError(
                f"The editor {argv[0]!r} exited with status {code}: nothing was saved."
            )
        try:
            return await asyncio.to_thread(path.read_text, "utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise EditorError(f"Could not read back what the editor saved: {exc}.") from None
