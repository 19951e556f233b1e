"""`type: "prompt"` hooks, as Claude Code runs them: the hook's prompt, with
`$ARGUMENTS` replaced by the event's JSON (appended when the prompt does not name it), is
put to a small model, which answers `{"ok": true}` or `{"ok": false, "reason": "..."}`
(Claude Code's older `decision: approve / block` shape is read too). No, with its
reason, blocks as exit 2 does; an answer that cannot be read is a warning."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from agent_tui.config.hook_config import HookCommand
from agent_tui.errors import AgentTuiError
from agent_tui.hooks.answer import BLOCK_EXIT, Outcome

ARGUMENTS = "$ARGUMENTS"
INSTRUCTION = (
    "You are a hook that decides whether an AI coding agent may go on. Read the hook's "
    'instructions and the event, then answer with JSON only: {"ok": true} or '
    '{"ok": false, "reason": "why, for the agent"}.'
)


async def ask_model(
    command: HookCommand,
    data: dict[str, Any],
    evaluate: Callable[[str, str | None], Awaitable[str]] | None,
) -> Outcome:
    if evaluate is None:
        return Outcome(warning="asks a model, which only a session's engine can do; skipped.")
    event = json.dumps(data, indent=2)
    text = command.prompt.replace(ARGUMENTS, event)
    if ARGUMENTS not in command.prompt:
        text = f"{text}\n\nThe event:\n{event}"
    try:
        raw = await evaluate(f"{INSTRUCTION}\n\n{text}", command.model)
    except AgentTuiError as exc:
        return Outcome(warning=f"could not ask the model: {exc}")
    return _outcome(raw)


def _outcome(raw: str) -> Outcome:
    start, end = raw.find("{"), raw.rfind("}")
    try:
        answer = json.loads(raw[start : end + 1]) if start >= 0 else None
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict) or not ({"ok", "decision"} & answer.keys()):
        first = raw.strip().splitlines()[:1]
        return Outcome(
            warning=f"got an answer that is not its JSON: {first[0] if first else '(empty)'}"
        )
    if answer.get("ok") is False or answer.get("decision") == "block":
        return Outcome(BLOCK_EXIT, stderr=str(answer.get("reason") or ""))
    rest = {k: v for k, v in answer.items() if k not in ("ok", "decision", "reason")}
    return Outcome(0, stdout=json.dumps(rest) if rest else "")
