"""History after the compaction boundary, and its conversion to provider messages."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    FilePart,
    MessageWithParts,
    ReasoningPart,
    Session,
    SubtaskPart,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
    ToolStatePending,
    ToolStateRunning,
    UserMessage,
)
from agent_tui.step.after_summary import (
    BRIDGE_TEXT,
    TODOS_RESTATED,
    after_summary_blocks,
    restated_text,
    todos_block,
)
from agent_tui.step.media import (
    ImagePlacement,
    file_image_block,
    images_message,
    tool_result_content,
)
from agent_tui.step.plan import PLAN_RESTATED, plan_block

COMPACTION_QUESTION = "What did we do so far?"
CLEARED_OUTPUT = "[Old tool result content cleared]"
INTERRUPTED_OUTPUT = "[Tool execution was interrupted]"
CONTINUE_TEXT = "Continue if you have next steps"


def summary_for(messages: list[MessageWithParts], compaction_id: str) -> MessageWithParts | None:
    """The finished summary answering a compaction request, if any."""
    for message in reversed(messages):
        info = message.info
        if isinstance(info, AssistantMessage) and info.in_force and info.parent_id == compaction_id:
            return message
    return None


def arrange_after_compaction(
    messages: list[MessageWithParts], session: Session
) -> list[MessageWithParts]:
    """[question, summary, kept tail, later messages] from messages loaded since the boundary."""
    if (compaction_id := session.compaction_id) is None:
        return messages
    summary = summary_for(messages, compaction_id)
    head = [m for m in messages if m.info.id == compaction_id]
    tail = [m for m in messages if m.info.id < compaction_id]
    later = [m for m in messages if m.info.id > compaction_id and m is not summary]
    return head + ([summary] if summary else []) + tail + later


def _user_content(
    message: MessageWithParts, *, reminder: bool, images: ImagePlacement = "user"
) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart) and not part.ignored and part.text:
            text = part.text
            if reminder and not part.synthetic:
                text = (
                    "<system-reminder>\nThe user sent the following message while you were "
                    f"working:\n{text}\n\nPlease address this message and continue with your "
                    "tasks.\n</system-reminder>"
                )
            content.append({"type": "text", "text": text})
        elif isinstance(part, CompactionPart):
            content.append({"type": "text", "text": COMPACTION_QUESTION})
        elif isinstance(part, SubtaskPart):
            content.append({"type": "text", "text": part.prompt})
        elif isinstance(part, FilePart):
            if part.mime.startswith("image/"):
                content.append(file_image_block(part, images))
            else:
                content.append(
                    {"type": "text", "text": f"[Attached file: {part.filename or part.url}]"}
                )
    return content


def tool_result_text(part: ToolPart) -> str:
    state = part.state
    if isinstance(state, ToolStateCompleted):
        if state.time.compacted:
            return f"{CLEARED_OUTPUT} (recall id {part.id})"
        return state.shortened if state.shortened is not None else state.output
    if isinstance(state, ToolStateError):
        return state.error or "Tool failed."
    return INTERRUPTED_OUTPUT


_ARGUMENTS_MEMO: dict[str, str] = {}
_ARGUMENTS_MEMO_MAX = 100_000


def _arguments_json(part: ToolPart) -> str:
    """The call's input as JSON; memoised once the call is finished (its input is final)."""
    if isinstance(part.state, (ToolStatePending, ToolStateRunning)):
        return json.dumps(part.state.input)
    cached = _ARGUMENTS_MEMO.get(part.id)
    if cached is None:
        if len(_ARGUMENTS_MEMO) >= _ARGUMENTS_MEMO_MAX:
            _ARGUMENTS_MEMO.clear()
        cached = _ARGUMENTS_MEMO[part.id] = json.dumps(part.state.input)
    return cached


def thinking_blocks(message: MessageWithParts) -> list[dict[str, Any]]:
    """Signed (or redacted) thinking blocks of an assistant message, as Anthropic wants
    them back: a thinking model continuing a tool-use turn needs them verbatim."""
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if not isinstance(part, ReasoningPart) or part.ignored:
            continue
        if part.redacted:
            blocks.append({"type": "redacted_thinking", "data": part.redacted})
        elif part.signature:
            blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
    return blocks


def written_summary(message: MessageWithParts) -> str:
    """The text the summariser wrote (its parts; what an edit leaves in the database)."""
    return "\n\n".join(
        p.text
        for p in message.parts
        if isinstance(p, TextPart) and not p.ignored and p.text.strip()
    )


def summary_text(message: MessageWithParts) -> str:
    """A summary's text in force: the person's edit if any, else what was written."""
    info = message.info
    if isinstance(info, AssistantMessage) and info.edited_summary is not None:
        return info.edited_summary
    return written_summary(message)


