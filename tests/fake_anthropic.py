"""A fake Anthropic Messages API server for tests and benchmarks, with a prefix cache.

Like `tests.fake_openai` (whose plumbing it reuses) it listens on 127.0.0.1 only, speaks
HTTP/1.1 with keep-alive (streams are chunked SSE with `event:` lines) and serves
scripted replies in order, so litellm's real `anthropic/` code path runs offline:

    with FakeAnthropic() as server:
        server.script(Text("hello", thinking="Let me think."), ToolUse([("read", "{}")]))
        await litellm.acompletion(model="anthropic/claude-sonnet-4-5",
                                  api_base=server.base_url, api_key="test", ...)
        assert server.usages[0]["cache_read_input_tokens"] == 0

litellm posts to `{api_base}/v1/messages`, so `base_url` has no `/v1`.

What makes it more than a script player is what the real API enforces and measures:

- a prefix cache (`PrefixCache`): tools, then system, then messages are flattened into
  blocks; a block with `cache_control` (a breakpoint) writes the prefix ending there,
  and a request reads the longest cached prefix that ends at one of its breakpoints or
  up to `LOOKBACK` blocks before one. The usage reports read / written / uncached input
  tokens exactly as Anthropic splits them;
- at most `MAX_BREAKPOINTS` cache_control blocks, `max_tokens` required, tool_use /
  tool_result pairing, and with `thinking` enabled, the thinking block (with a signature
  this server issued for that text) in front of each tool-use turn it produced;
- image blocks (in a message or inside a tool_result): a supported media type, base64
  data at most 5 MB whose bytes are of that type, priced by their pixels (width*height/750
  after fitting 1568 px and ~1.15 MP) rather than by the length of their data.

Reply types: Text, ToolUse, Error (overloaded(), rate_limited(), server_error(),
prompt_too_long()), StreamError, Drop, Hang.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import json
import math
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from tests.fake_openai import FakeOpenAI, _ClientGone, _Handler, _pieces, _Server, _split

CHARS_PER_TOKEN = 4  # a block costs len(canonical JSON) // CHARS_PER_TOKEN + 1 tokens
LOOKBACK = 20  # block boundaries checked for a cache hit before each breakpoint
MAX_BREAKPOINTS = 4  # cache_control blocks allowed per request
MIN_CACHEABLE_TOKENS = 1024  # Sonnet's minimum cacheable prompt length
MIN_THINKING_BUDGET = 1024
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
IMAGE_MAX_BASE64 = 5 * 1024 * 1024  # the API refuses larger images
IMAGE_MAX_SIDE = 1568  # the API scales larger images down before pricing them
IMAGE_MAX_TOKENS = 1600
IMAGE_PIXELS_PER_TOKEN = 750
THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


# -- replies --------------------------------------------------------------------------


@dataclass
class Text:
    """A streamed text answer, optionally after a thinking block."""

    text: str
    chunk_size: int = 4
    delay: float = 0.0  # seconds before each delta
    thinking: str | None = None
    signature: str | None = None  # None: the server makes one up (and remembers it)
    stop_reason: str = "end_turn"
    output_tokens: int | None = None  # None: estimated from the reply's length


@dataclass
class Call:
    """One tool use; `arguments_json` is the JSON the model streams as `partial_json`."""

    name: str
    arguments_json: str = "{}"
    id: str | None = None  # None: "toolu_fake<n>"


@dataclass
class ToolUse:
    """Optional thinking and text, then tool_use blocks (stop_reason "tool_use")."""

    calls: list[Call | tuple[str, str]]
    text: str = ""
    thinking: str | None = None
    signature: str | None = None
    argument_parts: int = 3  # input_json_delta events per call
    output_tokens: int | None = None
    chunk_size: int = 4
    delay: float = 0.0

    def normalised_calls(self) -> list[Call]:
        return [call if isinstance(call, Call) else Call(*call) for call in self.calls]


@dataclass
class Error:
    """An HTTP error with Anthropic's body (and a retry-after header if given)."""

    status: int
    type: str
    message: str
    retry_after: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"type": "error", "error": {"type": self.type, "message": self.message}}


def overloaded() -> Error:
    return Error(529, "overloaded_error", "Overloaded")


def rate_limited(retry_after: float = 1.0) -> Error:
    return Error(
        429,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of "
        "30,000 input tokens per minute.",
        retry_after=retry_after,
    )


def server_error() -> Error:
    return Error(500, "api_error", "Internal server error")


