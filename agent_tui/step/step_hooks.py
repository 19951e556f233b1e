"""The hooks around a model step as a whole (hooks/): MessageDisplay once the step's text
has streamed, PostToolBatch once every tool call of the step is done. Neither has a
matcher, as in Claude Code."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent_tui.config.hook_config import claude_name
from agent_tui.engine_context import EngineContext
from agent_tui.records import AssistantMessage, ToolPart, ToolStateCompleted, ToolStateError
from agent_tui.step.messages import tool_result_text
from agent_tui.step.tool_hooks import hook_input


async def message_display(
    ctx: EngineContext, assistant: AssistantMessage, directory: Path, text: str
) -> None:
    """MessageDisplay: the step's text, whole, once it has streamed; as Claude Code sends
    it under `claude -p` and its SDK (`index` 0, `final` true, `delta` the message). Not
    for a subagent's text, which Claude Code does not display either. A hook's
    `displayContent` is not applied: the text was shown as it streamed."""
    session_id = assistant.session_id
    if not text.strip() or ctx.live(session_id).subagent is not None:
        return
    if not ctx.hooks.any_for("MessageDisplay"):
        return
    payload = await ctx.hook_payload(session_id, directory)
    del payload["permission_mode"]  # Claude Code's MessageDisplay has none
    payload.update(
        turn_id=assistant.parent_id, message_id=assistant.id, index=0, final=True, delta=text
    )
    await ctx.hooks.fire("MessageDisplay", directory, payload)


@dataclass
class BatchAnswer:
    """What PostToolBatch hooks said of a step's calls."""

    note: str = ""
    """For the model, after the last call's result: their context, or why they stopped it."""
    stop: str | None = None
    """Why the agent stops before its next request (exit 2, `decision: "block"`,
    `continue: false`); None: it goes on."""


async def tool_batch(
    ctx: EngineContext, session_id: str, directory: Path, parts: list[ToolPart]
) -> BatchAnswer:
    """PostToolBatch, once every call of a step is done (refused and failed ones too):
    each call with the text the model reads as its result (`tool_response`, a string,
    as Claude Code passes the tool_result the model got)."""
    if not parts or not ctx.hooks.any_for("PostToolBatch"):
        return BatchAnswer()
    calls = [
        {
            "tool_name": claude_name(part.tool),
            "tool_input": hook_input(directory, part.tool, dict(part.state.input)),
            "tool_use_id": part.call_id,
            "tool_response": tool_result_text(part),
        }
        for part in parts
    ]
    payload = {**await ctx.hook_payload(session_id, directory, effort=True), "tool_calls": calls}
    result = await ctx.hooks.fire("PostToolBatch", directory, payload)
    notes = [f"[PostToolBatch hook] {text}" for text in result.context]
    if (stop := result.stopped) is not None:
        notes.append(f"[PostToolBatch hook] The agent was stopped: {stop}")
    return BatchAnswer("\n\n".join(notes), stop)


def add_note(part: ToolPart, note: str) -> None:
    """`note` after a finished call's result, which the model reads with it."""
    state = part.state
    if isinstance(state, ToolStateCompleted):
        state.output = f"{state.output}\n\n{note}"
    elif isinstance(state, ToolStateError):
        state.error = f"{state.error}\n\n{note}"
