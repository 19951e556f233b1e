"""A small blocking WebSocket client (RFC 6455) over one socket: enough for JSON text
frames to and from `agent-tui serve`. Hand-written because the `websockets` client's
imports took most of `run --attach`'s start-up budget (docs/performance.md). Reads wait
in `select` together with a wake-up socket, so a signal handler can interrupt a wait
without ever leaving a frame half read."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import select
import socket
import struct
from urllib.parse import urlsplit

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TEXT, BINARY, CLOSE, PING, PONG, CONTINUATION = 0x1, 0x2, 0x8, 0x9, 0xA, 0x0
MAX_MESSAGE = 64 * 1024 * 1024
CONNECT_TIMEOUT = 10.0


class WebSocketError(Exception):
    """The connection failed or broke; `status` is the HTTP status of a refused handshake."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _mask(payload: bytes, key: bytes) -> bytes:
    repeated = (key * (len(payload) // 4 + 1))[: len(payload)]
    masked = int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")
    return masked.to_bytes(len(payload), "big")


def frame(opcode: int, payload: bytes) -> bytes:
    """A final, masked client frame."""
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
    elif size < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
    key = os.urandom(4)
    return head + key + _mask(payload, key)


class WebSocket:
    def __init__(self, sock: socket.socket, buffered: bytes = b"") -> None:
        self.sock = sock
        self._buffer = bytearray(buffered)
        self._fragments: list[bytes] = []
        self._fragment_opcode = TEXT
        self.closed = False

    @classmethod
    def connect(cls, url: str, headers: dict[str, str]) -> WebSocket:
        parts = urlsplit(url)
        secure = parts.scheme in ("https", "wss")
        if parts.scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
            raise WebSocketError(f"{url} is not an http://, https://, ws:// or wss:// URL.")
        port = parts.port or (443 if secure else 80)
        try:
            sock = socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            raise WebSocketError(f"cannot connect to {parts.hostname}:{port}: {exc}") from exc
        if secure:
            import ssl

            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=parts.hostname)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16))
        host = parts.netloc.rpartition("@")[2]
        lines = [
            f"GET {parts.path or '/'}{'?' + parts.query if parts.query else ''} HTTP/1.1",
            f"Host: {host}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key.decode()}",
            "Sec-WebSocket-Version: 13",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        try:
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            response = b""
            while b"\r\n\r\n" not in response:
                if not (chunk := sock.recv(4096)):
                    raise WebSocketError("the server closed the connection during the handshake")
                response += chunk
                if len(response) > 65536:
                    raise WebSocketError("the server's handshake answer is too long")
        except OSError as exc:
            sock.close()
            raise WebSocketError(f"the handshake failed: {exc}") from exc
        head, _, rest = response.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        fields = status_line.split(" ", 2)
        status = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0
        if status != 101:
            sock.close()
            raise WebSocketError(f"the server answered {status_line.strip()!r}", status)
        answer = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in header_lines)
        }
        expected = base64.b64encode(hashlib.sha1(key + GUID).digest()).decode()
        if answer.get("sec-websocket-accept") != expected:
            sock.close()
            raise WebSocketError("the server's handshake is not a WebSocket's")
        sock.settimeout(None)
        return cls(sock, rest)

    def send_text(self, text: str) -> None:
        self._send(TEXT, text.encode("utf-8"))

    def _send(self, opcode: int, payload: bytes) -> None:
        try:
            self.sock.sendall(frame(opcode, payload))
        except OSError as exc:
            self.closed = True
            raise WebSocketError(f"the connection broke: {exc}") from exc

    def wait(self, wakeup: socket.socket | None = None) -> bool:
        """Until data arrives (True) or `wakeup` becomes readable (False)."""
        if self._buffer:
            return True
        pending = getattr(self.sock, "pending", None)  # TLS: bytes already decrypted
        if pending is not None and pending():
            return True
        watched = [self.sock] if wakeup is None else [self.sock, wakeup]
        ready, _, _ = select.select(watched, [], [])
        return self.sock in ready

    def receive(self, wakeup: socket.socket | None = None) -> str | None:
        """The next text message; None when the server closed; "" never. When `wakeup`
        becomes readable first, raises InterruptedError (nothing is half read)."""
        while True:
            if (found := self._next_frame()) is not None:
                if (message := self._on_frame(*found)) is not None or self.closed:
                    return message
                continue
            if self.closed:
                return None
            if not self.wait(wakeup):
                raise InterruptedError
            try:
                chunk = self.sock.recv(65536)
            except OSError as exc:
                raise WebSocketError(f"the connection broke: {exc}") from exc
            if not chunk:
                self.closed = True
                return None
            self._buffer += chunk

    def _on_frame(self, final: bool, opcode: int, payload: bytes) -> str | None:
        if opcode == PING:
            self._send(PONG, payload)
        elif opcode == CLOSE:
            if not self.closed:
                self.closed = True
                with contextlib.suppress(OSError):
                    self.sock.sendall(frame(CLOSE, payload[:2]))
        elif opcode in (TEXT, BINARY, CONTINUATION):
            return self._assemble(final, opcode, payload)
        return None

    def _assemble(self, final: bool, opcode: int, payload: bytes) -> str | None:
        if opcode != CONTINUATION:
            self._fragments, self._fragment_opcode = [], opcode
        self._fragments.append(payload)
        if sum(len(f) for f in self._fragments) > MAX_MESSAGE:
            raise WebSocketError("a message from the server is too large")
        if not final:
            return None
        data, self._fragments = b"".join(self._fragments), []
        if self._fragment_opcode != TEXT:
            return None  # binary frames carry nothing for us
        return data.decode("utf-8")

    def _next_frame(self) -> tuple[bool, int, bytes] | None:
        """A whole frame taken from the buffer, or None until more bytes arrive."""
        buffer = self._buffer
        if len(buffer) < 2:
            return None
        first, second = buffer[0], buffer[1]
        size, offset = second & 0x7F, 2
        if size in (126, 127):  # the length follows, in 2 or 8 bytes
            offset = 4 if size == 126 else 10
            if len(buffer) < offset:
                return None
            size = int.from_bytes(buffer[2:offset], "big")
        if size > MAX_MESSAGE:
            raise WebSocketError("a frame from the server is too large")
        key = b""
        if second & 0x80:  # servers do not mask; accept it anyway
            if len(buffer) < offset + 4:
                return None
            key, offset = bytes(buffer[offset : offset + 4]), offset + 4
        if len(buffer) < offset + size:
            return None
        payload = bytes(buffer[offset : offset + size])
        del buffer[: offset + size]
        return bool(first & 0x80), first & 0x0F, _mask(payload, key) if key else payload

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(OSError):
                self.sock.sendall(frame(CLOSE, struct.pack("!H", 1000)))
        with contextlib.suppress(OSError):
            self.sock.close()
