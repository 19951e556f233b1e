"""A stored session as the updates that tell a client its history (`session/load`)."""

from __future__ import annotations

from collections.abc import Iterator

from acp.schema import TextContentBlock, UserMessageChunk

from agent_tui.acp import draft
from agent_tui.acp.tool_calls import text_content, tool_call_start
from agent_tui.acp.updates import Update, agent_text, agent_thought, compaction_call
from agent_tui.records import (
    AssistantMessage,
    MessageWithParts,
    ReasoningPart,
    TextPart,
    ToolPart,
    UserMessage,
)
from agent_tui.step.messages import summary_text


def replay(
    messages: list[MessageWithParts], directory: str, compaction_updates: bool = False
) -> Iterator[Update]:
    """The person's words, the agent's text and reasoning, tool calls as they ended, and
    each compaction as a completed "Compact conversation" call with its summary (a
    completed `compaction_update` to a client that declared `session.compaction`). Undone
    turns are left out, as in the app."""
    for message in messages:
        info = message.info
        if info.undone:
            continue
        if isinstance(info, UserMessage):
            for part in message.parts:
                if isinstance(part, TextPart) and not part.synthetic and part.text:
                    yield UserMessageChunk(
                        session_update="user_message_chunk",
                        content=TextContentBlock(type="text", text=part.text),
                        message_id=info.id,
                    )
                elif isinstance(part, ToolPart):  # a `!command`
                    yield tool_call_start(part, directory)
            continue
        assert isinstance(info, AssistantMessage)
        if info.summary:
            if info.finish and not info.reverted:
                text = summary_text(message)  # the person's correction, if any
                call_id = f"compaction-{info.id}"
                if compaction_updates:
                    yield draft.compaction_update(call_id, "completed", summary=text)
                    continue
                content = [text_content(text)] if text else None
                yield compaction_call(call_id, "completed", content=content)
            continue
        for part in message.parts:
            if isinstance(part, TextPart) and not part.synthetic and part.text:
                yield agent_text(part.text, info.id)
            elif isinstance(part, ReasoningPart) and part.text:
                yield agent_thought(part.text, info.id)
            elif isinstance(part, ToolPart):
                yield tool_call_start(part, directory)
