"""Storage: the only place that writes SQL. Everything else speaks in models."""

from agent_tui.storage.db import Database, WriterStats
from agent_tui.storage.sessions import AmbiguousIdError

__all__ = ["AmbiguousIdError", "Database", "WriterStats"]
