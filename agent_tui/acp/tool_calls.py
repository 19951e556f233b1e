"""Tool parts as ACP tool calls: kind, a title naming the file or command, locations, the
diff of an edit or write, raw input and output."""

from __future__ import annotations

import os
from typing import Any

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolKind,
)

from agent_tui.acp.markdown import laid_out
from agent_tui.project.agents import PLAN_EXIT_TOOL
from agent_tui.records import (
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
    ToolStatePending,
    ToolStateRunning,
)
from agent_tui.session.hook_points import TRUST_TOOL
from agent_tui.tool_lines import short_input, shown_status

KINDS: dict[str, ToolKind] = {
    "read": "read",
    "edit": "edit",
    "write": "edit",
    "bash": "execute",
    "grep": "search",
    "glob": "search",
    "list": "search",
    "recall": "search",
    "webfetch": "fetch",
    "todowrite": "think",
    "todoread": "think",
    "task": "think",
    "skill": "read",
    "task_output": "execute",
    "task_stop": "execute",
    PLAN_EXIT_TOOL: "switch_mode",
}
STATUSES: dict[str, ToolCallStatus] = {
    "pending": "pending",
    "running": "in_progress",
    "completed": "completed",
    "error": "failed",
}
"""A tool state's status -> the tool call's."""
OUTPUT_SHOWN = 20_000
"""Characters of a tool's output put in the tool call's content (the model gets it all)."""

ToolContent = ContentToolCallContent | FileEditToolCallContent


META = "agent-tui"
"""Our key in ACP's `_meta`: what the protocol has no field for, for clients that know us
(`run --attach` prints the tool's name, as `run` does); others ignore it."""


def tool_kind(tool: str) -> ToolKind:
    return KINDS.get(tool, "other")


def tool_meta(tool: str, images: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The tool's name, and what the images it returned are (for the tool line)."""
    found: dict[str, Any] = {"tool": tool}
    if images:
        found["images"] = images
    return {META: found}


def _images(part: ToolPart) -> list[dict[str, Any]]:
    state = part.state
    if not isinstance(state, ToolStateCompleted):
        return []
    keep = {"mime", "name", "bytes", "width", "height"}
    return [image.model_dump(include=keep) for image in state.attachments]


def _path(data: dict[str, Any], directory: str) -> str | None:
    for key in ("file_path", "path"):
        if isinstance(value := data.get(key), str) and value:
            return value if os.path.isabs(value) else os.path.join(directory, value)
    return None


def tool_title(part: ToolPart) -> str:
    """What the call does, naming the file or the command (the app's tool line)."""
    state = part.state
    if isinstance(state, (ToolStateRunning, ToolStateCompleted)) and state.title:
        if part.tool == "bash":
            return str(state.input.get("command") or state.title)
        return f"{part.tool} {state.title}"
    subject = short_input(part.state.input)
    return f"{part.tool} {subject}".strip() if subject else part.tool


def locations(part: ToolPart, directory: str) -> list[ToolCallLocation] | None:
    if (path := _path(part.state.input, directory)) is None:
        return None
    line = part.state.input.get("offset")
    return [ToolCallLocation(path=path, line=line if isinstance(line, int) else None)]


def text_content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


def diff_content(path: str, unified: str) -> FileEditToolCallContent | None:
    """The hunks of a unified diff as ACP's diff (old text -> new text); None if empty or
    not a diff (a new file's preview, "(diff of … not shown: the file is too large)")."""
    if not any(line.startswith("@@") for line in unified.splitlines()):
        return None
    old: list[str] = []
    new: list[str] = []
    created = False
    for line in unified.splitlines():
        if line.startswith("--- "):
            created = line.strip() in ("--- /dev/null", "--- a/dev/null")
            continue
        if line.startswith(("+++ ", "@@", "\\")):
            continue
        if line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        else:
            text = line[1:] if line.startswith(" ") else line
            old.append(text)
            new.append(text)
    if not old and not new:
        return None
    old_text = None if created or not old else "\n".join(old) + "\n"
    return FileEditToolCallContent(
        type="diff", path=path, old_text=old_text, new_text="\n".join(new) + ("\n" if new else "")
    )


def permission_content(
    tool: str, data: dict[str, Any], detail: str, directory: str
) -> list[ToolContent]:
    """What a permission request shows: the diff of an edit or write (writing a new file:
    all its content and no old text, as the spec's diff has it), the trust question's
    lines and indents as Markdown that keeps them, else the app's detail."""
    if tool == TRUST_TOOL:
        return [text_content(laid_out(detail))]
    if tool in ("edit", "write") and (path := _path(data, directory)) is not None:
        if (diff := diff_content(path, detail)) is not None:
            return [diff]
        content = data.get("content")
        if tool == "write" and isinstance(content, str) and not os.path.lexists(path):
            return [
                FileEditToolCallContent(type="diff", path=path, old_text=None, new_text=content)
            ]
    return [text_content(detail)] if detail else []


def _content(part: ToolPart, directory: str) -> list[ToolContent] | None:
    state = part.state
    if isinstance(state, ToolStateError):
        return [text_content(state.error)]
    if isinstance(state, ToolStateRunning):  # a command's output so far (session/live_output)
        live = state.metadata.get("output")
        return [text_content(live)] if isinstance(live, str) and live else None
    if not isinstance(state, ToolStateCompleted):
        return None
    unified, path = state.metadata.get("diff"), _path(state.input, directory)
    diff = diff_content(path, unified) if isinstance(unified, str) and path is not None else None
    found: list[ToolContent] = [] if diff is None else [diff]
    if part.tool not in ("edit", "write", "read") or not found:
        output = state.output
        if len(output) > OUTPUT_SHOWN:
            output = output[:OUTPUT_SHOWN] + f"\n… ({len(state.output) - OUTPUT_SHOWN:,} more)"
        if output:
            found.append(text_content(output))
    return found


def _raw_output(part: ToolPart) -> Any:
    state = part.state
    if isinstance(state, ToolStateCompleted):
        meta = {k: v for k, v in state.metadata.items() if k != "diff"}
        return {"output": state.output, "metadata": meta}
    if isinstance(state, ToolStateError):
        return {"error": state.error}
    return None


def _fields(part: ToolPart, directory: str) -> dict[str, Any]:
    state = part.state
    return {
        "tool_call_id": part.call_id,
        "title": tool_title(part),
        "kind": tool_kind(part.tool),
        "status": STATUSES[shown_status(part)],
        "content": _content(part, directory),
        "locations": locations(part, directory),
        "raw_input": None if isinstance(state, ToolStatePending) else state.input,
        "raw_output": _raw_output(part),
        "field_meta": tool_meta(part.tool, _images(part)),
    }


def tool_call_start(part: ToolPart, directory: str) -> ToolCallStart:
    return ToolCallStart(session_update="tool_call", **_fields(part, directory))


def tool_call_progress(part: ToolPart, directory: str) -> ToolCallProgress:
    return ToolCallProgress(session_update="tool_call_update", **_fields(part, directory))
