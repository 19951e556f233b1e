"""The ASGI app of `agent-tui serve`: every request must carry the token; `/acp` upgrades to
a WebSocket that speaks ACP with one AcpAgent per connection, all over one engine."""

from __future__ import annotations

import json
import logging
from typing import Any

from acp import PROTOCOL_VERSION
from acp.agent.connection import AgentSideConnection

from agent_tui import __version__
from agent_tui.acp.agent import AcpAgent
from agent_tui.server.transport import Receive, Send, WebSocketTransport
from agent_tui.server_link.server_token import authorized
from agent_tui.session.engine import Engine

log = logging.getLogger(__name__)

ENDPOINT = "/acp"
REFUSED = b"A valid token is required: Authorization: Bearer <token> (see agent-tui serve --help)."


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    headers = scope.get("headers", [])
    return next((value.decode("latin-1") for key, value in headers if key.lower() == name), None)


async def _respond(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type), (b"content-length", b"%d" % len(body))],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _deny(
    scope: dict[str, Any], receive: Receive, send: Send, status: int, body: bytes
) -> None:
    """Refuse a request before anything else happens: an HTTP status for plain requests and
    for WebSocket handshakes (where the server supports it, else a close before accept)."""
    if scope["type"] == "http":
        await _respond(send, status, body, b"text/plain; charset=utf-8")
        return
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    if "websocket.http.response" in scope.get("extensions", {}):
        await send(
            {
                "type": "websocket.http.response.start",
                "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")],
            }
        )
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})


class ServerApp:
    def __init__(self, engine: Engine, token: str) -> None:
        self.engine = engine
        self.token = token
        self.connections = 0
        """Open ACP connections (for the log and the info page)."""

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            return  # lifespan is off: the engine's life is the serve command's
        if not authorized(_header(scope, b"authorization"), self.token):
            log.warning("refused a request without the right token from %s", scope.get("client"))
            await _deny(scope, receive, send, 401, REFUSED)
            return
        if kind == "http":
            await self._http(scope, send)
        elif scope.get("path") != ENDPOINT:
            await _deny(scope, receive, send, 404, b"The ACP endpoint is /acp.")
        else:
            await self._acp(receive, send)

    async def _http(self, scope: dict[str, Any], send: Send) -> None:
        if scope.get("path") != "/" or scope.get("method") not in ("GET", "HEAD"):
            body = b"GET / describes this server; ACP is a WebSocket at /acp."
            await _respond(send, 404, body, b"text/plain; charset=utf-8")
            return
        info = {
            "name": "agent-tui",
            "version": __version__,
            "protocol": "acp",
            "protocol_version": PROTOCOL_VERSION,
            "endpoint": ENDPOINT,
            "transport": "websocket",
            "connections": self.connections,
        }
        await _respond(send, 200, json.dumps(info).encode(), b"application/json")

    async def _acp(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        transport = WebSocketTransport(receive, send)
        agent = AcpAgent(self.engine)
        # Unstable routes on, as for stdio: session/resume and session/close are among them.
        conn = AgentSideConnection(
            agent, transport, listening=False, use_unstable_protocol=True, observers=[agent.observe]
        )
        self.connections += 1
        try:
            await conn.listen()  # until the client goes (or the server stops)
        finally:
            self.connections -= 1
            # Its turns stop as Ctrl+C stops `run` (what streamed is kept), its pending
            # permission questions are answered as refused, its events unsubscribed.
            await agent.close()
            await conn.close()
