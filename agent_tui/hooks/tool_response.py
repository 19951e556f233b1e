"""A tool call's `tool_response` in the shape Claude Code's counterpart returns it, for
PostToolUse hooks: Bash `{stdout, stderr, interrupted, isImage, noOutputExpected}`, Read
`{type, file}`, Write and Edit with `filePath`, `originalFile` and `structuredPatch`, Grep
`{mode: "content", content, numLines}`, Glob with `filenames`, Agent with the subagent's
answer and its last step's tokens. A tool Claude Code lacks gives `{"output": …}`, the
text the model read. Built from the call's input (by Claude Code's names, paths
absolute), its result and, for edit and write, the file as it was before."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_tui.bash_semantics import exit_meaning, no_output_expected

CONTEXT_LINES = 3
"""Unchanged lines around each hunk of a `structuredPatch` (a unified diff's)."""
READ_LINE = re.compile(r"^ *(\d+)\t(.*)$")
"""A line of the read tool's output: its number, a tab, its text."""
MATCH_LINE = re.compile(r"^(.+?):(\d+): (.*)$")
"""A line of the grep tool's output: `path:line: text`."""
EMPTY_FILE = "(The file is empty.)"
"""The read tool's output for an empty file."""
NO_OUTPUT = "(no output)"
"""The bash tool's output for a command that printed nothing."""
DEFAULT_AGENT_TYPE = "task"
"""The agent type of a task call that names none (session/subagent.py's default)."""


@dataclass(frozen=True)
class Ran:
    """One call as it ran: what a response is made of."""

    tool_input: dict[str, Any]
    """By Claude Code's names, paths absolute."""
    output: str
    metadata: dict[str, Any]
    original: str | None
    """An edited or written file's text before the call (None: it did not exist)."""
    duration_ms: int
    directory: Path
    """The session's folder: where a search without a `path` looked."""

    def field(self, name: str) -> str:
        return str(self.tool_input.get(name) or "")

    @property
    def base(self) -> Path:
        """Where a search looked (its `path` is as the model gave it)."""
        return self.directory / self.field("path")

    def shown(self, path: Path) -> str:
        """A found file as Claude Code lists it: relative to the session's folder."""
        try:
            return str(path.relative_to(self.directory))
        except ValueError:
            return str(path)


def claude_response(tool: str, ran: Ran) -> dict[str, Any]:
    """The response for `tool` (agent-tui's name); reads a file only to count a read
    file's lines past the window it showed, or an edited file as it is now (call it off
    the event loop)."""
    shape = _SHAPES.get(tool)
    return shape(ran) if shape is not None else {"output": ran.output}


def _bash(ran: Ran) -> dict[str, Any]:
    """agent-tui's bash merges stdout and stderr, as Claude Code's does into `stdout`; an
    exit that is an answer (grep's 1) is given its meaning, and its `Exit code` line
    (for the model) is left out, as Claude Code leaves it out; an output too long to
    show whole is where it was saved (`stdout` is the part the model read)."""
    command, code = ran.field("command"), ran.metadata.get("exit_code")
    stdout = "" if ran.output == NO_OUTPUT else ran.output
    response: dict[str, Any] = {
        "stdout": stdout,
        "stderr": "",
        "interrupted": bool(ran.metadata.get("interrupted") or ran.metadata.get("timed_out")),
        "isImage": False,
        "noOutputExpected": no_output_expected(command),
    }
    if ran.metadata.get("background_id"):  # run_in_background: its id, as Claude Code's
        response["backgroundTaskId"] = ran.metadata["background_id"]
    elif ran.metadata.get("truncated") and ran.metadata.get("output_path"):
        response["persistedOutputPath"] = ran.metadata["output_path"]  # the whole output
        response["persistedOutputSize"] = int(ran.metadata.get("total_bytes", 0))
    if isinstance(code, int) and code != 0:
        _, meaning = exit_meaning(command, code)
        response["stdout"] = stdout.removesuffix(f"Exit code: {code}").rstrip()
        if meaning is not None:
            response["returnCodeInterpretation"] = meaning
    return response


def _read(ran: Ran) -> dict[str, Any]:
    path = str(ran.metadata.get("path") or ran.field("file_path"))
    if "lines" not in ran.metadata and ran.output != EMPTY_FILE:  # an image
        return {"type": "image", "file": {"filePath": path}}
    lines = [m.group(2) for m in map(READ_LINE.match, ran.output.splitlines()) if m]
    start = int(ran.metadata.get("offset") or 1)
    if lines and not ran.metadata.get("more") and _ends_with_newline(Path(path)):
        lines.append("")  # Claude Code splits the text at "\n": the last piece is empty
    total = _count_lines(Path(path)) if ran.metadata.get("more") else start + len(lines) - 1
    file = {
        "filePath": path,
        "content": "\n".join(lines),
        "numLines": len(lines),
        "startLine": start,
        "totalLines": max(total, 0),
    }
    return {"type": "text", "file": file}


def _write(ran: Ran) -> dict[str, Any]:
    """A file that had text is updated (with its patch); one that did not, or was empty,
    is created, as Claude Code tells them apart."""
    path, content = ran.field("file_path"), ran.field("content")
    patch = structured_patch(ran.original, _now(path, content)) if ran.original else []
    return {
        "type": "update" if ran.original else "create",
        "filePath": path,
        "content": content,
        "structuredPatch": patch,
        "originalFile": ran.original or None,
        "userModified": False,
    }


def _edit(ran: Ran) -> dict[str, Any]:
    path = ran.field("file_path")
    return {
        "filePath": path,
        "oldString": ran.field("old_string"),
        "newString": ran.field("new_string"),
        "originalFile": ran.original,
        "structuredPatch": structured_patch(ran.original or "", _now(path, "")),
        "userModified": False,
        "replaceAll": bool(ran.tool_input.get("replace_all", False)),
    }


def _grep(ran: Ran) -> dict[str, Any]:
    """Claude Code's content mode: `path:line:text` lines (paths relative to the session's
    folder), their number, `numFiles: 0` and no `filenames` (they are for its
    files_with_matches mode), `appliedLimit` when matches were left out."""
    lines = [
        f"{ran.shown(ran.directory / m.group(1))}:{m.group(2)}:{m.group(3)}"
        for m in map(MATCH_LINE.match, ran.output.splitlines())
        if m
    ]
    response: dict[str, Any] = {
        "mode": "content",
        "numFiles": 0,
        "filenames": [],
        "content": "\n".join(lines),
        "numLines": len(lines),
    }
    if int(ran.metadata.get("matches", 0)) > len(lines):
        response["appliedLimit"] = len(lines)  # the grep tool's cap on matches shown
    return response


def _glob(ran: Ran) -> dict[str, Any]:
    count = int(ran.metadata.get("count", 0))
    names = [ran.shown(ran.base / line) for line in ran.output.splitlines()[:count] if line]
    return {
        "filenames": names,
        "durationMs": ran.duration_ms,
        "numFiles": len(names),
        "truncated": bool(ran.metadata.get("truncated_results", False)),
        "totalMatches": count,
        "countIsComplete": True,
    }


def _agent(ran: Ran) -> dict[str, Any]:
    """With the subagent's figures as Claude Code gives them: `usage` is its last step's
    (`input_tokens` uncached, the cache's apart, `output_tokens` with reasoning),
    `totalTokens` their sum (the context the subagent ended with), `totalToolUseCount`
    every call it made."""
    meta = ran.metadata
    response: dict[str, Any] = {
        "status": "completed",
        "prompt": ran.field("prompt"),
        "agentId": meta.get("session_id", ""),
        "agentType": ran.field("subagent_type") or DEFAULT_AGENT_TYPE,
        "content": [{"type": "text", "text": ran.output}],
        "totalDurationMs": ran.duration_ms,
    }
    if meta.get("model"):
        response["resolvedModel"] = meta["model"]
    tokens = meta.get("tokens")
    if isinstance(tokens, dict):
        cache = tokens.get("cache") or {}
        usage = {
            "input_tokens": int(tokens.get("input", 0)),
            "output_tokens": int(tokens.get("output", 0)) + int(tokens.get("reasoning", 0)),
            "cache_creation_input_tokens": int(cache.get("write", 0)),
            "cache_read_input_tokens": int(cache.get("read", 0)),
        }
        response.update(totalTokens=sum(usage.values()), usage=usage)
    if isinstance(meta.get("tool_uses"), int):
        response["totalToolUseCount"] = meta["tool_uses"]
    return response


_SHAPES: dict[str, Callable[[Ran], dict[str, Any]]] = {
    "bash": _bash,
    "read": _read,
    "write": _write,
    "edit": _edit,
    "grep": _grep,
    "glob": _glob,
    "task": _agent,
}


def structured_patch(old: str, new: str) -> list[dict[str, Any]]:
    """The hunks of a unified diff of `old` to `new`, as Claude Code's `structuredPatch`
    gives them: `{oldStart, oldLines, newStart, newLines, lines}` with ` `, `-`, `+`
    prefixed lines."""
    before, after = old.splitlines(), new.splitlines()
    hunks = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        first, last = group[0], group[-1]
        lines: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [f" {line}" for line in before[i1:i2]]
                continue
            lines += [f"-{line}" for line in before[i1:i2]]
            lines += [f"+{line}" for line in after[j1:j2]]
        old_lines, new_lines = last[2] - first[1], last[4] - first[3]
        hunks.append(
            {
                "oldStart": first[1] + 1 if old_lines else first[1],
                "oldLines": old_lines,
                "newStart": first[3] + 1 if new_lines else first[3],
                "newLines": new_lines,
                "lines": lines,
            }
        )
    return hunks


def _now(path: str, fallback: str) -> str:
    """The file's text after the call (a formatter may have changed it)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeError):
        return fallback


def _ends_with_newline(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            handle.seek(-1, 2)
            return handle.read(1) == b"\n"
    except OSError:
        return False


def _count_lines(path: Path) -> int:
    """Lines as Claude Code counts them: the pieces of the text split at "\n"."""
    try:
        with path.open("rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 16), b"")) + 1
    except OSError:
        return 0
