"""ACP session updates printed as `run` prints engine events. Text: the agent's text on
stdout, one line per finished tool call on stderr (tool_lines, as headless.TextView).
JSON: one event per line; the protocol does not carry the engine's own events, so each
update is printed as it came (`session.update`), then how the prompt ended."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from agent_tui.tool_lines import PLAN_EXIT_TOOL, tool_line

META = "agent-tui"
"""Our key in ACP's `_meta` (acp/tool_calls.py): the tool's name, notices, compaction."""
FINISHED = {"completed": "completed", "failed": "error"}


def _meta(update: dict[str, Any]) -> dict[str, Any]:
    meta = update.get("_meta")
    found = meta.get(META) if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def tool_name(call: dict[str, Any]) -> str:
    name = _meta(call).get("tool")
    if isinstance(name, str):
        return name
    raw = call.get("rawInput")
    if isinstance(raw, dict) and isinstance(raw.get("tool"), str):
        return raw["tool"]  # the plan approval question
    return str(call.get("kind") or "tool")


class TextRenderer:
    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self._at_line_start = True
        self._calls: dict[str, dict[str, Any]] = {}
        self._reported: set[str] = set()

    def _newline(self) -> None:
        if not self._at_line_start:
            self.out.write("\n")
            self.out.flush()
            self._at_line_start = True

    def _note(self, text: str) -> None:
        self._newline()
        print(text, file=self.err, flush=True)

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk" and _meta(update).get("paragraph"):
            self._newline()  # the next reply: on a line of its own, as `run` prints it
        elif kind == "agent_message_chunk":
            content = update.get("content") or {}
            text = content.get("text") if content.get("type") == "text" else None
            if text:
                self.out.write(text)
                self.out.flush()
                self._at_line_start = text.endswith("\n")
        elif kind in ("tool_call", "tool_call_update"):
            self._tool_call(update)
        elif kind == "agent_thought_chunk" and _meta(update).get("notice"):
            text = (update.get("content") or {}).get("text") or ""
            self._note(text.rstrip("\n"))

    def _tool_call(self, update: dict[str, Any]) -> None:
        call_id = str(update.get("toolCallId"))
        call = self._calls.setdefault(call_id, {})
        if self._reused(call, update):  # some models number calls per step: a new call
            call.clear()
            self._reported -= {f"{call_id}:{status}" for status in FINISHED.values()}
        call.update({k: v for k, v in update.items() if v is not None})
        meta = _meta(call)
        if meta.get("status") == "compacting":
            if update.get("sessionUpdate") == "tool_call":
                self._note("agent-tui: Compacting the conversation…")
            return
        status = FINISHED.get(str(call.get("status")))
        key = f"{call_id}:{status}"
        if status is None or key in self._reported:
            return
        self._reported.add(key)
        name = tool_name(call)
        data = call.get("rawInput") if isinstance(call.get("rawInput"), dict) else {}
        raw = call.get("rawOutput") if isinstance(call.get("rawOutput"), dict) else {}
        error = raw.get("error") if isinstance(raw.get("error"), str) else None
        metadata = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else None
        images = [i for i in _meta(call).get("images") or [] if isinstance(i, dict)]
        self._note(tool_line(name, data, status, error=error, metadata=metadata, images=images))
        plan = data.get("plan") if name == PLAN_EXIT_TOOL else None
        if isinstance(plan, str) and status == "completed":
            self.out.write(plan.strip() + "\n")  # `run --agent plan`: the plan is the answer
            self.out.flush()

    @staticmethod
    def _reused(call: dict[str, Any], update: dict[str, Any]) -> bool:
        """An id seen before now names another call: the earlier one had finished and this
        one starts over, or names another tool or input."""
        if str(call.get("status")) not in FINISHED:
            return False
        if update.get("status") in ("pending", "in_progress"):
            return True
        if _meta(update).get("tool") not in (None, _meta(call).get("tool")):
            return True
        raw = update.get("rawInput")
        return raw is not None and raw != call.get("rawInput")

    def permission(self, session_id: str, call: dict[str, Any], reply: str) -> None:
        pass  # a refusal shows as the tool's own error line, as in `run`

    def finished(self, session_id: str, stop_reason: str) -> None:
        self._newline()
        print(f"session {session_id}", file=self.err, flush=True)

    def failed(self, session_id: str | None, kind: str, message: str) -> None:
        self._newline()
        if session_id and kind == "provider":  # the turn ran, as `run` says after one
            print(f"session {session_id}", file=self.err, flush=True)


class JsonRenderer:
    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def _write(self, event: dict[str, Any]) -> None:
        self.out.write(json.dumps(event, ensure_ascii=False) + "\n")
        self.out.flush()

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self._write({"type": "session.update", "session_id": session_id, "update": update})

    def permission(self, session_id: str, call: dict[str, Any], reply: str) -> None:
        self._write(
            {
                "type": "permission.asked",
                "session_id": session_id,
                "tool": tool_name(call),
                "title": call.get("title") or "",
                "input": call.get("rawInput") or {},
                "reply": reply,
            }
        )

    def finished(self, session_id: str, stop_reason: str) -> None:
        self._write(
            {"type": "prompt.finished", "session_id": session_id, "stop_reason": stop_reason}
        )

    def failed(self, session_id: str | None, kind: str, message: str) -> None:
        self._write(
            {"type": "session.error", "session_id": session_id, "kind": kind, "message": message}
        )


Renderer = TextRenderer | JsonRenderer
