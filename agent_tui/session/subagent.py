"""Subagents: the task tool's child sessions, run by the same loop and storage.

A child session (`Session.parent_id`) has its own history, context window and
compaction; its agent (project/agents.py, mode subagent or all) sets its tools (read-only by
default, never `task`), permissions, model and prompt, and the refusals of the agent
that called it still hold (plan mode stays read-only inside its tasks). It shares the
parent's abort event, so interrupting the parent stops the child too. One isolated in a
worktree (the call's or its agent's `isolation: worktree`, as Claude Code's) works in a new
git worktree, removed after it when it changed nothing, else named in its answer.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from pathlib import Path
from typing import Any

from agent_tui import paths
from agent_tui.context.boundary import add_user_text, text_of
from agent_tui.engine_context import EngineContext
from agent_tui.errors import AgentTuiError, ToolError
from agent_tui.events import SessionUpdated
from agent_tui.hooks.transcript import write_transcript
from agent_tui.ids import message_id, part_id
from agent_tui.project.agents import AgentInfo
from agent_tui.provider.auth import check_credentials
from agent_tui.records import (
    AssistantMessage,
    Session,
    TextPart,
    ToolPart,
    UserMessage,
    Worktree,
)
from agent_tui.session.hook_points import MAX_STOP_CONTINUES
from agent_tui.session.loop import LoopResult, SessionLoop
from agent_tui.session.worktree_sessions import SessionWorktrees
from agent_tui.step.history import load_history
from agent_tui.tool.base import SubagentAnswer, ToolContext
from agent_tui.tool.registry import AGENT_ONLY_TOOLS, ToolRegistry
from agent_tui.worktrees import git_worktree

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
        if (found := catalog.get(name)) is None or not found.subagent:
            known = ", ".join(a.name for a in catalog.subagents()) or "none"
            raise ToolError(
                f"No subagent named {name!r} (subagents: {known}). Leave `agent` out to "
                "run the default read-only subagent."
            )
        return found

    def tools(
        self, agent: AgentInfo, caller: AgentInfo | None = None, session_id: str | None = None
    ) -> ToolRegistry:
        """The child's registry: its tools, never `task` (no recursion), under its own
        permissions and the caller's refusals; of the tools the caller's session
        (`session_id`) is offered, its own MCP servers' among them."""
        base = self.ctx if session_id is None else self.ctx.with_session_tools(session_id)
        registry = base.registry
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
        self,
        ctx: ToolContext,
        description: str,
        prompt: str,
        agent: str | None,
        isolation: str | None = None,
    ) -> SubagentAnswer:
        parent_model, caller = await self._caller(ctx.message_id, ctx.directory)
        config = self.agent(agent, ctx.directory)
        registry = self.tools(config, caller, ctx.session_id)
        model = config.model or parent_model
        try:
            await check_credentials(model, self.ctx.config)
        except AgentTuiError as exc:
            raise ToolError(f"The subagent cannot use {model}: {exc}") from exc
        parent = await self.ctx.db.get_session(ctx.session_id)
        worktree = await self._worktree(parent, isolation or config.isolation)
        project = self.ctx if worktree is None else self.ctx.in_project(worktree.path)
        child_ctx = copy.copy(project)  # same storage, bus, permissions; its own tools
        child_ctx.registry = registry
        child = await self._open(parent, description, config.name, worktree)
        context = await self._hook_start(child, config.name)
        await self._first_message(child, prompt, model, agent, config, context)
        self.running[child.id] = ctx.abort
        # Its prompt is in its first message (after task.txt), not the system prompt.
        run_as = dataclasses.replace(config, prompt=None, instructions=None)
        try:
            result = await self._run(child_ctx, child, ctx.abort, run_as)
        finally:
            self.running.pop(child.id, None)
            # Nothing reads a subagent's session after its answer: its commands end with it.
            await self.ctx.live(child.id).background.stop_all()
            kept = await self._leave(child, worktree)
        if result.outcome == "aborted" or ctx.abort.is_set():
            raise ToolError(f"The subagent was interrupted (session {child.id}).")
        if result.error:
            raise ToolError(f"The subagent failed (session {child.id}): {result.error}")
        summary = (await self.ctx.db.session_summaries([child.id]))[child.id]
        return SubagentAnswer(
            session_id=child.id,
            text=await self._answer(child_ctx, child.id) + kept,
            cost=summary.cost,
            **await self._figures(child.id),
        )

    async def _caller(self, assistant_id: str, directory: Path) -> tuple[str, AgentInfo | None]:
        """(the model, the agent) of the step that made the task call."""
        try:
            info = await self.ctx.db.get_message(assistant_id)
        except AgentTuiError:
            info = None
        if not isinstance(info, AssistantMessage):
            return self.ctx.config.model, None
        caller = self.ctx.agent_catalog(directory).get(info.agent)
        return info.model or self.ctx.config.model, caller

    async def _worktree(self, parent: Session, isolation: str | None) -> Worktree | None:
        """A new worktree for a subagent isolated in one (the task call's `isolation`, or
        its agent's), made from the parent's repository; None otherwise."""
        if isolation != "worktree":
            return None
        try:
            return await git_worktree.create(Path(parent.directory))
        except AgentTuiError as exc:
            raise ToolError(f"The subagent's worktree could not be made: {exc}") from exc

    async def _leave(self, child: Session, worktree: Worktree | None) -> str:
        """The subagent's worktree, left: removed when it changed nothing, else kept and
        named for the caller (what its answer is followed by)."""
        if worktree is None or (kept := await SessionWorktrees(self.ctx).leave(child.id)) is None:
            return ""
        return (
            f"\n\n(The subagent's changes are in the worktree {kept.path}, on the branch "
            f"{kept.branch}.)"
        )

    async def _open(
        self, parent: Session, description: str, agent_type: str, worktree: Worktree | None
    ) -> Session:
        """The child session: the parent's permissions and mode, and its hooks those of a
        subagent of the parent (Claude Code's `agent_id`, `agent_type`); in its own
        worktree when it has one."""
        child = await self.ctx.db.create_session(
            worktree.path if worktree else parent.directory,
            description,
            parent.id,
            worktree=worktree,
        )
        self.ctx.publish(SessionUpdated(session=child))
        # The person's "always" answers in the parent hold for its subagents too.
        child_live, parent_live = self.ctx.live(child.id), self.ctx.live(parent.id)
        child_live.permissions = dict(self.ctx.permissions_for(parent.id))
        child_live.permission_mode = parent_live.permission_mode
        child_live.subagent = (parent.id, agent_type)
        return child

    async def _first_message(
        self,
        child: Session,
        prompt: str,
        model: str,
        agent: str | None,
        config: AgentInfo,
        context: list[str],
    ) -> None:
        """The child's first message: the subagent's instructions (read by the model,
        not shown), what its SubagentStart hooks added, and the task's prompt."""
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
        for text in context:
            await self.ctx.save_part(TextPart(id=part_id(), **ids, text=text, synthetic=True))
        await self.ctx.save_part(TextPart(id=part_id(), **ids, text=prompt))

    async def _run(
        self, ctx: EngineContext, child: Session, abort: asyncio.Event, run_as: AgentInfo
    ) -> LoopResult:
        """The child's loop, and SubagentStop when it ends: a hook that blocks the stop
        gives the subagent its next instruction (at most MAX_STOP_CONTINUES in a row)."""
        continues = 0
        while True:
            result = await SessionLoop(ctx, child.id, abort, agent=run_as).run()
            if result.outcome != "stop" or abort.is_set() or result.error:
                return result
            reason = await self._hook_stop(ctx, child, continues > 0)
            if reason is None or continues >= MAX_STOP_CONTINUES:
                return result
            continues += 1
            await self._continue(child, reason)

    async def _hook_start(self, child: Session, agent_type: str) -> list[str]:
        """SubagentStart: the context its hooks (matching `agent_type`) give the subagent."""
        started = await self.ctx.fire_hook(
            "SubagentStart", child.id, Path(child.directory), {}, subject=agent_type
        )
        return [f"[SubagentStart hook context]\n{text}" for text in started.context]

    async def _hook_stop(self, ctx: EngineContext, child: Session, active: bool) -> str | None:
        """SubagentStop: why the subagent must go on (a hook blocked its stop), or None."""
        directory = Path(child.directory)
        hooks = self.ctx.in_project(directory).hooks
        if not hooks.any_for("SubagentStop"):
            return None
        payload = await self.ctx.hook_payload(child.id, directory, effort=True)
        transcript = await write_transcript(self.ctx.db, child.id, directory)
        payload.update(
            stop_hook_active=active,
            agent_transcript_path=str(transcript),
            last_assistant_message=await self._answer(ctx, child.id, ""),
        )
        agent_type = str(payload.get("agent_type", ""))
        result = await hooks.fire("SubagentStop", directory, payload, subject=agent_type)
        if result.stop is not None or not result.blocked:
            return None
        return f"A SubagentStop hook asks you to continue: {result.reason}"

    async def _continue(self, child: Session, reason: str) -> None:
        """A SubagentStop hook's reason: the child's next message, as its first's."""
        first = await self.ctx.db.messages(child.id)
        like = next(m for m in first if isinstance(m.info, UserMessage))
        await add_user_text(self.ctx, child.id, like, reason, synthetic=False)

    async def _figures(self, session_id: str) -> dict[str, Any]:
        """The child's own figures, for its caller's hooks (Claude Code's Agent
        response): its last step's model and tokens, and the tool calls it made."""
        messages = await self.ctx.db.messages(session_id)
        steps = [
            m.info
            for m in messages
            if isinstance(m.info, AssistantMessage) and not m.info.summary and m.info.finish
        ]
        calls = [p for m in messages for p in m.parts if isinstance(p, ToolPart) and not p.ignored]
        last = steps[-1] if steps else None
        return {
            "model": last.model if last is not None else "",
            "tokens": last.tokens if last is not None else None,
            "tool_uses": len(calls),
        }

    async def _answer(self, ctx: EngineContext, session_id: str, none: str = NO_ANSWER) -> str:
        """The text of the child's newest finished step (its final answer)."""
        history = await load_history(ctx, await ctx.db.get_session(session_id))
        for message in sorted(history, key=lambda m: m.info.id, reverse=True):
            info = message.info
            if isinstance(info, AssistantMessage) and not info.summary and info.finish:
                if text := text_of(message).strip():
                    return text
        return none
