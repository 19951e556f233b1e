"""/pin, /unpin and a focused tool line's p in the app (tui/commands.py's table of
actions). Part of the app's first frame: the pin list's screen is imported when it
opens."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_tui.errors import AgentTuiError

if TYPE_CHECKING:
    from agent_tui.tui.conversation import Conversation


def pin(chat: Conversation, item_id: str) -> None:
    """`/pin ID` pins it; `/pin` opens the list (the agent's newest reply highlighted)."""
    chat.run_worker(_pin_command(chat, item_id.strip(), pin=True), exit_on_error=False)


def unpin(chat: Conversation, item_id: str) -> None:
    """`/unpin ID` unpins it; `/unpin` opens the list of the pins."""
    chat.run_worker(_pin_command(chat, item_id.strip(), pin=False), exit_on_error=False)


async def _pin_command(chat: Conversation, item_id: str, *, pin: bool) -> None:
    if chat.session is None:
        chat.notify("Nothing to pin yet: send a message first.", severity="warning")
        return
    if item_id:
        await set_pin(chat, item_id, pin)
        return
    try:
        choices = await chat.engine.pin_choices(chat.session.id)
    except AgentTuiError as exc:
        chat.notify(str(exc), severity="error", timeout=10)
        return
    if not pin:
        choices = [(item, pinned) for item, pinned in choices if pinned]
    if not choices:
        message = "Nothing to pin yet." if pin else "Nothing is pinned in this session."
        chat.notify(message, severity="warning")
        return
    from agent_tui.tui.pin_screen import PinScreen

    chat.app.push_screen(PinScreen(choices, lambda item, on: set_pin(chat, item, on)))


async def set_pin(chat: Conversation, item_id: str, pin: bool) -> bool:
    """Pin or unpin, saying what it means; whether it is pinned afterwards."""
    assert chat.session is not None
    act = chat.engine.pin if pin else chat.engine.unpin
    try:
        change = await act(chat.session.id, item_id)
    except AgentTuiError as exc:
        chat.notify(str(exc), severity="error", timeout=10)
        return not pin
    severity = "warning" if change.total_tokens > change.budget and pin else "information"
    chat.notify(change.message(), severity=severity, timeout=8)
    return change.pinned
