"""Running the person's hook commands: the event as JSON on stdin, exit 0 goes on, exit 2
blocks (its stderr is the reason), JSON on stdout may add context or a decision; any
other failure or a timeout is a one-line warning and the session goes on. Hooks are the
person's own commands: they run outside the sandbox, in the session's directory, with
`CLAUDE_PROJECT_DIR` and `AGENT_TUI_PROJECT_DIR` set. Project hooks run only once the
project is trusted (hooks/trust.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_tui import procs
from agent_tui.hooks.hook_config import FIRED, HookCommand, HookSource

log = logging.getLogger(__name__)
BLOCK_EXIT = 2
OUTPUT_LIMIT = 10_000
"""Characters of a hook's stdout or stderr that are read (context, reasons)."""


@dataclass
class HookResult:
    """What the hooks of one event said, together."""

    blocked: bool = False
    reasons: list[str] = field(default_factory=list)
    """Why it was blocked (exit 2's stderr, or a JSON `reason`)."""
    context: list[str] = field(default_factory=list)
    """Text for the model (`additionalContext`; plain stdout for prompts and starts)."""
    warnings: list[str] = field(default_factory=list)
    allowed: bool = False
    """A PreToolUse hook answered the permission question (`permissionDecision: allow`)."""

    @property
    def reason(self) -> str:
        return "\n".join(self.reasons) or "A hook blocked it (it gave no reason)."


@dataclass
class _Job:
    command: HookCommand
    subject_name: str


class Hooks:
    """The hooks in force for an engine. `warn` shows a one-line warning to the person."""

    def __init__(
        self,
        sources: Sequence[HookSource],
        *,
        trusted: Callable[[HookSource], bool],
        warn: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.sources = list(sources)
        self._trusted = trusted
        """Asked each time: a project's trust covers its files as they were, so a script
        rewritten since does not run (workspace/workspace.py)."""
        self.warn = warn

    def trusted(self, source: HookSource) -> bool:
        return self._trusted(source)

    def active(self) -> list[HookSource]:
        return [s for s in self.sources if not s.project or self.trusted(s)]

    def waiting(self) -> list[HookSource]:
        """Project hooks that do not run until the person trusts them."""
        return [s for s in self.sources if s.project and not self.trusted(s)]

    def status_lines(self) -> list[str]:
        """For `/context`: the hooks in force and those waiting, one line per event."""
        if not self.sources:
            return []
        lines = ["Hooks (your own commands; they run outside the sandbox):"]
        for source in self.sources:
            state = "" if not source.project or self.trusted(source) else " - NOT RUN until trusted"
            lines.append(f"  {source.path}{state}")
            for event, matchers in source.hooks.items():
                count = sum(len(m.hooks) for m in matchers)
                fired = "" if event in FIRED else " (not an event agent-tui fires)"
                lines.append(f"    {event}: {count} command{'s' * (count != 1)}{fired}")
        return lines

    def any_for(self, event: str) -> bool:
        return any(source.hooks.get(event) for source in self.active())

    def _jobs(self, event: str, subject: str | None) -> list[_Job]:
        jobs: list[_Job] = []
        seen: set[str] = set()
        for source in self.active():
            for matcher in source.hooks.get(event, []):
                name = matcher.matches(subject)
                if name is None:
                    continue
                for command in matcher.hooks:
                    if command.type == "command" and command.command not in seen:
                        seen.add(command.command)  # the same command once (Claude Code too)
                        jobs.append(_Job(command, name))
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
        outcomes = await asyncio.gather(
            *(_run(job, event, directory, payload) for job in jobs), return_exceptions=True
        )
        for job, outcome in zip(jobs, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                outcome = _Outcome(warning=f"could not start: {outcome}")
            _read(outcome, event, result)
            if outcome.warning:
                line = f"Hook {event} `{_short(job.command.command)}` {outcome.warning}"
                result.warnings.append(line)
                self.warn(line)
        return result


@dataclass
class _Outcome:
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    warning: str = ""


async def _run(job: _Job, event: str, directory: Path, payload: dict[str, Any]) -> _Outcome:
    data = {**payload, "hook_event_name": event, "cwd": str(directory)}
    if "tool_name" in data:
        data["tool_name"] = job.subject_name  # Claude Code's name when the matcher used it
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(directory)}
    env["AGENT_TUI_PROJECT_DIR"] = str(directory)
    proc = await asyncio.create_subprocess_shell(
        job.command.command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=directory if directory.is_dir() else None,
        env=procs.process_env(env),
        start_new_session=True,  # its own group: a timeout stops all it started
    )
    procs.track(proc.pid)
    try:
        talk = proc.communicate(json.dumps(data).encode())
        out, err = await asyncio.wait_for(talk, job.command.timeout)
    except TimeoutError:
        _kill(proc.pid)
        await proc.wait()
        return _Outcome(warning=f"timed out after {job.command.timeout:g} s; going on.")
    except BaseException:
        _kill(proc.pid)
        raise
    finally:
        procs.release(proc.pid)
    outcome = _Outcome(proc.returncode, _text(out), _text(err))
    if outcome.code not in (0, BLOCK_EXIT):
        first = outcome.stderr.strip().splitlines()[:1]
        outcome.warning = f"failed (exit {outcome.code})" + (f": {first[0]}" if first else ".")
    return outcome


def _kill(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")[:OUTPUT_LIMIT]


def _short(command: str) -> str:
    line = command.strip().splitlines()[0] if command.strip() else ""
    return line if len(line) <= 60 else line[:57] + "..."


PLAIN_CONTEXT = ("UserPromptSubmit", "SessionStart")
"""Events whose plain (non-JSON) stdout on exit 0 is context for the model (Claude Code)."""


def _read(outcome: _Outcome, event: str, result: HookResult) -> None:
    if outcome.code == BLOCK_EXIT:
        result.blocked = True
        result.reasons.append(outcome.stderr.strip())
        return
    if outcome.code != 0:
        return
    answer = _json(outcome.stdout)
    if answer is None:
        if event in PLAIN_CONTEXT and outcome.stdout.strip():
            result.context.append(outcome.stdout.strip())
        return
    specific = answer.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    blocked = answer.get("decision") == "block" or specific.get("permissionDecision") == "deny"
    if blocked or answer.get("continue") is False:
        result.blocked = True
        reason = specific.get("permissionDecisionReason") or answer.get("reason")
        reason = reason or answer.get("stopReason")
        result.reasons.append(str(reason or "").strip())
    if specific.get("permissionDecision") == "allow" or answer.get("decision") == "approve":
        result.allowed = True
    context = specific.get("additionalContext")
    if isinstance(context, str) and context.strip():
        result.context.append(context.strip())
    if isinstance(answer.get("systemMessage"), str):
        result.warnings.append(answer["systemMessage"])


def _json(text: str) -> dict[str, Any] | None:
    if not text.lstrip().startswith("{"):
        return None
    with contextlib.suppress(json.JSONDecodeError):
        value = json.loads(text)
        return value if isinstance(value, dict) else None
    return None
