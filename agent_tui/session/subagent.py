"""Subagents: the task tool's child sessions, run by the same loop and storage.

A child session (`Session.parent_id`) has its own history, context window and
compaction; its agent (project/agents.py, mode subagent or all) sets its tools (read-only by
default, never `task`), permissions, model and prompt, and the refusals of the agent
that called it still hold (plan mode stays read-only inside its tasks). It shares the
parent's abort event, so interrupting the parent stops the child too.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from pathlib import Path

from agent_tui import paths
from agent_tui.context.boundary import text_of
from agent_tui.engine_context import EngineContext
from agent_tui.errors import AgentTuiError, ToolError
from agent_tui.events import SessionUpdated
from agent_tui.ids import message_id, part_id
from agent_tui.project.agents import AgentInfo
from agent_tui.provider.auth import check_credentials
from agent_tui.session.loop import SessionLoop
from agent_tui.step.history import load_history
from agent_tui.storage.models import AssistantMessage, Session, TextPart, UserMessage
from agent_tui.tool.base import SubagentAnswer, ToolContext
from agent_tui.tool.registry import AGENT_ONLY_TOOLS, ToolRegistry

DEFAULT_AGENT = "task"
"""The agent name recorded on a child's first message when none is given."""
NO_ANSWER = "(The subagent finished without a final message.)"


class Subagents:
    """Runs task tool calls as child sessions (set on `EngineContext.subagents`)."""

    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        self.running: dict[str, asyncio.Event] = {}
        """Child sessions running now -> the abort event they share with their parent."""

    def agent(self, name: str | None, directory: Path) -> AgentInfo:
        """The subagent named (the default read-only one when None)."""
        if name is None:
            return AgentInfo(name=DEFAULT_AGENT, mode="subagent")
        catalog = self.ctx.agent_catalog(directory)
        found = catalog.get(name)
        if found is None or not found.subagent:
            known = ", ".join(a.name for a in catalog.subagents()) or "none"
            raise ToolError(
                f"No subagent named {name!r} (subagents: {known}). Leave `agent` out to "
                "run the default read-only subagent."
            )
        return found

    def tools(self, agent: AgentInfo, caller: AgentInfo | None = None) -> ToolRegistry:
        """The child's registry: its tools, never `task` (no recursion), under its own
        permissions and the caller's refusals."""
        registry = self.ctx.registry
        unknown = [
            name
            for name, enabled in agent.tools.items()
            if enabled
            and not any(c in name for c in "*?[")
            and registry.get(name) is None
            and name not in AGENT_ONLY_TOOLS
        ]
        if unknown:
            raise ToolError(
                f"The subagent's tools name unknown tools: {', '.join(unknown)}. "
                f"Known tools: {', '.join(registry.names())}."
            )
        also = (caller,) if caller is not None and caller.permission else ()
        return registry.for_agent(agent, self.ctx.permission_modes, subagent=True, also=also)

    async def run_task(
        self, ctx: ToolContext, description: str, prompt: str, agent: str | None
    ) -> SubagentAnswer:
        parent_model, caller = await self._caller(ctx.message_id, ctx.directory)
        config = self.agent(agent, ctx.directory)
        child_ctx = copy.copy(self.ctx)  # same storage, bus, permissions; its own tools
        child_ctx.registry = self.tools(config, caller)
        model = config.model or parent_model
        try:
            await check_credentials(model, self.ctx.config)
        except AgentTuiError as exc:
            raise ToolError(f"The subagent cannot use {model}: {exc}") from exc
        parent = await self.ctx.db.get_session(ctx.session_id)
        child = await self._start(parent, description, prompt, model, agent, config)
        self.running[child.id] = ctx.abort
        # Its prompt is in its first message (after task.txt), not the system prompt.
        run_as = dataclasses.replace(config, prompt=None, instructions=None)
        try:
            result = await SessionLoop(child_ctx, child.id, ctx.abort, agent=run_as).run()
        finally:
            self.running.pop(child.id, None)
        if result.outcome == "aborted" or ctx.abort.is_set():
            raise ToolError(f"The subagent was interrupted (session {child.id}).")
        if result.error:
            raise ToolError(f"The subagent failed (session {child.id}): {result.error}")
        summary = (await self.ctx.db.session_summaries([child.id]))[child.id]
        return SubagentAnswer(
            session_id=child.id, text=await self._answer(child_ctx, child.id), cost=summary.cost
        )

    async def _caller(self, assistant_id: str, directory: Path) -> tuple[str, AgentInfo | None]:
        """(the model, the agent) of the step that made the task call."""
        try:
            info = await self.ctx.db.get_message(assistant_id)
        except AgentTuiError:
            return self.ctx.config.model, None
        if not isinstance(info, AssistantMessage):
            return self.ctx.config.model, None
        caller = self.ctx.agent_catalog(directory).get(info.agent)
        return info.model or self.ctx.config.model, caller

    async def _start(
        self,
        parent: Session,
        description: str,
        prompt: str,
        model: str,
        agent: str | None,
        config: AgentInfo,
    ) -> Session:
        """The child session and its first message: the subagent's instructions (read by
        the model, not shown) and the task's prompt."""
        child = await self.ctx.db.create_session(parent.directory, description, parent.id)
        self.ctx.publish(SessionUpdated(session=child))
        # The person's "always" answers in the parent hold for its subagents too.
        child_live, parent_live = self.ctx.live(child.id), self.ctx.live(parent.id)
        child_live.permissions = dict(self.ctx.permissions_for(parent.id))
        child_live.permission_mode = parent_live.permission_mode
        info = UserMessage(
            id=message_id(), session_id=child.id, model=model, agent=agent or DEFAULT_AGENT
        )
        instructions = paths.read_prompt("task.txt").strip()
        if config.prompt:
            instructions += "\n\n" + config.prompt.strip()
        ids = {"session_id": child.id, "message_id": info.id}
        await self.ctx.add_message(
            info, TextPart(id=part_id(), **ids, text=instructions, synthetic=True)
        )
        await self.ctx.save_part(TextPart(id=part_id(), **ids, text=prompt))
        return child

    async def _answer(self, ctx: EngineContext, session_id: str) -> str:
        """The text of the child's newest finished step (its final answer)."""
        history = await load_history(ctx, await ctx.db.get_session(session_id))
        for message in sorted(history, key=lambda m: m.info.id, reverse=True):
            info = message.info
            if isinstance(info, AssistantMessage) and not info.summary and info.finish:
                text = text_of(message).strip()
                if text:
                    return text
        return NO_ANSWER
