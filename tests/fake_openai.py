"""A fake OpenAI-compatible chat-completions server for tests and benchmarks.

It listens on 127.0.0.1 only, speaks HTTP/1.1 with keep-alive (streams use chunked
transfer encoding), and serves scripted replies in order so that litellm's real code
path (openai SDK over httpx) is exercised offline:

    with FakeOpenAI() as server:
        server.script(Text("hello"), ToolCalls([Call("read", '{"path": "a.py"}')]))
        await litellm.acompletion(model="openai/fake", api_base=server.base_url,
                                  api_key="test", ...)
        assert server.requests[0]["messages"][-1]["content"] == "hi"

Reply types: Text, ToolCalls, Error (and context_overflow()), Drop, Malformed, Hang,
Cut (the stream ends cleanly with no finish reason) and StreamError (an error object
inside a 200 stream). `tests.fake_local` adds what local servers do (chat templates that
take only strings, overflow inside the stream, the model-info endpoints).
Gated (held until the test opens its gate).

Like OpenAI it answers 400 to an image in any message but a user's (a tool result may
hold only text).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

CHARS_PER_TOKEN = 4  # how default usage figures are derived from text lengths
POLL_INTERVAL = 0.05  # seconds between client-disconnect checks while waiting
ABORT_DRAIN = 2.0  # seconds a cut connection waits for the client to close its end
CUT_AFTER = 1.0  # seconds between a dropped stream's last chunk and the cut


@dataclass
class Usage:
    """Token usage reported in the last stream chunk (or the JSON body)."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
        }


@dataclass
class Text:
    """A streamed text answer, `chunk_size` characters per delta, `delay` s between deltas."""

    text: str
    chunk_size: int = 13
    usage: Usage | None = None  # None: estimated from the request and reply lengths
    delay: float = 0.0
    reasoning: str | None = None  # streamed as delta.reasoning_content before the text
    finish_reason: str = "stop"


@dataclass
class Call:
    """One tool call; `arguments` is the JSON string the model would stream."""

    name: str
    arguments: str = "{}"
    id: str | None = None  # None: "call_<n>"


@dataclass
class ToolCalls:
    """Optional text, then tool calls whose arguments are split over `argument_parts` deltas."""

    calls: list[Call | tuple[str, str]]
    text: str = ""
    usage: Usage | None = None
    argument_parts: int = 3
    chunk_size: int = 13
    delay: float = 0.0

    def normalised_calls(self) -> list[Call]:
        return [call if isinstance(call, Call) else Call(*call) for call in self.calls]


_DEFAULT_ERROR_TYPES = {
    400: "invalid_request_error",
    # litellm maps any body mentioning "invalid_request_error" to BadRequestError before
    # it looks at the status, so a 401 must not use that type (OpenAI's own 401 escapes
    # only because its message says "Incorrect API key provided").
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    429: "rate_limit_error",
}


@dataclass
class Error:
    """An OpenAI-style JSON error body with this HTTP status (and Retry-After if given)."""

    status: int
    message: str
    code: str | None = None
    retry_after: float | None = None
    type: str | None = None  # None: derived from the status like OpenAI does
    extra: dict[str, Any] | None = None  # more fields (llama.cpp's n_ctx, n_prompt_tokens)

    def to_json(self) -> dict[str, Any]:
        kind = self.type or _DEFAULT_ERROR_TYPES.get(self.status, "server_error")
        return {
            "error": {
                "message": self.message,
                "type": kind,
                "param": None,
                "code": self.code,
                **(self.extra or {}),
            }
        }


def context_overflow() -> Error:
    """The error OpenAI returns when the prompt does not fit the context window."""
    return Error(
        400,
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130000 tokens. Please reduce the length of the messages.",
        code="context_length_exceeded",
        type="invalid_request_error",
    )


@dataclass
class Drop:
    """Stream `after_chunks` text deltas of `text`, then cut the connection (no [DONE])."""

    after_chunks: int
    text: str
    chunk_size: int = 4


@dataclass
class Malformed:
    """Stream `text` (may be empty), then a data: line whose JSON is garbage."""

    text: str = ""


@dataclass
class Hang:
    """Stream `text` at once, then stall for `delay` seconds before finishing normally.

    The stall ends early when the client disconnects or the server stops, so abort
    tests neither leak a busy thread nor see a broken-pipe traceback.
    """

    text: str = ""
    delay: float = 60.0


@dataclass
class Cut:
    """Stream `after_chunks` text deltas of `text`, then end the stream cleanly (the
    chunked body is terminated) with no finish reason; `done` adds `data: [DONE]` first.
    What a proxy, a load balancer or a server whose chat template fails after `200`
    leaves the client with."""

    text: str = ""
    after_chunks: int = 0
    chunk_size: int = 4
    done: bool = False
    calls: list[Call] | None = None
    """Tool calls whose name and first half of arguments stream before the end."""


