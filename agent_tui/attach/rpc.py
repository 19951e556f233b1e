"""JSON-RPC 2.0 over the WebSocket, blocking: one request at a time from this side, with the
server's notifications and requests (permission questions) handled while it is pending."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

from agent_tui.attach.websocket import WebSocket

RESOURCE_NOT_FOUND = -32002

OnNotification = Callable[[str, dict[str, Any]], None]
OnRequest = Callable[[str, dict[str, Any]], dict[str, Any]]


class RpcError(Exception):
    """An error response: `message` is the server's one-paragraph text."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @property
    def kind(self) -> str | None:
        kind = self.data.get("kind") if isinstance(self.data, dict) else None
        return kind if isinstance(kind, str) else None

    def reason(self) -> str:
        """The sentence to print: the server's message, with the reason it gave if any."""
        reason = self.data.get("reason") if isinstance(self.data, dict) else None
        return reason if isinstance(reason, str) else self.message


class ConnectionLost(Exception):
    """The server closed the connection while an answer was pending."""


class Rpc:
    def __init__(
        self, ws: WebSocket, on_notification: OnNotification, on_request: OnRequest
    ) -> None:
        self.ws = ws
        self.on_notification = on_notification
        self.on_request = on_request
        self._next_id = 0

    def _send(self, message: dict[str, Any]) -> None:
        self.ws.send_text(json.dumps(message, ensure_ascii=False, separators=(",", ":")))

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def call(
        self,
        method: str,
        params: dict[str, Any],
        *,
        wakeup: socket.socket | None = None,
        on_wakeup: Callable[[], None] | None = None,
    ) -> Any:
        """The result of `method`; RpcError for an error answer. While it is pending, a
        byte on `wakeup` (written by a signal handler) runs `on_wakeup`."""
        request_id = self._next_id
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            try:
                text = self.ws.receive(wakeup)
            except InterruptedError:
                assert wakeup is not None
                wakeup.recv(64)
                if on_wakeup is not None:
                    on_wakeup()
                continue
            if text is None:
                raise ConnectionLost
            try:
                message = json.loads(text)
            except json.JSONDecodeError:
                continue
            if not isinstance(message, dict):
                continue
            if "method" in message:
                self._incoming(message)
            elif message.get("id") == request_id:
                if isinstance(error := message.get("error"), dict):
                    raise RpcError(
                        int(error.get("code", -32603)),
                        str(error.get("message", "error")),
                        error.get("data"),
                    )
                return message.get("result")

    def _incoming(self, message: dict[str, Any]) -> None:
        method = str(message["method"])
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if "id" not in message:
            self.on_notification(method, params)
            return
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = self.on_request(method, params)
        except RpcError as exc:
            reply["error"] = {"code": exc.code, "message": exc.message}
        self._send(reply)