def prompt_too_long(tokens: int = 210_000, maximum: int = 200_000) -> Error:
    return Error(
        400, "invalid_request_error", f"prompt is too long: {tokens} tokens > {maximum} maximum"
    )


def _invalid(message: str) -> Error:
    return Error(400, "invalid_request_error", message)


@dataclass
class StreamError:
    """Stream `text`, then an `event: error` (the API's mid-stream overload) and end."""

    text: str = ""
    type: str = "overloaded_error"
    message: str = "Overloaded"


@dataclass
class Drop:
    """Stream `after_chunks` text deltas of `text`, then cut the connection."""

    after_chunks: int
    text: str
    chunk_size: int = 4


@dataclass
class Hang:
    """Stream `text` at once, then stall `delay` s (ends early on disconnect or stop)."""

    text: str = ""
    delay: float = 60.0


Reply = Text | ToolUse | Error | StreamError | Drop | Hang


# -- the prefix cache ------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One cacheable unit of a request, identified by the prefix that ends with it."""

    key: str  # hash chain over every block up to and including this one
    tokens: int
    breakpoint: bool  # carries cache_control
    where: str  # "tools.0", "system.1", "messages.3.content.0" (for messages)


def canonical(value: Any) -> str:
    """The JSON a block is identified and priced by, cache_control left out."""
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k != "cache_control"}
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def block_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


def image_pixels(data: bytes) -> tuple[int, int] | None:
    """(width, height) of PNG and GIF bytes (what the tests send); None otherwise."""
    if data.startswith(_MAGIC["image/png"]) and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    if data.startswith(_MAGIC["image/gif"]):
        return struct.unpack("<HH", data[6:10])
    return None


def image_tokens(data: bytes) -> int:
    """What the API bills for an image: its pixels / 750 after scaling down to fit."""
    size = image_pixels(data)
    if size is None:
        return IMAGE_MAX_TOKENS
    width, height = size
    scale = min(1.0, IMAGE_MAX_SIDE / max(width, height))
    return min(math.ceil(width * scale * height * scale / IMAGE_PIXELS_PER_TOKEN), IMAGE_MAX_TOKENS)


def _images(value: Any) -> list[dict[str, Any]]:
    """The image blocks of a content block (itself, or inside a tool_result)."""
    if not isinstance(value, dict):
        return []
    if value.get("type") == "image":
        return [value]
    if value.get("type") == "tool_result" and isinstance(value.get("content"), list):
        return [b for b in value["content"] if isinstance(b, dict) and b.get("type") == "image"]
    return []


def _image_data(block: dict[str, Any]) -> bytes:
    source = block.get("source") or {}
    try:
        return base64.b64decode(source.get("data") or "", validate=True)
    except (binascii.Error, ValueError):
        return b""


def _without_image_data(value: Any) -> Any:
    """A block with its images' data left out (they are priced by pixels, not length)."""
    if isinstance(value, dict):
        if value.get("type") == "image":
            return {
                **value,
                "source": {k: v for k, v in value.get("source", {}).items() if k != "data"},
            }
        return {k: _without_image_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_image_data(item) for item in value]
    return value


def check_image(block: dict[str, Any], where: str) -> Error | None:
    """The API's checks of one image block."""
    source = block.get("source") or {}
    if source.get("type") != "base64":
        return None
    media_type = source.get("media_type")
    if media_type not in IMAGE_TYPES:
        return _invalid(
            f"{where}.source.base64.media_type: Input should be "
            f"{', '.join(repr(t) for t in IMAGE_TYPES)}"
        )
    if len(source.get("data") or "") > IMAGE_MAX_BASE64:
        return _invalid(f"{where}.source.base64: image exceeds 5 MB maximum")
    data = _image_data(block)
    if not data.startswith(_MAGIC[media_type]):
        return _invalid(
            f"{where}.source.base64.data: The image was specified using the "
            f"{media_type} media type, but does not appear to be a valid "
            f"{media_type} image"
        )
    return None


