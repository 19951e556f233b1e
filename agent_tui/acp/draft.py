"""What ACP's draft has and the Python SDK (agent-client-protocol 0.12.1) does not model:
`compaction_update` session updates, for clients that declare the `session.compaction`
capability (the TypeScript SDK 2.4 carries both). The capability is read from the raw
`initialize` message (the SDK's ClientCapabilities drops fields it does not know) and the
update goes out as JSON through the SDK's connection, which its typed `session_update`
would refuse."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

CompactionStatus = str
"""in_progress, completed, failed or cancelled."""


@dataclass
class Raw:
    """A session update as JSON (camelCase, as on the wire)."""

    update: dict[str, Any]


def compaction_update(
    compaction_id: str,
    status: CompactionStatus,
    *,
    summary: str | None = None,
    error: str | None = None,
    meta: dict[str, Any] | None = None,
) -> Raw:
    update: dict[str, Any] = {
        "sessionUpdate": "compaction_update",
        "compactionId": compaction_id,
        "status": status,
    }
    if summary is not None:
        update["summary"] = [{"type": "text", "text": summary}]
    if error is not None:
        update["error"] = error
    if meta:
        update["_meta"] = meta
    return Raw(update)


def declares_compaction(message: dict[str, Any]) -> bool | None:
    """From a raw message the client sent: whether its `initialize` declares
    `session.compaction`; None for any other message."""
    if message.get("method") != "initialize":
        return None
    capabilities = (message.get("params") or {}).get("clientCapabilities") or {}
    return (capabilities.get("session") or {}).get("compaction") is not None


async def send(conn: Any, session_id: str, raw: Raw) -> None:
    """Send `raw` as a session/update notification through the SDK's connection."""
    connection = getattr(conn, "_conn", None)  # AgentSideConnection's JSON-RPC connection
    if connection is None:
        log.warning("cannot send %s: the ACP SDK's connection changed", raw.update)
        return
    await connection.send_notification(
        "session/update", {"sessionId": session_id, "update": raw.update}
    )