def _assistant_messages(
    message: MessageWithParts,
    *,
    keep_thinking: bool,
    images: ImagePlacement = "user",
    after_result: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    text = summary_text(message)  # of a summary: the person's correction (/summary), if any
    info = message.info
    summary = isinstance(info, AssistantMessage) and info.summary
    # A summary is text only: a summariser that called a tool anyway had it ignored.
    tools = (
        [] if summary else [p for p in message.parts if isinstance(p, ToolPart) and not p.ignored]
    )
    if not text and not tools:
        return []
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if thinking := (thinking_blocks(message) if keep_thinking and not summary else []):
        out["thinking_blocks"] = thinking
    if tools:
        out["tool_calls"] = [
            {
                "id": p.call_id,
                "type": "function",
                "function": {"name": p.tool, "arguments": _arguments_json(p)},
            }
            for p in tools
        ]
    results = [
        {
            "role": "tool",
            "tool_call_id": p.call_id,
            "content": tool_result_content(p, _result_text(p, after_result), images),
        }
        for p in tools
    ]
    carried = images_message(tools, images)  # images the provider takes only from the user
    return [out, *results, *([carried] if carried else [])]


def _result_text(part: ToolPart, after_result: Mapping[str, str] | None) -> str:
    """A tool's result as the model reads it, with what follows it (a rule it brought
    in: step/memory_rules.py)."""
    added = after_result.get(part.id) if after_result else None
    text = tool_result_text(part)
    return f"{text}\n\n{added}" if added else text


def _is_compaction_request(message: MessageWithParts) -> bool:
    return isinstance(message.info, UserMessage) and any(
        isinstance(p, CompactionPart) for p in message.parts
    )


def filter_compacted(history: list[MessageWithParts]) -> list[MessageWithParts]:
    """Drop compaction requests and summaries that are not the active boundary: a request
    still pending, a summary that failed or was interrupted; and undone turns."""
    active_summary = None
    if len(history) > 1 and _is_compaction_request(history[0]):
        active_summary = summary_for(history[1:2], history[0].info.id)
    out = []
    for index, message in enumerate(history):
        if _is_compaction_request(message) and not (index == 0 and active_summary):
            continue
        info = message.info
        if info.undone:  # a turn taken back with /undo
            continue
        if isinstance(info, AssistantMessage) and info.summary and message is not active_summary:
            continue
        out.append(message)
    return out


def to_model_messages(
    history: list[MessageWithParts],
    *,
    reminder_after: str | None = None,
    keep_thinking: bool = False,
    images: ImagePlacement = "user",
    after_result: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Provider (OpenAI-format) messages: every tool call paired with exactly one result,
    consecutive user messages merged so roles alternate. `keep_thinking` sends signed
    thinking blocks back (Anthropic models); `images` says where tools' images go
    (step/media.py); `after_result`: text after a tool part's result, by part id."""
    out: list[dict[str, Any]] = []
    after_summary = False
    for message in filter_compacted(history):
        if isinstance(message.info, UserMessage):
            reminder = message.info.queued or (
                reminder_after is not None and message.info.id > reminder_after
            )
            if not (content := _user_content(message, reminder=reminder, images=images)):
                continue
            after_summary = False
            if out and out[-1]["role"] == "user":
                out[-1]["content"].extend(content)
            else:
                out.append({"role": "user", "content": content})
        else:
            produced = _assistant_messages(
                message, keep_thinking=keep_thinking, images=images, after_result=after_result
            )
            if produced and after_summary:
                # The kept tail starts mid-turn with a step: keep roles alternating.
                out.append({"role": "user", "content": [{"type": "text", "text": BRIDGE_TEXT}]})
            elif produced and out and out[-1]["role"] == "assistant":
                # Two assistant turns in a row (an interrupted step, then another):
                # providers want one, so merge the text into the earlier message.
                earlier, later = out[-1], produced[0]
                texts = [t for t in (earlier.get("content"), later.get("content")) if t]
                earlier["content"] = "\n\n".join(texts) or None
                for key in ("tool_calls", "thinking_blocks"):
                    if later.get(key):
                        earlier[key] = later[key]
                produced = produced[1:]
            out.extend(produced)
            info = message.info
            after_summary = bool(produced) and isinstance(info, AssistantMessage) and info.summary
            carried = after_summary_blocks(info) if after_summary else []  # pins, file ledger
            if after_summary and (info.restated or info.todos or info.plan or carried):
                texts = [restated_text(info.restated)] if info.restated else []
                if info.todos:
                    texts.append(todos_block(info.todos, TODOS_RESTATED))
                if info.plan:
                    texts.append(plan_block(info.plan, PLAN_RESTATED))
                texts.extend(carried)
                content = [{"type": "text", "text": text} for text in texts]
                out.append({"role": "user", "content": content})
                after_summary = False
    return out


def last_finished_assistant(history: list[MessageWithParts]) -> AssistantMessage | None:
    for message in reversed(history):
        info = message.info
        if isinstance(info, AssistantMessage) and info.finish and not info.summary:
            return info
    return None
