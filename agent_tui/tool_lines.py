"""The one-line summary of a tool call that `run` prints on stderr, from plain data: the
headless view builds it from a ToolPart, `run --attach` from an ACP tool call. A leaf:
no pydantic, so the attach client stays light."""

from __future__ import annotations

import json
from typing import Any

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


def tool_line(
    tool: str,
    data: dict[str, Any],
    status: str,
    *,
    error: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> str:
    """`[bash] ls -la — completed (exit code 2)`; `status` is completed or error."""
    line = f"[{tool}] {short_input(data)} — {status}"
    if status == "error":
        first = ((error or "").splitlines() or [""])[0]
        line += f": {first[:120]}"
    elif status == "completed":
        meta = metadata or {}
        if meta.get("truncated"):
            line += f" (truncated, full output: {meta.get('output_path')})"
        if meta.get("exit_code") not in (None, 0):
            line += f" (exit code {meta['exit_code']})"
        if isinstance(meta.get("session_id"), str):  # a subagent's session
            line += f" (session {meta['session_id']})"
    return line
