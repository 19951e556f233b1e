"""/pin, /unpin, the leader key and a focused tool line's p (mixed into AgentApp). Part of
the app's first frame: the pin list's screen is imported when it opens."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_tui.errors import AgentTuiError

if TYPE_CHECKING:
    from agent_tui.tui.app import AgentApp
    from agent_tui.tui.tool_line import ToolLine


class PinCommands:
    """Pinning in the app; `self` is the AgentApp."""

    def action_pin(self: AgentApp, item_id: str | None = None) -> None:
        """`/pin ID` pins it; `/pin` opens the list (the agent's newest reply highlighted)."""
        self.run_worker(self._pin_command(item_id, pin=True), exit_on_error=False)

    def action_unpin(self: AgentApp, item_id: str | None = None) -> None:
        """`/unpin ID` unpins it; `/unpin` opens the list of the pins."""
        self.run_worker(self._pin_command(item_id, pin=False), exit_on_error=False)

    async def _pin_command(self: AgentApp, item_id: str | None, *, pin: bool) -> None:
        if self.session is None:
            self.notify("Nothing to pin yet: send a message first.", severity="warning")
            return
        if item_id:
            await self.set_pin(item_id, pin)
            return
        try:
            choices = await self.engine.pin_choices(self.session.id)
        except AgentTuiError as exc:
            self.notify(str(exc), severity="error", timeout=10)
            return
        if not pin:
            choices = [(item, pinned) for item, pinned in choices if pinned]
        if not choices:
            message = "Nothing to pin yet." if pin else "Nothing is pinned in this session."
            self.notify(message, severity="warning")
            return
        from agent_tui.tui.pin_screen import PinScreen

        self.push_screen(PinScreen(choices, self.set_pin))

    async def set_pin(self: AgentApp, item_id: str, pin: bool) -> bool:
        """Pin or unpin, saying what it means; whether it is pinned afterwards."""
        assert self.session is not None
        act = self.engine.pin if pin else self.engine.unpin
        try:
            change = await act(self.session.id, item_id)
        except AgentTuiError as exc:
            self.notify(str(exc), severity="error", timeout=10)
            return not pin
        severity = "warning" if change.total_tokens > change.budget and pin else "information"
        self.notify(change.message(), severity=severity, timeout=8)
        return change.pinned

    def on_tool_line_toggle_pin(self: AgentApp, event: ToolLine.TogglePin) -> None:
        event.stop()
        if self.session is not None:
            self.run_worker(
                self.set_pin(event.part.id, event.part.pinned is None), exit_on_error=False
            )
