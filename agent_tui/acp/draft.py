"""What ACP's draft has and the Python SDK (agent-client-protocol, the version pinned in
pyproject) does not serve: `compaction_update` session updates, for clients that declare
the `session.compaction` capability, and the `session/delete` request (the TypeScript SDK
carries all three). The capability is read from the raw `initialize` message (the SDK's
ClientCapabilities drops fields it does not know); the update goes out as JSON through the
SDK's connection, which its typed `session_update` would refuse; `session/delete` is one
more route on the SDK's router (its method name is in the SDK's list; no route serves it)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from acp.schema import DeleteSessionRequest

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


def serve_delete(conn: Any, agent: Any) -> None:
    """`session/delete` served by the agent's `delete_session`: one more route on the
    router of the SDK's connection (`conn`, as `on_connect` gets it)."""
    if (router := getattr(getattr(conn, "_conn", None), "_handler", None)) is None:
        log.warning("session/delete is not served: the ACP SDK's connection changed")
        return
    router.route_request("session/delete", DeleteSessionRequest, agent, "delete_session")


async def send(conn: Any, session_id: str, raw: Raw) -> None:
    """Send `raw` as a session/update notification through the SDK's connection."""
    connection = getattr(conn, "_conn", None)  # AgentSideConnection's JSON-RPC connection
    if connection is None:
        log.warning("cannot send %s: the ACP SDK's connection changed", raw.update)
        return
    await connection.send_notification(
        "session/update", {"sessionId": session_id, "update": raw.update}
    )
