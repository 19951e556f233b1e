"""What a hook said, read as Claude Code reads it: exit 2 blocks with stderr as the
reason; on exit 0, JSON on stdout (`decision`, `continue` / `stopReason`,
`systemMessage`, `suppressOutput`, and `hookSpecificOutput`'s `permissionDecision`,
`updatedInput`, `additionalContext`), or plain text that is context for prompts and
session starts. Output that starts as JSON but is not is a warning, never a silent yes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_tui.hooks.runner import HookResult

BLOCK_EXIT = 2
PLAIN_CONTEXT = ("UserPromptSubmit", "UserPromptExpansion", "SessionStart")
"""Events whose plain (non-JSON) stdout on exit 0 is context for the model (Claude Code)."""
NO_BLOCK_EXIT = (
    "PermissionRequest",
    "Notification",
    "SessionStart",
    "SubagentStart",
    "MessageDisplay",
    "StopFailure",
)
"""Events exit 2 cannot block (Claude Code: a PermissionRequest decides only by its
`decision` object; the others only inform)."""
TRACEBACK = "Traceback (most recent call last):"


@dataclass
class Outcome:
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    warning: str = ""


def first_error(text: str) -> str:
    """The line that says what went wrong: a Python traceback's last line (its first
    only says a traceback follows), else the first line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[-1] if lines[0] == TRACEBACK else lines[0]


def read_answer(outcome: Outcome, event: str, result: HookResult) -> None:
    if outcome.code == BLOCK_EXIT:
        if event not in NO_BLOCK_EXIT:
            result.blocked = True
            result.reasons.append(outcome.stderr.strip())
        return
    if outcome.code != 0:
        return
    if (answer := _json(outcome, event)) is None:
        if event in PLAIN_CONTEXT and outcome.stdout.strip() and not outcome.warning:
            result.context.append(outcome.stdout.strip())
        return
    specific = answer.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    if event == "PermissionRequest":
        _permission(specific, result)
    else:
        _decide(answer, specific, result)
    if answer.get("continue") is False:
        result.stop = str(answer.get("stopReason") or "A hook stopped the agent.")
    context = specific.get("additionalContext")
    if isinstance(context, str) and context.strip():
        result.context.append(context.strip())
    if isinstance(answer.get("systemMessage"), str) and answer["systemMessage"].strip():
        result.messages.append(answer["systemMessage"].strip())
    updated = specific.get("updatedInput")
    if isinstance(updated, dict):
        result.updated_input = {**(result.updated_input or {}), **updated}


def _decide(answer: dict[str, Any], specific: dict[str, Any], result: HookResult) -> None:
    decision = specific.get("permissionDecision") or answer.get("decision")
    reason = specific.get("permissionDecisionReason") or answer.get("reason")
    if decision in ("deny", "block"):
        result.blocked = True
        result.reasons.append(str(reason or "").strip())
    elif decision in ("allow", "approve"):
        result.allowed = True
    elif decision == "ask":
        result.ask = True


def _permission(specific: dict[str, Any], result: HookResult) -> None:
    """PermissionRequest's `decision: {behavior, message, interrupt}` (Claude Code's)."""
    decision = specific.get("decision")
    if not isinstance(decision, dict):
        return
    if decision.get("behavior") == "allow":
        result.allowed = True
    elif decision.get("behavior") == "deny":
        result.blocked = True
        message = str(decision.get("message") or "").strip()
        result.reasons.append(message)
        if decision.get("interrupt") is True:
            result.stop = message or "A PermissionRequest hook stopped the agent."


def _json(outcome: Outcome, event: str) -> dict[str, Any] | None:
    text = outcome.stdout.strip()
    if not text.startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        outcome.warning = (
            f"printed JSON that does not parse ({exc.msg}, line {exc.lineno}); ignored."
        )
        return None
    if not isinstance(value, dict):
        outcome.warning = "printed JSON that is not an object; ignored."
        return None
    return value
