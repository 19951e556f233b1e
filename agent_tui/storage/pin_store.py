"""The pinned messages and tool results of a session (the flag lives in their JSON).

Pins are few and the pinned item may lie anywhere in the history, before the compaction
boundary too, so they are looked up by a query over the session's rows rather than in the
loaded history: once per compaction and per pin command. It reads every tool part of the
session (bench_context gives the figure at 100,000 parts), next to a summariser call of
tens of seconds.
"""

from __future__ import annotations

from agent_tui.records import MessageWithParts, Part
from agent_tui.storage import rows
from agent_tui.storage.db_core import DatabaseCore

_PINNED_MESSAGES = (
    "SELECT info FROM message WHERE session_id = ? "
    "AND json_extract(info, '$.pinned') IS NOT NULL ORDER BY id"
)
_PINNED_PARTS = (
    "SELECT data FROM part WHERE session_id = ? AND type = 'tool' "
    "AND json_extract(data, '$.pinned') IS NOT NULL ORDER BY id"
)
_PARTS_OF = "SELECT data FROM part WHERE message_id = ? ORDER BY id"


class PinQueries(DatabaseCore):
    """Pin methods of Database."""

    async def pinned(self, session_id: str) -> tuple[list[MessageWithParts], list[Part]]:
        """The session's pinned messages (with their parts) and pinned tool parts, each
        in id order."""
        await self.flush()
        found = await self._fetch(_PINNED_MESSAGES, (session_id,))
        messages = [MessageWithParts(info=rows.parse_message(row[0])) for row in found]
        for message in messages:
            parts = await self._fetch(_PARTS_OF, (message.info.id,))
            message.parts = [rows.parse_part(row[0]) for row in parts]
        parts = await self._fetch(_PINNED_PARTS, (session_id,))
        return messages, [rows.parse_part(row[0]) for row in parts]

    async def message_with_parts(self, message_id: str) -> MessageWithParts:
        """One message and its parts (NotFoundError naming the id when there is none)."""
        info = await self.get_message(message_id)
        parts = await self._fetch(_PARTS_OF, (message_id,))
        return MessageWithParts(info=info, parts=[rows.parse_part(r[0]) for r in parts])
