"""Each session's background commands as the app last heard of them
(`BackgroundCommandsChanged`): the sidebar shows the shown session's, and switching
sessions shows the right list, as several sessions may work side by side
(tui/side_by_side.py). No Textual."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_tui.events import BackgroundCommand, BackgroundCommandsChanged


class BackgroundBoard:
    def __init__(self) -> None:
        self._sessions: dict[str, list[BackgroundCommand]] = {}

    def follow(self, event: BackgroundCommandsChanged) -> None:
        self._sessions[event.session_id] = list(event.commands)

    def of(self, session_id: str | None) -> list[BackgroundCommand]:
        """The commands of `session_id` (none for a new session)."""
        return list(self._sessions.get(session_id, [])) if session_id is not None else []