def content_list(content: Any) -> list[Any]:
    """Message or system content as blocks: a plain string is one text block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _marked(block: Any) -> bool:
    return isinstance(block, dict) and block.get("cache_control") is not None


def request_blocks(body: dict[str, Any]) -> list[Block]:
    """Flatten tools, system and messages (in that order) into hash-chained blocks."""
    blocks: list[Block] = []
    key = hashlib.sha256(str(body.get("model", "")).encode()).hexdigest()

    def add(where: str, value: Any, marked: bool, start: str = "") -> None:
        nonlocal key
        text = canonical(value)
        # `start` (the role, at a message's first block) ties a block to its message.
        key = hashlib.sha256(f"{key}|{where.split('.')[0]}|{start}|{text}".encode()).hexdigest()
        images = _images(value)
        tokens = block_tokens(canonical(_without_image_data(value)) if images else text)
        tokens += sum(image_tokens(_image_data(image)) for image in images)
        blocks.append(Block(key, tokens, marked, where))

    for n, tool in enumerate(body.get("tools") or []):
        add(f"tools.{n}", tool, _marked(tool))
    for n, part in enumerate(content_list(body.get("system"))):
        add(f"system.{n}", part, _marked(part))
    for m, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            continue
        parts = content_list(message.get("content"))
        for n, part in enumerate(parts):
            last = n == len(parts) - 1
            marked = _marked(part) or (last and _marked(message))
            add(
                f"messages.{m}.content.{n}",
                part,
                marked,
                start=str(message.get("role")) if n == 0 else "",
            )
    return blocks


def usage_dict(
    input_tokens: int, read: int = 0, written: int = 0, output_tokens: int = 1
) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
        "output_tokens": output_tokens,
    }


class PrefixCache:
    """Which prompt prefixes are cached, and the input usage a request is billed for.

    Not thread-safe: the server calls it under its own lock.
    """

    def __init__(
        self,
        min_cacheable_tokens: int = MIN_CACHEABLE_TOKENS,
        lookback: int = LOOKBACK,
        enabled: bool = True,
    ) -> None:
        self.min_cacheable_tokens = min_cacheable_tokens
        self.lookback = lookback
        self.enabled = enabled
        self.entries: set[str] = set()

    def clear(self) -> None:
        self.entries.clear()

    def lookup_and_store(self, blocks: Sequence[Block]) -> dict[str, int]:
        """Read the longest cached prefix, write every breakpoint's prefix; the usage.

        `output_tokens` in the result is the placeholder 1 of `message_start`.
        """
        ends = list(itertools.accumulate(block.tokens for block in blocks))
        total = ends[-1] if ends else 0
        breakpoints = [n for n, block in enumerate(blocks) if block.breakpoint]
        if not self.enabled or not breakpoints:
            return usage_dict(total)
        read_end = -1  # index of the last block of the prefix read
        for point in breakpoints:
            for n in range(point, max(point - self.lookback, 0) - 1, -1):
                if blocks[n].key in self.entries:
                    read_end = max(read_end, n)
                    break
        read = ends[read_end] if read_end >= 0 else 0
        write_end = -1
        for point in breakpoints:
            if point > read_end and ends[point] >= self.min_cacheable_tokens:
                self.entries.add(blocks[point].key)
                write_end = point
        written = ends[write_end] - read if write_end >= 0 else 0
        return usage_dict(total - read - written, read, written)


# -- request validation ----------------------------------------------------------------


def _tool_use_ids(message: dict[str, Any]) -> list[str]:
    return [
        part.get("id", "")
        for part in content_list(message.get("content"))
        if isinstance(part, dict) and part.get("type") == "tool_use"
    ]


def _check_tool_pairs(messages: list[Any]) -> Error | None:
    """Each tool_use answered in the next message; each tool_result answers one."""
    previous_ids: list[str] = []
    for m, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        parts = content_list(message.get("content")) if role else []
        results = [
            part.get("tool_use_id")
            for part in parts
            if isinstance(part, dict) and part.get("type") == "tool_result"
        ]
        missing = [tool_id for tool_id in previous_ids if tool_id not in results]
        if missing:
            return _invalid(
                f"messages.{m}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}. Each `tool_use` block must have "
                "a corresponding `tool_result` block in the next message."
            )
        for n, tool_id in enumerate(results):
            if tool_id not in previous_ids:
                return _invalid(
                    f"messages.{m}.content.{n}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {tool_id}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message."
                )
        previous_ids = _tool_use_ids(message) if role == "assistant" else []
    return None


def _check_images(messages: list[Any]) -> Error | None:
    for m, message in enumerate(messages):
        for n, part in enumerate(content_list(message.get("content"))):
            for image in _images(part):
                problem = check_image(image, f"messages.{m}.content.{n}")
                if problem is not None:
                    return problem
    return None


def _check_thinking_budget(body: dict[str, Any]) -> Error | None:
    budget = (body.get("thinking") or {}).get("budget_tokens")
    if not isinstance(budget, int) or budget < MIN_THINKING_BUDGET:
        return _invalid(
            "thinking.enabled.budget_tokens: Input should be greater than or "
            f"equal to {MIN_THINKING_BUDGET}"
        )
    if isinstance(body.get("max_tokens"), int) and body["max_tokens"] <= budget:
        return _invalid(
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please "
            f"consult our documentation at {THINKING_DOCS}"
            "#max-tokens-and-context-window-size"
        )
    return None


def _tool_input(arguments_json: str) -> Any:
    """The parsed input of a tool_use block; a deliberately broken script streams as is."""
    try:
        return json.loads(arguments_json or "{}")
    except json.JSONDecodeError:
        return {}


# -- HTTP ------------------------------------------------------------------------------


class _AnthropicHandler(_Handler):
    """fake_openai's plumbing (keep-alive, disconnect checks, abort) with Anthropic routes."""

    @property
    def fake(self) -> FakeAnthropic:
        return self.server.fake  # type: ignore[return-value]

    def _error(self, error: Error) -> None:
        headers = {}
        if error.retry_after is not None:
            headers["retry-after"] = f"{error.retry_after:g}"
        self._send_json(error.status, error.to_json(), headers)

    def do_GET(self) -> None:
        self._error(Error(404, "not_found_error", f"Unknown path {self.path}"))

    def do_POST(self) -> None:
        body = self._read_body()
        if self.path.split("?")[0].rstrip("/") != "/v1/messages":
            self._error(Error(404, "not_found_error", f"Unknown path {self.path}"))
            return
        if body is None:
            self._error(_invalid("The request body is not valid JSON."))
            return
        fake = self.fake
        reply = fake._record(body, {k.lower(): v for k, v in self.headers.items()})
        try:
            if isinstance(reply, Error):
                self._error(reply)
                return
            answer = fake._answer(body, reply)
            if body.get("stream"):
                _Stream(self, answer).serve(reply)
            else:
                self._serve_whole(answer, reply)
        except (_ClientGone, BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
        finally:
            fake._set_active(-1)

    def _serve_whole(self, answer: _Answer, reply: Reply) -> None:
        if isinstance(reply, Drop):
            self._abort()
            return
        if isinstance(reply, Hang):
            self._wait(reply.delay)
        if isinstance(reply, StreamError):
            self._error(Error(529, reply.type, reply.message))
            return
        content = [
            {k: v for k, v in block.items() if k != "partial_json"} for block in answer.content
        ]
        self._send_json(
            200,
            {
                **answer.message(),
                "content": content,
                "stop_reason": answer.stop_reason,
                "usage": answer.usage,
            },
        )


@dataclass
class _Answer:
    """The content blocks and usage of one reply, fixed before anything is written."""

    id: str
    model: str
    content: list[dict[str, Any]]  # final blocks; tool_use also keeps its "partial_json"
    stop_reason: str
    usage: dict[str, int]

    def message(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
        }


class _Stream:
    """Writes the SSE event sequence of one message, chunked-encoded."""

    def __init__(self, handler: _AnthropicHandler, answer: _Answer) -> None:
        self.handler = handler
        self.answer = answer

    def serve(self, reply: Reply) -> None:
        handler = self.handler
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        start_usage = {**self.answer.usage, "output_tokens": 1}
        self.event(
            "message_start",
            {"type": "message_start", "message": {**self.answer.message(), "usage": start_usage}},
        )
        self.event("ping", {"type": "ping"})
        if isinstance(reply, Drop):
            self.event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            for piece in _pieces(reply.text, reply.chunk_size)[: reply.after_chunks]:
                self.delta(0, {"type": "text_delta", "text": piece})
            handler._abort()
            return
        if isinstance(reply, Text | ToolUse):
            self.blocks(reply.chunk_size, reply.delay)
        else:  # Hang, StreamError: their text at once
            self.blocks(max(len(reply.text), 1))
            if isinstance(reply, StreamError):
                self.event(
                    "error",
                    {"type": "error", "error": {"type": reply.type, "message": reply.message}},
                )
                self.end()
                return
            handler._wait(reply.delay)
        self.event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": self.answer.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": self.answer.usage["output_tokens"]},
            },
        )
        self.event("message_stop", {"type": "message_stop"})
        self.end()

    def blocks(self, chunk_size: int, delay: float = 0.0) -> None:
        """Every content block: start, deltas of `chunk_size` characters, stop."""
        content = self.answer.content
        for index, block in enumerate(content):
            kind = block["type"]
            start = (
                {"type": "thinking", "thinking": ""}
                if kind == "thinking"
                else (
                    {"type": "text", "text": ""}
                    if kind == "text"
                    else {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                )
            )
            self.event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
            if kind == "thinking":
                for piece in _pieces(block["thinking"], chunk_size):
                    self.delta(index, {"type": "thinking_delta", "thinking": piece}, delay)
                self.delta(index, {"type": "signature_delta", "signature": block["signature"]})
            elif kind == "text":
                for piece in _pieces(block["text"], chunk_size):
                    self.delta(index, {"type": "text_delta", "text": piece}, delay)
            else:
                for part in block["partial_json"]:
                    self.delta(index, {"type": "input_json_delta", "partial_json": part}, delay)
            self.event("content_block_stop", {"type": "content_block_stop", "index": index})

    def delta(self, index: int, delta: dict[str, Any], delay: float = 0.0) -> None:
        if delay:
            self.handler._wait(delay)
        self.event(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )

    def event(self, name: str, payload: dict[str, Any]) -> None:
        data = f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()
        wfile = self.handler.wfile
        wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        wfile.flush()

    def end(self) -> None:
        self.handler.wfile.write(b"0\r\n\r\n")
        self.handler.wfile.flush()


# -- the server ------------------------------------------------------------------------


class FakeAnthropic(FakeOpenAI):
    """A scripted Anthropic Messages API on 127.0.0.1 (see the module docstring).

    Scripting, `requests`, `headers`, `wait_for_requests`, `pending`, `active`,
    `wait_idle` and `stop` behave as in FakeOpenAI.
    """

    def __init__(
        self,
        *,
        min_cacheable_tokens: int = MIN_CACHEABLE_TOKENS,
        cache_enabled: bool = True,
        context_window: int | None = None,
    ) -> None:
        super().__init__()
        self.responder: Callable[[dict[str, Any]], Reply] | None = None  # type: ignore[assignment]
        self.cache = PrefixCache(min_cacheable_tokens, enabled=cache_enabled)
        self.context_window = context_window  # None: any prompt length is accepted
        self.usages: list[dict[str, int]] = []  # one per answered (non-error) request
        self.signatures: dict[str, str] = {}  # signature -> the thinking text it signs
        self._thinking_tool_ids: set[str] = set()  # tool_use ids issued after thinking
        self._tool_ids: Iterator[int] = itertools.count(1)
        self._signature_ids: Iterator[int] = itertools.count(1)

    def start(self) -> FakeAnthropic:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _AnthropicHandler)
        server.fake = self
        self._server = server
        self.base_url = f"http://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-anthropic",
            daemon=True,
        )
        self._thread.start()
        return self

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def script(self, *replies: Reply) -> None:  # type: ignore[override]
        """Queue replies; each valid request takes the next one, then `responder` answers."""
        with self._cond:
            self._queue.extend(replies)  # type: ignore[arg-type]

    def clear_cache(self) -> None:
        with self._cond:
            self.cache.clear()

    # -- called by handler threads ------------------------------------------------------

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:  # type: ignore[override]
        """Record the request; an invalid one is answered 400 without using a reply."""
        with self._cond:
            self.requests.append(body)
            self.headers.append(headers)
            self._active += 1  # counted with the request, so wait_idle never races it
            problem = self._validate(body)
            reply = self._queue.popleft() if self._queue and problem is None else None
            self._cond.notify_all()
        if problem is not None:
            return problem
        if reply is not None:
            return reply  # type: ignore[return-value]
        return self.responder(body) if self.responder else Text("ok")

    def _validate(self, body: dict[str, Any]) -> Error | None:
        if "max_tokens" not in body:
            return _invalid("max_tokens: Field required")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _invalid("messages: Field required")
        for m, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
                return _invalid(f"messages.{m}: Input should be a user or assistant message")
        blocks = request_blocks(body)
        marked = sum(block.breakpoint for block in blocks)
        if marked > MAX_BREAKPOINTS:
            return _invalid(
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be "
                f"provided. Found {marked}."
            )
        problem = _check_tool_pairs(messages) or _check_images(messages)
        if problem is None and (body.get("thinking") or {}).get("type") == "enabled":
            problem = _check_thinking_budget(body) or self._check_thinking(messages)
        if problem is None and self.context_window is not None:
            total = sum(block.tokens for block in blocks)
            if total > self.context_window:
                problem = prompt_too_long(total, self.context_window)
        return problem

    def _check_thinking(self, messages: list[Any]) -> Error | None:
        """A tool-use turn this server answered with thinking must start with it, intact."""
        for m, message in enumerate(messages[:-1]):
            if message.get("role") != "assistant":
                continue
            if not self._thinking_tool_ids.intersection(_tool_use_ids(message)):
                continue
            first = content_list(message.get("content"))[0]
            kind = first.get("type") if isinstance(first, dict) else "text"
            if kind not in ("thinking", "redacted_thinking"):
                return _invalid(
                    f"messages.{m}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                    f"but found `{kind}`. When `thinking` is enabled, a final `assistant` "
                    "message must start with a thinking block (preceeding the lastmost set of "
                    "`tool_use` and `tool_result` blocks). We recommend you include thinking "
                    "blocks from previous turns. To avoid this requirement, disable `thinking`. "
                    f"Please consult our documentation at {THINKING_DOCS}"
                )
            if kind == "redacted_thinking":  # this server never issues any
                return _invalid(
                    f"messages.{m}.content.0: Invalid `data` in `redacted_thinking` block"
                )
            if "signature" not in first:
                return _invalid(f"messages.{m}.content.0.thinking.signature: Field required")
            if self.signatures.get(first["signature"]) != first.get("thinking"):
                return _invalid(f"messages.{m}.content.0: Invalid `signature` in `thinking` block")
        return None

    def _answer(self, body: dict[str, Any], reply: Reply) -> _Answer:
        """Bill the prompt against the cache and fix ids, signatures and content."""
        content: list[dict[str, Any]] = []
        stop_reason = "end_turn"
        output_tokens: int | None = None
        with self._cond:
            usage = self.cache.lookup_and_store(request_blocks(body))
            if isinstance(reply, Text | ToolUse) and reply.thinking is not None:
                signature = reply.signature or self._new_signature(reply.thinking)
                self.signatures[signature] = reply.thinking
                content.append(
                    {"type": "thinking", "thinking": reply.thinking, "signature": signature}
                )
            if isinstance(reply, Text):
                content.append({"type": "text", "text": reply.text})
                stop_reason, output_tokens = reply.stop_reason, reply.output_tokens
            elif isinstance(reply, ToolUse):
                if reply.text:
                    content.append({"type": "text", "text": reply.text})
                for call in reply.normalised_calls():
                    tool_id = call.id or f"toolu_fake{next(self._tool_ids)}"
                    if reply.thinking is not None:
                        self._thinking_tool_ids.add(tool_id)
                    content.append(
                        {
                            "type": "tool_use",
                            "id": tool_id,
                            "name": call.name,
                            "input": _tool_input(call.arguments_json),
                            "partial_json": _split(call.arguments_json, reply.argument_parts),
                        }
                    )
                stop_reason, output_tokens = "tool_use", reply.output_tokens
            else:
                content.append({"type": "text", "text": getattr(reply, "text", "")})
            if output_tokens is None:
                output_tokens = block_tokens(
                    "".join(
                        block.get("thinking") or block.get("text") or canonical(block.get("input"))
                        for block in content
                    )
                )
            usage["output_tokens"] = output_tokens
            self.usages.append(usage)
            answer_id = f"msg_fake{next(self._ids)}"
        return _Answer(
            answer_id, str(body.get("model", "claude-fake")), content, stop_reason, dict(usage)
        )

    def _new_signature(self, thinking: str) -> str:
        digest = hashlib.sha256(thinking.encode()).hexdigest()[:16]
        return f"sig_fake{next(self._signature_ids)}_{digest}_{time.monotonic_ns()}"


__all__ = [
    "CHARS_PER_TOKEN",
    "LOOKBACK",
    "MAX_BREAKPOINTS",
    "MIN_CACHEABLE_TOKENS",
    "Block",
    "Call",
    "Drop",
    "Error",
    "FakeAnthropic",
    "Hang",
    "PrefixCache",
    "Reply",
    "StreamError",
    "Text",
    "ToolUse",
    "canonical",
    "check_image",
    "image_pixels",
    "image_tokens",
    "overloaded",
    "prompt_too_long",
    "rate_limited",
    "request_blocks",
    "server_error",
    "usage_dict",
]
