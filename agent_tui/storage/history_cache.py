"""Parsed history kept in memory between loop steps.

The loop re-reads the history after the compaction boundary before every step; parsing
thousands of parts each time would dominate. This process's own writes keep the cached
models current; a commit by another connection (`PRAGMA data_version` changes) drops
everything, so two agent-tui processes on one database still see each other's work.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Iterable

from agent_tui.records import Message, MessageWithParts, Part

MAX_SESSIONS = 8


class _Entry:
    def __init__(self, since: str, messages: list[MessageWithParts]) -> None:
        self.since = since
        self.messages = messages
        self.ids = [m.info.id for m in messages]
        self.by_id = {m.info.id: m for m in messages}


class HistoryCache:
    def __init__(self) -> None:
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self.version: int | None = None

    def check_version(self, version: int) -> None:
        """Drop everything when another connection has committed since the last read."""
        if version != self.version:
            self._entries.clear()
            self.version = version

    def get(self, session_id: str, since: str) -> list[MessageWithParts] | None:
        entry = self._entries.get(session_id)
        if entry is None or entry.since > since:
            return None
        self._entries.move_to_end(session_id)
        start = bisect.bisect_left(entry.ids, since)
        return entry.messages[start:]

    def put(self, session_id: str, since: str, messages: list[MessageWithParts]) -> None:
        self._entries[session_id] = _Entry(since, list(messages))
        self._entries.move_to_end(session_id)
        while len(self._entries) > MAX_SESSIONS:
            self._entries.popitem(last=False)

    def on_message(self, info: Message) -> None:
        entry = self._entries.get(info.session_id)
        if entry is None or info.id < entry.since:
            return
        holder = entry.by_id.get(info.id)
        if holder is not None:
            holder.info = info
            return
        holder = MessageWithParts(info=info)
        index = bisect.bisect_left(entry.ids, info.id)
        entry.ids.insert(index, info.id)
        entry.messages.insert(index, holder)
        entry.by_id[info.id] = holder

    def on_part(self, part: Part) -> None:
        entry = self._entries.get(part.session_id)
        if entry is None or part.message_id < entry.since:
            return
        holder = entry.by_id.get(part.message_id)
        if holder is None:  # a part of a message this cache has not seen: reload later
            del self._entries[part.session_id]
            return
        parts = holder.parts
        for index in range(len(parts) - 1, -1, -1):  # updates are nearly always recent parts
            if parts[index].id == part.id:
                parts[index] = part
                return
            if parts[index].id < part.id:
                parts.insert(index + 1, part)
                return
        parts.insert(0, part)

    def forget(self, *, session_ids: Iterable[str] = (), all_sessions: bool = False) -> None:
        if all_sessions:
            self._entries.clear()
            return
        for session_id in session_ids:
            self._entries.pop(session_id, None)
