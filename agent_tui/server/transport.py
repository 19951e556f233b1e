"""One accepted ASGI WebSocket as the ACP SDK's message Transport: one JSON-RPC message per
text frame, both ways (the framing of the SDK's own WebSocket transport, `acp.ws`)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def _error(code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


class WebSocketTransport:
    """`receive` returns None once the client has gone; from then on `send` drops what the
    agent still says (a turn being stopped answers a client that is no longer there)."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send
        self._lock = asyncio.Lock()
        self.closed = asyncio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        if self.closed.is_set():
            return
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        async with self._lock:  # frames are never interleaved
            if self.closed.is_set():
                return
            try:
                await self._send({"type": "websocket.send", "text": text})
            except Exception:  # the socket broke under us: the receive side will end too
                log.info("the client went away while a message was being sent")
                self.closed.set()

    async def receive(self) -> dict[str, Any] | None:
        while not self.closed.is_set():
            message = await self._receive()
            if message["type"] == "websocket.disconnect":
                self.closed.set()
                return None
            if message["type"] != "websocket.receive":
                continue
            if (text := message.get("text")) is None:
                data = message.get("bytes") or b""
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    await self.send(_error(PARSE_ERROR, "A frame must be UTF-8 JSON text."))
                    continue
            try:
                payload = json.loads(text)
            except json.JSONDecodeError as exc:
                await self.send(_error(PARSE_ERROR, f"Parse error: {exc.msg}."))
                continue
            if not isinstance(payload, dict):
                await self.send(_error(INVALID_REQUEST, "A message must be a JSON-RPC object."))
                continue
            return payload
        return None

    async def close(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        async with self._lock:
            try:
                await self._send({"type": "websocket.close", "code": 1000})
            except Exception:
                log.debug("closing a socket the client had already closed")
