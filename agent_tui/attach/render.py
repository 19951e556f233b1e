"""A server's ACP session updates printed as `run` prints the engine's events
(run_output.py). Text: the agent's text on stdout, one line per finished tool call on
stderr. JSON: one event per line; the protocol does not carry the engine's own events, so
each update is printed as it came (`session.update`), then how the prompt ended."""

from __future__ import annotations

import json
from typing import Any, TextIO

from agent_tui.run_output import PipeView, TextView

META = "agent-tui"
"""Our key in ACP's `_meta` (acp/tool_calls.py): the tool's name, notices, compaction."""
FINISHED = {"completed": "completed", "failed": "error"}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _meta(update: dict[str, Any]) -> dict[str, Any]:
    return _dict(_dict(update.get("_meta")).get(META))


def tool_name(call: dict[str, Any]) -> str:
    if isinstance(name := _meta(call).get("tool"), str):
        return name
    raw = call.get("rawInput")
    if isinstance(raw, dict) and isinstance(raw.get("tool"), str):
        return raw["tool"]  # the plan approval question
    return str(call.get("kind") or "tool")


class TextRenderer(TextView):
    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        super().__init__(out, err)
        self._calls: dict[str, dict[str, Any]] = {}

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk" and _meta(update).get("paragraph"):
            self.newline()  # the next reply: on a line of its own, as `run` prints it
        elif kind == "agent_message_chunk":
            content = update.get("content") or {}
            if content.get("type") == "text" and (text := content.get("text")):
                self.text(text)
        elif kind in ("tool_call", "tool_call_update"):
            self._tool_call(update)
        elif kind == "agent_thought_chunk" and _meta(update).get("notice"):
            self.note(((update.get("content") or {}).get("text") or "").rstrip("\n"))

    def _tool_call(self, update: dict[str, Any]) -> None:
        call_id = str(update.get("toolCallId"))
        call = self._calls.setdefault(call_id, {})
        if self._reused(call, update):  # some models number calls per step: a new call
            call.clear()
            self.reported -= {f"{call_id}:{status}" for status in FINISHED.values()}
        call.update({k: v for k, v in update.items() if v is not None})
        if _meta(call).get("status") == "compacting":
            if update.get("sessionUpdate") == "tool_call":
                self.note("agent-tui: Compacting the conversation…")
            return
        if (status := FINISHED.get(str(call.get("status")))) is None:
            return
        raw = _dict(call.get("rawOutput"))
        self.tool(
            call_id,
            tool_name(call),
            _dict(call.get("rawInput")),
            status,
            error=raw.get("error") if isinstance(raw.get("error"), str) else None,
            metadata=raw.get("metadata") if isinstance(raw.get("metadata"), dict) else None,
            images=[i for i in _meta(call).get("images") or [] if isinstance(i, dict)],
        )

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
        self.ended(session_id)

    def failed(self, session_id: str | None, kind: str, message: str) -> None:
        self.newline()
        if session_id and kind == "provider":  # the turn ran, as `run` says after one
            self.ended(session_id)


class JsonRenderer(PipeView):
    def _event(self, kind: str, session_id: str | None, **fields: Any) -> None:
        event = {"type": kind, "session_id": session_id, **fields}
        self.line(json.dumps(event, ensure_ascii=False))

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self._event("session.update", session_id, update=update)

    def permission(self, session_id: str, call: dict[str, Any], reply: str) -> None:
        title, data = call.get("title") or "", call.get("rawInput") or {}
        tool = tool_name(call)
        self._event("permission.asked", session_id, tool=tool, title=title, input=data, reply=reply)

    def finished(self, session_id: str, stop_reason: str) -> None:
        self._event("prompt.finished", session_id, stop_reason=stop_reason)

    def failed(self, session_id: str | None, kind: str, message: str) -> None:
        self._event("session.error", session_id, kind=kind, message=message)


Renderer = TextRenderer | JsonRenderer
