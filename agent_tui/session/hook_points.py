"""The session's hook points (hooks/): SessionStart, UserPromptExpansion (a custom
command's) and UserPromptSubmit before a prompt is saved, Stop when a turn ends (or
StopFailure when a provider error ended it), SessionEnd when the engine closes. Every
front-end goes through the engine, so each fires the same hooks."""

from __future__ import annotations

import uuid
from pathlib import Path

from agent_tui.config.hook_config import STOP_FAILURE_ERRORS
from agent_tui.engine_context import EngineContext
from agent_tui.errors import AgentTuiError
from agent_tui.events import Notice
from agent_tui.records import AssistantMessage, MessageWithParts, Session, TextPart
from agent_tui.session import instructions_loaded
from agent_tui.session.expansion import Expansion
from agent_tui.step.history import load_history
from agent_tui.tool.base import PermissionRequest
from agent_tui.workspace.describe import describe, waiting_note
from agent_tui.workspace.workspace import Workspace

TRUST_TOOL = "project"
"""The permission question's tool name when a front-end is asked to trust a project."""
MAX_STOP_CONTINUES = 3
"""Turns a Stop hook may ask for in a row (a script that always blocks must not keep the
agent, and the bill, running for ever)."""


START_CONTEXT = "[SessionStart hook context]"
"""The label of what SessionStart hooks add with a prompt (how the next start finds it)."""
PROMPT_CONTEXT = "[UserPromptSubmit hook context]"
EXPANSION_CONTEXT = "[UserPromptExpansion hook context]"
NEWEST_LOOKED_AT = 5
"""Messages read back for the agent's last answer (Stop's `last_assistant_message`)."""


def last_assistant_text(messages: list[MessageWithParts]) -> str:
    """The text of the newest assistant message that has some (Claude Code's
    `last_assistant_message`)."""
    for message in reversed(messages):
        if isinstance(message.info, AssistantMessage) and not message.info.summary:
            texts = [p.text for p in message.parts if isinstance(p, TextPart) and not p.ignored]
            if text := "".join(texts).strip():
                return text
    return ""


class PromptBlocked(AgentTuiError):
    """A UserPromptSubmit hook refused the prompt; nothing was saved."""

    session_dropped = False
    """The prompt was the session's first: the empty session is gone too."""


