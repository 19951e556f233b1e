"""The session's hook points (hooks/): SessionStart and UserPromptSubmit before a prompt
is saved, Stop when a turn ends, SessionEnd when the engine closes. Every front-end goes
through the engine, so each fires the same hooks."""

from __future__ import annotations

from pathlib import Path

from agent_tui.engine_context import EngineContext
from agent_tui.errors import AgentTuiError
from agent_tui.events import Notice
from agent_tui.hooks import trust
from agent_tui.storage.models import Session
from agent_tui.tool.base import PermissionRequest

TRUST_TOOL = "hooks"
"""The permission question's tool name when a front-end is asked to trust hooks."""
MAX_STOP_CONTINUES = 3
"""Turns a Stop hook may ask for in a row (a script that always blocks must not keep the
agent, and the bill, running for ever)."""


class PromptBlocked(AgentTuiError):
    """A UserPromptSubmit hook refused the prompt; nothing was saved."""


class HookPoints:
    """Which sessions this engine has started (SessionStart once each) and ends."""

    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        self.started: dict[str, Path] = {}
        self.asked = False
        """The person was asked whether the project's hooks may run (the app asks at its
        start; others at the first prompt, through the engine's `ask`)."""

    def _base(self, session_id: str) -> dict[str, object]:
        return {"session_id": session_id, "transcript_path": None}

    async def before_prompt(self, session: Session, text: str) -> list[str]:
        """SessionStart (the session's first prompt here) and UserPromptSubmit: the
        context they add for the model. Raises PromptBlocked."""
        hooks, directory = self.ctx.hooks, Path(session.directory)
        context: list[str] = []
        if session.id not in self.started:
            self.started[session.id] = directory
            await self._ask_trust(session.id)
            self._tell_waiting(session.id)
            if hooks.any_for("SessionStart"):
                newest, _ = await self.ctx.db.recent_messages(session.id, 1)
                source = "resume" if newest else "startup"
                payload = {**self._base(session.id), "source": source}
                started = await hooks.fire("SessionStart", directory, payload, subject=source)
                context += started.context
        if hooks.any_for("UserPromptSubmit"):
            payload = {**self._base(session.id), "prompt": text}
            result = await hooks.fire("UserPromptSubmit", directory, payload)
            if result.blocked:
                raise PromptBlocked(f"A UserPromptSubmit hook blocked the prompt: {result.reason}")
            context += result.context
        return [f"[hook context]\n{text}" for text in context]

    async def _ask_trust(self, session_id: str) -> None:
        """Where the front-end can ask the person (ACP, an attached client) and has not
        yet: whether the project's own hooks may run (always: remembered)."""
        waiting = self.ctx.hooks.waiting()
        if not waiting or self.asked or self.ctx.ask is None:
            return
        self.asked = True
        question = PermissionRequest(
            session_id=session_id,
            tool=TRUST_TOOL,
            title="Run this project's hooks? They run as you, outside the sandbox",
            question="Run this project's hooks?",
            detail=trust.describe(waiting),
            input={"files": [source.path for source in waiting]},
        )
        reply = await self.ctx.ask(question)
        if reply == "always":
            trust.trust(waiting)
        elif reply == "once":
            self.ctx.hooks.run_for_now(waiting)

    def _tell_waiting(self, session_id: str) -> None:
        waiting = self.ctx.hooks.waiting()
        if waiting:
            files = ", ".join(source.path for source in waiting)
            note = (
                f"The hooks in {files} did not run: this project is not trusted yet (trust it "
                "in the app, with `agent-tui run --trust`, or set trust_project_hooks in your "
                "own config)."
            )
            self.ctx.publish(Notice(session_id=session_id, level="warning", message=note))

    async def after_turn(self, session_id: str, continues: int) -> str | None:
        """Stop: why the agent must go on (a hook blocked the stop), or None."""
        directory = self.started.get(session_id)
        if directory is None or not self.ctx.hooks.any_for("Stop"):
            return None
        payload = {**self._base(session_id), "stop_hook_active": continues > 0}
        result = await self.ctx.hooks.fire("Stop", directory, payload)
        if not result.blocked or continues >= MAX_STOP_CONTINUES:
            return None
        return f"A Stop hook asks you to continue: {result.reason}"

    async def end(self, reason: str = "exit") -> None:
        """SessionEnd for each session started here."""
        if not self.ctx.hooks.any_for("SessionEnd"):
            return
        for session_id, directory in self.started.items():
            payload = {**self._base(session_id), "reason": reason}
            await self.ctx.hooks.fire("SessionEnd", directory, payload)
        self.started.clear()
