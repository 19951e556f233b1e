"""The one-line summary of a tool call that `run` prints on stderr, from plain data: the
headless view builds it from a ToolPart, `run --attach` from an ACP tool call. A leaf:
no pydantic, so the attach client stays light."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from agent_tui.bash_semantics import exit_meaning

if TYPE_CHECKING:
    from agent_tui.records import ToolPart

SHORT_INPUT = 60
PLAN_EXIT_TOOL = "plan_exit"
"""The plan agent's tool: when it completes, `run` prints the plan as the answer."""


def short_input(data: dict[str, Any]) -> str:
    """The argument that names what a call does (command, file, pattern...), shortened."""
    for key in ("command", "file_path", "pattern", "path", "description"):
        if isinstance(data.get(key), str):
            text = data[key]
            break
    else:
        text = json.dumps(data, ensure_ascii=False) if data else ""
    text = " ".join(text.split())
    return text if len(text) <= SHORT_INPUT else text[: SHORT_INPUT - 1] + "…"


def failed_exit(data: Mapping[str, Any], metadata: Mapping[str, Any] | None) -> int | None:
    """A command's exit code when the command failed: the call ran to its end, but every
    view marks it failed, not done. None for 0, for an exit that is an answer (grep's 1,
    "No matches found", as hooks hear it: bash_semantics.exit_meaning), or a call that is
    no command."""
    code = (metadata or {}).get("exit_code")
    if not isinstance(code, int) or code == 0:
        return None
    command = data.get("command")
    return code if exit_meaning(command if isinstance(command, str) else "", code)[0] else None


def shown_status(part: ToolPart) -> str:
    """The status every view shows: a command that ran and exited non-zero failed
    ("error"; its output is kept as a completed call's)."""
    state = part.state
    if state.status == "completed" and failed_exit(state.input, state.metadata) is not None:
        return "error"
    return state.status


def image_mark(image: Mapping[str, Any], shown: str = "") -> str:
    """`image PNG, 800×600, 12.3 KB` (with the image's name unless the line shows it):
    what a tool line says of an image the call returned (an ImageAttachment's fields)."""
    mime = str(image.get("mime") or "")
    kind = mime.removeprefix("image/").upper().replace("WEBP", "WebP")
    width, height = image.get("width"), image.get("height")
    size = f"{width}×{height}, " if width and height else ""
    count = int(image.get("bytes") or 0)
    kb = f"{count / 1024:.1f} KB" if count >= 1024 else f"{count} bytes"
    name = image.get("name") or ""
    named = f"{name} " if name and name != shown else ""
    return f"image {named}{kind}, {size}{kb}"


def tool_line(
    tool: str,
    data: dict[str, Any],
    status: str,
    *,
    error: str | None = None,
    metadata: dict[str, Any] | None = None,
    images: Iterable[Mapping[str, Any]] = (),
) -> str:
    """`[bash] ls -la — failed (exit code 2)`; `status` is completed or error. A command
    that ran to its end and exited non-zero is `failed` (so is its ACP tool call)."""
    meta = metadata or {}
    code = failed_exit(data, meta)
    if code is not None and error is None:
        status = "failed"
    line = f"[{tool}] {short_input(data)} — {status}"
    if status == "error":
        first = ((error or "").splitlines() or [""])[0]
        line += f": {first[:120]}"
    elif status in ("completed", "failed"):
        for image in images:
            line += f" ({image_mark(image, short_input(data))})"
        if meta.get("truncated"):
            line += f" (truncated, full output: {meta.get('output_path')})"
        if code is not None:
            line += f" (exit code {code})"
        if isinstance(meta.get("session_id"), str):  # a subagent's session
            line += f" (session {meta['session_id']})"
    return line