class HookPoints:
    """Which sessions this engine has started (SessionStart once each) and ends. Each
    session's hooks are its project's (`EngineContext.in_project`)."""

    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        self.started: dict[str, Path] = {}
        self.asked: set[Path] = set()
        """Projects whose trust the person was asked about here (the app asks at its
        start; others at a session's first prompt, through the engine's `ask`)."""
        self.cleared = False
        """The person started afresh (/new): the next session starts as `clear`."""

    async def trust_question(self, session: Session) -> EngineContext:
        """At a session's first prompt here: where the front-end can ask (ACP, an attached
        client) and the project waits for trust, ask once; else say what waits. The
        session's project context, re-loaded when the person trusted it."""
        directory = Path(session.directory)
        ctx = self.ctx.in_project(directory)
        if ctx.workspace.trusted_elsewhere():
            await ctx.retrust()
        workspace = ctx.workspace
        if session.id in self.started or not workspace.asks_trust:
            return ctx
        if ctx.ask is not None and self._may_ask(workspace):
            self.asked.add(workspace.directory)
            question = PermissionRequest(
                session_id=session.id,
                tool=TRUST_TOOL,
                title="Trust this project? Its config would run programs or widen access",
                question="Trust this project?",
                detail=describe(workspace),
                input={"directory": str(workspace.directory)},
            )
            if (reply := await ctx.ask(question)) in ("always", "once"):
                await ctx.retrust(keep=reply == "always")
                return ctx
            if reply == "never":  # an editor's "Reject always": not asked again
                workspace.refuse_trust()
        if note := waiting_note(workspace):
            self.ctx.publish(Notice(session_id=session.id, level="warning", message=note))
        return ctx

    def _may_ask(self, workspace: Workspace) -> bool:
        """Not asked about here already, nor refused for good (an editor's "Reject
        always", until the project's files change)."""
        return workspace.directory not in self.asked and not workspace.trust_refused

    async def before_prompt(
        self, session: Session, text: str, expansion: Expansion | None = None
    ) -> list[str]:
        """SessionStart (the session's first prompt here), UserPromptExpansion (a custom
        command's, before any of its `!` lines runs) and UserPromptSubmit, whose `prompt`
        is what the person typed (`/run-tests core` where `text` is that command's body):
        the context they add for the model. Raises PromptBlocked."""
        directory = Path(session.directory)
        hooks = self.ctx.in_project(directory).hooks
        self.ctx.live(session.id).prompt_id = str(uuid.uuid4())
        context: list[str] = []
        if session.id not in self.started:
            if directory not in self.started.values():  # once a project, when it is in use
                for line in hooks.unknown_lines():
                    self.ctx.publish(Notice(session_id=session.id, level="warning", message=line))
            self.started[session.id] = directory
            context += await self._start(session, directory)
            await instructions_loaded.at_start(
                self.ctx.in_project(directory), session.id, directory
            )
        if expansion is not None:
            context += await self._expand(session, expansion)
        prompt = {"prompt": expansion.typed if expansion is not None else text}
        result = await self.ctx.fire_hook("UserPromptSubmit", session.id, directory, prompt)
        if (reason := result.stopped) is not None:
            raise PromptBlocked(f"A UserPromptSubmit hook blocked the prompt: {reason}")
        return context + [f"{PROMPT_CONTEXT}\n{text}" for text in result.context]

    async def _expand(self, session: Session, expansion: Expansion) -> list[str]:
        """UserPromptExpansion: the context its hooks add; PromptBlocked when one stops
        the command (exit 2, `decision: "block"`, `continue: false`)."""
        fields = {
            "expansion_type": "slash_command",
            "command_name": expansion.name,
            "command_args": expansion.arguments,
            "command_source": expansion.source,
            "prompt": expansion.typed,
        }
        directory = Path(session.directory)
        result = await self.ctx.fire_hook(
            "UserPromptExpansion", session.id, directory, fields, subject=expansion.name
        )
        if (reason := result.stopped) is not None:
            raise PromptBlocked(f"A UserPromptExpansion hook blocked /{expansion.name}: {reason}")
        return [f"{EXPANSION_CONTEXT}\n{text}" for text in result.context]

    async def _start(self, session: Session, directory: Path) -> list[str]:
        """SessionStart (startup, resume or clear), with `CLAUDE_ENV_FILE`: its context,
        unless the history already holds the same (a `run --continue` each turn would
        otherwise repeat it in every request, once per earlier start)."""
        hooks = self.ctx.in_project(directory).hooks
        if not hooks.any_for("SessionStart"):
            return []
        source = await self._source(session)
        payload = {**await self.ctx.hook_payload(session.id, directory), "source": source}
        env = {"CLAUDE_ENV_FILE": str(self.ctx.in_project(directory).claude_env_file(session.id))}
        started = await hooks.fire(
            "SessionStart", directory, payload, subject=source, env=env, session_dir=session.id
        )
        added = [f"{START_CONTEXT}\n{text}" for text in started.context]
        if added and added == await self._last_start(session):
            return []
        return added

    async def _last_start(self, session: Session) -> list[str]:
        """The SessionStart context the model reads now (that of the newest start)."""
        for message in reversed(await load_history(self.ctx, session)):
            if found := [
                part.text
                for part in message.parts
                if isinstance(part, TextPart)
                and part.synthetic
                and part.text.startswith(START_CONTEXT)
            ]:
                return found
        return []

    async def _source(self, session: Session) -> str:
        newest, _ = await self.ctx.db.recent_messages(session.id, 1)
        if newest:
            return "resume"
        source = "clear" if self.cleared else "startup"
        self.cleared = False
        return source

    async def after_turn(self, session_id: str, continues: int) -> str | None:
        """Stop: why the agent must go on (a hook blocked the stop), or None."""
        directory = self.started.get(session_id)
        if directory is None or not self.ctx.in_project(directory).hooks.any_for("Stop"):
            return None
        payload = await self.ctx.hook_payload(session_id, directory, effort=True)
        payload["stop_hook_active"] = continues > 0
        newest, _ = await self.ctx.db.recent_messages(session_id, NEWEST_LOOKED_AT)
        payload["last_assistant_message"] = last_assistant_text(newest)
        result = await self.ctx.in_project(directory).hooks.fire("Stop", directory, payload)
        if result.stop is not None or not result.blocked or continues >= MAX_STOP_CONTINUES:
            return None
        return f"A Stop hook asks you to continue: {result.reason}"

    async def after_failure(self, session_id: str, kind: str, message: str) -> None:
        """StopFailure, instead of Stop, when a provider error ended the turn: `error` is
        Claude Code's category of it, `last_assistant_message` the error as you read it.
        What its hooks answer is ignored, as Claude Code ignores it."""
        if (directory := self.started.get(session_id)) is None:
            return
        hooks = self.ctx.in_project(directory).hooks
        if not hooks.any_for("StopFailure"):
            return
        error = STOP_FAILURE_ERRORS.get(kind, "unknown")
        payload = await self.ctx.hook_payload(session_id, directory, effort=True)
        del payload["permission_mode"]  # Claude Code's StopFailure has none
        payload.update(error=error, last_assistant_message=message)
        await hooks.fire("StopFailure", directory, payload, subject=error)

    async def end(self, reason: str, session_id: str | None = None) -> None:
        """SessionEnd for the session (or each one started here), with Claude Code's
        `reason`, which its matcher matches: `other` (a headless run, an editor, the
        server), `prompt_input_exit` (the app quits), `clear` (/new)."""
        for ended, directory in list(self.started.items()):
            if session_id is not None and ended != session_id:
                continue
            del self.started[ended]
            fields = {"reason": reason}
            await self.ctx.fire_hook("SessionEnd", ended, directory, fields, subject=reason)