@dataclass
class StreamError:
    """Stream `after_chunks` text deltas of `text`, then an error inside the 200 stream:
    `data: {"error": {...}}` (llama.cpp's format_oai_sse, OpenAI's mid-stream errors), or
    with `event` an `event: error` line before it; then [DONE] and the end."""

    message: str
    text: str = ""
    after_chunks: int = 0
    chunk_size: int = 4
    code: int | str | None = 500
    type: str = "server_error"
    event: bool = False
    extra: dict[str, Any] | None = None
    """More fields of the error object (llama.cpp's n_ctx, n_prompt_tokens)."""

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message, "type": self.type}
        return {"error": {**error, **(self.extra or {})}}


@dataclass
class Gated:
    """Stream `text` at once, then wait until the test sets `gate`, then serve `reply`.

    The request is in `requests` (wait_for_requests) while the reply is held, so a test
    knows the client is mid-stream and keeps it there as long as it needs, without
    sleeping. The wait ends early when the client disconnects or the server stops.
    """

    reply: Text | ToolCalls
    gate: threading.Event
    text: str = ""
    timeout: float = 60.0


Reply = Text | ToolCalls | Error | Drop | Malformed | Hang | Cut | StreamError | Gated


def _pieces(text: str, size: int) -> list[str]:
    size = max(size, 1)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _split(text: str, parts: int) -> list[str]:
    """`text` in `parts` roughly equal pieces (at least one piece, possibly empty)."""
    if not text:
        return [""]
    size = -(-len(text) // max(parts, 1))
    return _pieces(text, size)


def _estimate_usage(body: dict[str, Any], *outputs: str) -> Usage:
    prompt = len(json.dumps(body.get("messages", []))) // CHARS_PER_TOKEN + 1
    completion = sum(len(text) for text in outputs) // CHARS_PER_TOKEN + 1
    return Usage(prompt_tokens=prompt, completion_tokens=completion)


class _ClientGone(Exception):
    """The client closed the connection, or the server is stopping."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; streams are chunked
    server: _Server

    # -- plumbing ---------------------------------------------------------------------

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.fake._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _read_body(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return None
        return body if isinstance(body, dict) else None

    def _client_gone(self) -> bool:
        """True when the peer has closed (readable with nothing to read)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _wait(self, seconds: float, gate: threading.Event | None = None) -> None:
        """Sleep up to `seconds` (or until `gate` is set), raising _ClientGone as soon as
        waiting is pointless."""
        deadline = time.monotonic() + seconds
        while True:
            if self.server.fake._stopping.is_set() or self._client_gone():
                raise _ClientGone
            left = deadline - time.monotonic()
            if left <= 0 or (gate is not None and gate.is_set()):
                return
            if gate is not None:
                gate.wait(min(left, POLL_INTERVAL))
            else:
                time.sleep(min(left, POLL_INTERVAL))

    # -- routes -------------------------------------------------------------------------

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [{"id": "fake", "object": "model", "created": 0, "owned_by": "fake"}],
                },
            )
        else:
            self._send_json(404, Error(404, f"Unknown path {self.path}").to_json())

    def do_POST(self) -> None:
        body = self._read_body()
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, Error(404, f"Unknown path {self.path}").to_json())
            return
        if body is None:
            self._send_json(400, Error(400, "Request body is not a JSON object").to_json())
            return
        fake = self.server.fake
        reply = fake._record(body, {k.lower(): v for k, v in self.headers.items()})
        try:
            if isinstance(reply, Error):
                headers = {}
                if reply.retry_after is not None:
                    headers["Retry-After"] = f"{reply.retry_after:g}"
                self._send_json(reply.status, reply.to_json(), headers)
            elif body.get("stream"):
                _Stream(self, body).serve(reply)
            else:
                self._serve_whole(body, reply)
        except (_ClientGone, BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
        finally:
            fake._set_active(-1)

    def _serve_whole(self, body: dict[str, Any], reply: Reply) -> None:
        """A non-streaming chat.completion (title generation and other short calls)."""
        if isinstance(reply, Drop):
            self._abort()
            return
        if isinstance(reply, StreamError):
            self._send_json(200, reply.to_json())
            return
        if isinstance(reply, Cut):
            reply = Text(reply.text[: reply.after_chunks * reply.chunk_size])
        if isinstance(reply, Malformed):
            data = b'{"id": "chatcmpl-fake", "choices": [{'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if isinstance(reply, Hang):
            self._wait(reply.delay)
            reply = Text(reply.text)
        if isinstance(reply, Gated):
            self._wait(reply.timeout, reply.gate)
            reply = reply.reply
        message: dict[str, Any] = {"role": "assistant", "content": None}
        outputs: list[str] = []
        finish = "stop"
        if isinstance(reply, Text):
            message["content"] = reply.text
            outputs.append(reply.text)
            if reply.reasoning:
                message["reasoning_content"] = reply.reasoning
                outputs.append(reply.reasoning)
            finish = reply.finish_reason
        elif isinstance(reply, ToolCalls):
            message["content"] = reply.text or None
            calls = reply.normalised_calls()
            message["tool_calls"] = [
                {
                    "id": call.id or f"call_{n}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for n, call in enumerate(calls)
            ]
            outputs += [reply.text, *(call.arguments for call in calls)]
            finish = "tool_calls"
        usage = getattr(reply, "usage", None) or self.server.fake.estimate_usage(body, *outputs)
        self._send_json(
            200,
            {
                "id": self.server.fake._next_id(),
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [
                    {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
                ],
                "usage": usage.to_json(),
            },
        )

    def _abort(self) -> None:
        """Cut the connection mid-body, as a crashed upstream or a proxy that gives up
        does: what was written arrives, then the peer closes (the chunked body never
        ends). Not a bare RST at once: the kernel would throw away whatever the client
        had not read yet, so how much of the partial text arrived would depend on how
        busy the client was (a real crash sends FIN when its input was all read)."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(ABORT_DRAIN)
            while self.connection.recv(4096):  # until the client has read it and closed
                pass
        except OSError:
            pass


class _Stream:
    """Writes one SSE response of chat.completion.chunk objects, chunked-encoded."""

    def __init__(self, handler: _Handler, body: dict[str, Any]) -> None:
        self.handler = handler
        self.fake = handler.server.fake
        self.body = body
        self.id = handler.server.fake._next_id()
        self.created = int(time.time())
        self.model = body.get("model", "fake")
        options = body.get("stream_options") or {}
        self.include_usage = bool(options.get("include_usage"))

    def serve(self, reply: Reply) -> None:
        handler = self.handler
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        self.delta({"role": "assistant", "content": ""})
        if isinstance(reply, Gated):
            if reply.text:
                self.delta({"content": reply.text})
            handler._wait(reply.timeout, reply.gate)
            reply = reply.reply
        if isinstance(reply, Text):
            self.text(reply)
        elif isinstance(reply, ToolCalls):
            self.tool_calls(reply)
        elif isinstance(reply, Drop):
            for piece in _pieces(reply.text, reply.chunk_size)[: reply.after_chunks]:
                self.delta({"content": piece})
            # A client still busy with the response's start (litellm loads its tokenizer
            # then, ~0.5 s) would find the cut before the chunks: aiohttp raises first.
            handler._wait(CUT_AFTER)
            handler._abort()
            return
        elif isinstance(reply, Malformed):
            if reply.text:
                self.delta({"content": reply.text})
            self.write(b'data: {"id": "chatcmpl-fake", "choices": [{"delta": {"content": \n\n')
            self.write(b"data: this is not json\n\n")
            self.done()
            return
        elif isinstance(reply, Hang):
            if reply.text:
                self.delta({"content": reply.text})
            handler._wait(reply.delay)
            self.finish("stop", self.fake.estimate_usage(self.body, reply.text))
        elif isinstance(reply, Cut):
            for piece in _pieces(reply.text, reply.chunk_size)[: reply.after_chunks]:
                self.delta({"content": piece})
            for index, call in enumerate(reply.calls or []):
                self.delta(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call.id or f"call_{index}",
                                "type": "function",
                                "function": {
                                    "name": call.name,
                                    "arguments": call.arguments[: len(call.arguments) // 2],
                                },
                            }
                        ]
                    }
                )
            if reply.done:
                self.write(b"data: [DONE]\n\n")
            self.end()
            return
        elif isinstance(reply, StreamError):
            for piece in _pieces(reply.text, reply.chunk_size)[: reply.after_chunks]:
                self.delta({"content": piece})
            prefix = b"event: error\n" if reply.event else b""
            self.write(prefix + b"data: " + json.dumps(reply.to_json()).encode() + b"\n\n")
        self.done()

    # -- reply bodies -----------------------------------------------------------------

    def text(self, reply: Text) -> None:
        outputs = [reply.text]
        if reply.reasoning:
            outputs.append(reply.reasoning)
            for piece in _pieces(reply.reasoning, reply.chunk_size):
                self.delta({"reasoning_content": piece}, reply.delay)
        for piece in _pieces(reply.text, reply.chunk_size):
            self.delta({"content": piece}, reply.delay)
        self.finish(
            reply.finish_reason, reply.usage or self.fake.estimate_usage(self.body, *outputs)
        )

    def tool_calls(self, reply: ToolCalls) -> None:
        for piece in _pieces(reply.text, reply.chunk_size):
            self.delta({"content": piece}, reply.delay)
        calls = reply.normalised_calls()
        for index, call in enumerate(calls):
            parts = _split(call.arguments, reply.argument_parts)
            self.delta(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call.id or f"call_{index}",
                            "type": "function",
                            "function": {"name": call.name, "arguments": parts[0]},
                        }
                    ]
                },
                reply.delay,
            )
            for part in parts[1:]:
                self.delta(
                    {"tool_calls": [{"index": index, "function": {"arguments": part}}]}, reply.delay
                )
        outputs = [reply.text, *(call.arguments for call in calls)]
        self.finish("tool_calls", reply.usage or self.fake.estimate_usage(self.body, *outputs))

    # -- SSE framing --------------------------------------------------------------------

    def chunk(self, choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
            "choices": choices,
            **extra,
        }

    def delta(self, delta: dict[str, Any], delay: float = 0.0) -> None:
        if delay:
            self.handler._wait(delay)
        self.event(self.chunk([{"index": 0, "delta": delta, "finish_reason": None}]))

    def finish(self, reason: str, usage: Usage) -> None:
        self.event(self.chunk([{"index": 0, "delta": {}, "finish_reason": reason}]))
        if self.include_usage:
            self.event(self.chunk([], usage=usage.to_json()))

    def event(self, payload: dict[str, Any]) -> None:
        self.write(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def done(self) -> None:
        self.write(b"data: [DONE]\n\n")
        self.end()

    def end(self) -> None:
        """The last chunk of the body: the response is complete as far as HTTP goes."""
        self.handler.wfile.write(b"0\r\n\r\n")
        self.handler.wfile.flush()

    def write(self, data: bytes) -> None:
        wfile = self.handler.wfile
        wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeOpenAI

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients closing idle keep-alive connections (RST at exit) are routine.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def misplaced_image(body: dict[str, Any]) -> Error | None:
    """OpenAI's 400 for an image in a message whose role is not user."""
    for m, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") == "user" or not isinstance(content, list):
            continue
        if any(isinstance(b, dict) and b.get("type") == "image_url" for b in content):
            return Error(
                400,
                f"Invalid 'messages[{m}]'. Image URLs are only allowed for "
                f"messages with role 'user', but this message with role "
                f"'{message.get('role')}' contains an image URL.",
                code="invalid_value",
                type="invalid_request_error",
            )
    return None


class FakeOpenAI:
    """A scripted OpenAI-compatible server on 127.0.0.1 (see the module docstring)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # lower-cased request headers, like `requests`
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self._queue: deque[Reply] = deque()
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._ids: Iterator[int] = itertools.count(1)
        self._connections: set[socket.socket] = set()
        self._active = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-openai",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        # Wake handler threads parked on idle keep-alive connections.
        with self._cond:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- scripting ----------------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queue replies; each request takes the next one, then `responder` answers."""
        with self._cond:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not yet served."""
        with self._cond:
            return len(self._queue)

    def wait_for_requests(self, n: int, timeout: float = 10) -> None:
        """Block until at least `n` requests arrived; TimeoutError otherwise."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.requests) >= n, timeout):
                raise TimeoutError(f"expected {n} requests, got {len(self.requests)}")

    @property
    def active(self) -> int:
        """Responses being written right now (a stalled Hang counts until it ends)."""
        with self._cond:
            return self._active

    def wait_idle(self, timeout: float = 10) -> None:
        """Block until no response is being written, e.g. after a client aborted a stream."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._active == 0, timeout):
                raise TimeoutError(f"{self._active} responses still being written")

    # -- called by handler threads ------------------------------------------------------

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        problem = misplaced_image(body)
        with self._cond:
            self.requests.append(body)
            self.headers.append(headers)
            self._active += 1  # counted with the request, so wait_idle never races it
            problem = problem or self._problem(body)
            reply = self._queue.popleft() if self._queue and problem is None else None
            self._cond.notify_all()
        if problem is not None:
            return problem
        if reply is not None:
            return reply
        return self.responder(body) if self.responder else Text("ok")

    def estimate_usage(self, body: dict[str, Any], *outputs: str) -> Usage:
        """The usage reported when a reply sets none (subclasses count as they do)."""
        return _estimate_usage(body, *outputs)

    def _problem(self, body: dict[str, Any]) -> Reply | None:
        """How the server fails this request by itself (no scripted reply is used);
        None here: subclasses that behave like real servers say (tests.fake_local)."""
        return None

    def _set_active(self, change: int) -> None:
        with self._cond:
            self._active += change
            self._cond.notify_all()

    def _next_id(self) -> str:
        return f"chatcmpl-fake{next(self._ids)}"

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._cond:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


__all__ = [
    "Call",
    "Cut",
    "Drop",
    "Error",
    "FakeOpenAI",
    "Gated",
    "Hang",
    "Malformed",
    "Reply",
    "StreamError",
    "Text",
    "ToolCalls",
    "Usage",
    "context_overflow",
]
