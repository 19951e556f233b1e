"""Running the person's hooks as Claude Code does: the event as JSON on stdin, exit 0
goes on, exit 2 blocks (its stderr is the reason), JSON on stdout may add context, change
a tool's input, decide a permission, stop the agent or say something to the person; any
other failure, malformed JSON or a timeout is a one-line warning and the session goes on.
The person's own hooks run as they configured them: outside the sandbox, with their
environment (`"sandbox": true` on one puts it in). A project's hooks (its agent-tui.json,
`.claude/settings*.json`) run only once the project is trusted (trust/,
`Workspace.commands_may_run`) and always in the sandbox, with the environment the model's
commands get, because the model can rewrite the scripts they run; only the person's own
`sandbox.outside` takes one out (sandbox/containment.py). Each runs in the session's
directory with `CLAUDE_PROJECT_DIR` and `AGENT_TUI_PROJECT_DIR` set. `type: "prompt"`
hooks ask the small model instead (hooks/prompt_hooks.py)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_tui import procs
from agent_tui.config.hook_config import (
    FIRED,
    TOOL_EVENTS,
    HookCommand,
    HookSource,
    claude_name,
    unknown_events,
)
from agent_tui.hooks.answer import Outcome, read_answer
from agent_tui.hooks.pipes import run_command
from agent_tui.hooks.prompt_hooks import ask_model
from agent_tui.sandbox.containment import Blocked, Containment
from agent_tui.sandbox.sandbox import Wrapped

log = logging.getLogger(__name__)

Evaluate = Callable[[str, str | None], Awaitable[str]]
"""Asks a model (the hook's `model`, else the small one) a prompt; its answer's text."""
SHELL = "/bin/sh"
"""A hook's command line is a shell command (Claude Code's too)."""
Job = tuple[HookCommand, HookSource]


@dataclass
class HookResult:
    """What the hooks of one event said, together."""

    blocked: bool = False
    reasons: list[str] = field(default_factory=list)
    """Why it was blocked (exit 2's stderr, or a JSON `reason`)."""
    context: list[str] = field(default_factory=list)
    """Text for the model (`additionalContext`; plain stdout for prompts and starts)."""
    warnings: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    """`systemMessage`s: shown to the person, not the model."""
    allowed: bool = False
    """A PreToolUse hook answered the permission question (`permissionDecision: allow`)."""
    ask: bool = False
    """A PreToolUse hook wants the person asked (`permissionDecision: ask`)."""
    updated_input: dict[str, Any] | None = None
    """A PreToolUse hook's `updatedInput`: the tool runs with it instead."""
    stop: str | None = None
    """`continue: false`: the agent stops after this, and the person reads why."""

    @property
    def reason(self) -> str:
        return "\n".join(r for r in self.reasons if r) or "A hook blocked it (it gave no reason)."

    @property
    def stopped(self) -> str | None:
        """Why a hook stopped what comes next (`continue: false` first, else a block),
        or None."""
        if self.stop is not None:
            return self.stop
        return self.reason if self.blocked else None


class Hooks:
    """The hooks in force for an engine. `warn` shows a one-line warning to the person,
    `tell` a hook's `systemMessage`; `evaluate` answers prompt hooks."""

    def __init__(
        self,
        sources: Sequence[HookSource],
        *,
        trusted: Callable[[HookSource], bool],
        warn: Callable[[str], None] = lambda _: None,
        tell: Callable[[str], None] | None = None,
        evaluate: Evaluate | None = None,
        containment: Containment | None = None,
        contained_env: dict[str, str] | None = None,
    ) -> None:
        self.sources = list(sources)
        self.containment = containment
        """Where a project's hooks run (None: nowhere to contain them, a bare engine)."""
        self.contained_env = contained_env if contained_env is not None else dict(os.environ)
        """The environment of a hook in the sandbox: the model's commands' (secrets withheld)."""
        self._trusted = trusted
        """Asked each time: a project's trust covers its files as they were, so a script
        rewritten since does not run (workspace/workspace.py)."""
        self.warn = warn
        self.tell = tell or warn
        self.evaluate = evaluate
        self.entrypoint = "sdk-cli"
        """`CLAUDE_CODE_ENTRYPOINT`: the front-end's (config/hook_config.entrypoint)."""

    def active(self) -> list[HookSource]:
        return [s for s in self.sources if not s.project or self._trusted(s)]

    def waiting(self) -> list[HookSource]:
        """Project hooks that do not run until the person trusts them."""
        return [s for s in self.sources if s.project and not self._trusted(s)]

    def unknown_lines(self) -> list[str]:
        """A warning per file naming events agent-tui does not know (they are ignored)."""
        return [
            f"Hooks in {source.path}: unknown event {', '.join(unknown)} (ignored)."
            for source in self.sources
            if (unknown := unknown_events(source.hooks))
        ]

    def status_lines(self) -> list[str]:
        """For `/context`: the hooks in force and those waiting, one line per event."""
        if not self.sources:
            return []
        lines = ["Hooks (yours run outside the sandbox, a project's inside it):"]
        for source in self.sources:
            waits = source.project and not self._trusted(source)
            where = "the project's: in the sandbox" if source.project else "yours: outside"
            lines.append(f"  {source.path} ({where}){' - NOT RUN until trusted' if waits else ''}")
            for event, matchers in source.hooks.items():
                count = sum(len(m.hooks) for m in matchers)
                prompts = sum(h.type == "prompt" for m in matchers for h in m.hooks)
                kind = f" ({prompts} asking the small model)" if prompts else ""
                fired = "" if event in FIRED else " (not an event agent-tui fires)"
                lines.append(f"    {event}: {count} command{'s' * (count != 1)}{kind}{fired}")
        return lines

    def any_for(self, event: str) -> bool:
        return any(source.hooks.get(event) for source in self.active())

    def _jobs(self, event: str, subject: str | None) -> list[Job]:
        jobs: list[Job] = []
        seen: set[str] = set()
        for source in self.active():
            for matcher in source.hooks.get(event, []):
                if not matcher.matches(subject, tool=event in TOOL_EVENTS):
                    continue
                for command in matcher.hooks:
                    key = f"{command.type}:{command.command or command.prompt}"
                    if key not in seen:
                        seen.add(key)  # the same command once (Claude Code too)
                        jobs.append((command, source))
        return jobs

    async def fire(
        self,
        event: str,
        directory: Path,
        payload: dict[str, Any],
        *,
        subject: str | None = None,
        env: dict[str, str] | None = None,
        session_dir: str | None = None,
    ) -> HookResult:
        """Run the event's matching hooks at once and gather what they said. `subject`
        is what matchers match: the tool name, the trigger, the source, the agent or
        notification type. `env`: variables for this event (`CLAUDE_ENV_FILE`);
        `session_dir`: a project's hook runs with that session's temp dir (the
        sandbox's key), where `CLAUDE_ENV_FILE` lies."""
        assert event in FIRED, event
        result = HookResult()
        if not (jobs := self._jobs(event, subject)):
            return result
        if "tool_name" in payload:  # Claude Code's name for its counterpart
            payload = {**payload, "tool_name": claude_name(subject or "")}
        own = {**(env or {}), "CLAUDE_CODE_ENTRYPOINT": self.entrypoint}
        run = _Run(event, directory, payload, own, session_dir)
        outcomes = await asyncio.gather(
            *(self._run(job, run) for job in jobs), return_exceptions=True
        )
        for (job, _), outcome in zip(jobs, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                outcome = Outcome(warning=f"could not start: {outcome}")
            read_answer(outcome, event, result)
            if outcome.warning:
                line = f"Hook {event} `{_short(job)}` {outcome.warning}"
                result.warnings.append(line)
                self.warn(line)
        for message in result.messages:
            self.tell(message)
        return result

    async def _run(self, job: Job, run: _Run) -> Outcome:
        command, source = job
        event, directory, payload = run.event, run.directory, run.payload
        data = {**payload, "hook_event_name": event, "cwd": str(directory)}
        if command.type == "prompt":
            return await ask_model(command, data, self.evaluate)
        if command.type != "command":
            return Outcome(warning=f'has type "{command.type}", which agent-tui cannot run.')
        cwd = directory if directory.is_dir() else None
        argv = [SHELL, "-c", command.command]
        own_env = _env(os.environ, directory, run.env)
        contained = source.project or (command.model_extra or {}).get("sandbox") is True
        if not contained or self.containment is None:
            return await run_command(command, data, cwd, own_env, argv)
        env = _env(self.contained_env, directory, run.env)
        wrapped = await self.containment.wrap(
            _outside_name(command), argv, env, cwd=cwd or directory, key=run.session_dir
        )
        outcome = await run_command(command, data, cwd, wrapped.env, wrapped.argv)
        if outcome.code in (0, None):
            return outcome
        if (blocked := self._blocked(job, event, outcome, wrapped, payload)) is None:
            return outcome
        if await self.containment.blocked(blocked):
            return await run_command(command, data, cwd, own_env, argv)
        outcome.warning = ""  # the blocked line said it, with the key that lets it out
        return outcome

    def _blocked(
        self, job: Job, event: str, outcome: Outcome, wrapped: Wrapped, payload: dict[str, Any]
    ) -> Blocked | None:
        """A project's hook that failed in the sandbox because of the sandbox (None: it
        failed by itself)."""
        assert self.containment is not None
        reason = self.containment.reason(f"{outcome.stderr}\n{outcome.stdout}", wrapped)
        if reason is None:
            return None
        command, source = job
        session = payload.get("session_id")
        return Blocked(
            name=_outside_name(command),
            what=f"{event} hook `{_short(command)}` ({source.path})",
            reason=reason,
            session_id=session if isinstance(session, str) else None,
        )


@dataclass(frozen=True)
class _Run:
    """One firing of an event: what each of its hooks is given."""

    event: str
    directory: Path
    payload: dict[str, Any]
    env: dict[str, str]
    session_dir: str | None


def _env(base: Any, directory: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {**base, "CLAUDE_PROJECT_DIR": str(directory), "AGENT_TUI_PROJECT_DIR": str(directory)}
    return procs.process_env({**env, **extra})


def _outside_name(command: HookCommand) -> str:
    """The hook's name in `sandbox.outside` (sandbox/containment.py)."""
    return f"hook:{command.command}"


def _short(command: HookCommand) -> str:
    text = (command.command or command.prompt).strip()
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= 60 else line[:57] + "..."
