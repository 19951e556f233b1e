"""Running the person's hooks as Claude Code does: the event as JSON on stdin, exit 0
goes on, exit 2 blocks (its stderr is the reason), JSON on stdout may add context, change
a tool's input, decide a permission, stop the agent or say something to the person; any
other failure, malformed JSON or a timeout is a one-line warning and the session goes on.
Hooks are the person's own commands: they run outside the sandbox, in the session's
directory, with `CLAUDE_PROJECT_DIR` and `AGENT_TUI_PROJECT_DIR` set. `type: "prompt"`
hooks ask the small model instead (hooks/prompt_hooks.py). Project hooks run only once
the project is trusted (trust/, `Workspace.commands_may_run`)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_tui import procs
from agent_tui.hooks.answer import Outcome, read_answer
from agent_tui.hooks.hook_config import FIRED, HookCommand, HookSource, claude_name, unknown_events
from agent_tui.hooks.pipes import run_command
from agent_tui.hooks.prompt_hooks import ask_model

log = logging.getLogger(__name__)

Evaluate = Callable[[str, str | None], Awaitable[str]]
"""Asks a model (the hook's `model`, else the small one) a prompt; its answer's text."""


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
    ) -> None:
        self.sources = list(sources)
        self._trusted = trusted
        """Asked each time: a project's trust covers its files as they were, so a script
        rewritten since does not run (workspace/workspace.py)."""
        self.warn = warn
        self.tell = tell or warn
        self.evaluate = evaluate

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
        lines = ["Hooks (your own commands; they run outside the sandbox):"]
        for source in self.sources:
            waits = source.project and not self._trusted(source)
            lines.append(f"  {source.path}{' - NOT RUN until trusted' if waits else ''}")
            for event, matchers in source.hooks.items():
                count = sum(len(m.hooks) for m in matchers)
                prompts = sum(h.type == "prompt" for m in matchers for h in m.hooks)
                kind = f" ({prompts} asking the small model)" if prompts else ""
                fired = "" if event in FIRED else " (not an event agent-tui fires)"
                lines.append(f"    {event}: {count} command{'s' * (count != 1)}{kind}{fired}")
        return lines

    def any_for(self, event: str) -> bool:
        return any(source.hooks.get(event) for source in self.active())

    def _jobs(self, event: str, subject: str | None) -> list[HookCommand]:
        jobs: list[HookCommand] = []
        seen: set[str] = set()
        for source in self.active():
            for matcher in source.hooks.get(event, []):
                if not matcher.matches(subject):
                    continue
                for command in matcher.hooks:
                    key = f"{command.type}:{command.command or command.prompt}"
                    if key not in seen:
                        seen.add(key)  # the same command once (Claude Code too)
                        jobs.append(command)
        return jobs

    async def fire(
        self,
        event: str,
        directory: Path,
        payload: dict[str, Any],
        *,
        subject: str | None = None,
    ) -> HookResult:
        """Run the event's matching hooks at once and gather what they said. `subject`
        is what matchers match: the tool name, the trigger or the source."""
        assert event in FIRED, event
        result = HookResult()
        jobs = self._jobs(event, subject)
        if not jobs:
            return result
        if "tool_name" in payload:  # Claude Code's name for its counterpart
            payload = {**payload, "tool_name": claude_name(subject or "")}
        outcomes = await asyncio.gather(
            *(self._run(job, event, directory, payload) for job in jobs), return_exceptions=True
        )
        for job, outcome in zip(jobs, outcomes, strict=True):
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

    async def _run(
        self, command: HookCommand, event: str, directory: Path, payload: dict[str, Any]
    ) -> Outcome:
        data = {**payload, "hook_event_name": event, "cwd": str(directory)}
        if command.type == "prompt":
            return await ask_model(command, data, self.evaluate)
        if command.type != "command":
            return Outcome(warning=f'has type "{command.type}", which agent-tui cannot run.')
        env = {**os.environ, "CLAUDE_PROJECT_DIR": str(directory)}
        env["AGENT_TUI_PROJECT_DIR"] = str(directory)
        cwd = directory if directory.is_dir() else None
        return await run_command(command, data, cwd, procs.process_env(env))


def _short(command: HookCommand) -> str:
    text = (command.command or command.prompt).strip()
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= 60 else line[:57] + "..."
