"""The provider in this process: litellm's streams and lookups, normalised into
provider events (provider/api.py chooses it when no provider process runs; the
provider process itself serves with it)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from agent_tui.errors import ProviderError
from agent_tui.provider.loader import load_litellm
from agent_tui.provider.provider_errors import Received, map_exception, stream_cut_error
from agent_tui.provider.shapes import shape_messages
from agent_tui.provider.stream_events import (
    ModelRequest,
    ProviderEvent,
    ReasoningDelta,
    ReasoningSigned,
    StepFinish,
    TextDelta,
    ToolCallReady,
    ToolCallStart,
    ToolInputDelta,
)
from agent_tui.usage import CacheTokens, Tokens

STREAM_SLICE = 0.002
"""Seconds a stream keeps the event loop before the loop's other tasks get a turn. A
reply that arrives faster than it is processed is all buffered: reading it never waits,
so without this the loop would run nothing else (no key, no frame) until it ended."""


STREAM_PAUSE = 0.001
"""Seconds the stream then sleeps: a sleep, not a bare `sleep(0)`, so that chains of
callbacks (a key goes through four message queues before it is drawn) finish within one
pause instead of one step per slice. A stream that never waits runs slower, but in the
app still faster than any provider streams (bench_tui: docs/performance.md)."""


def normalise_usage(usage: Any) -> Tokens:
    """litellm Usage -> {input, output, reasoning, cache: {read, write}}, input uncached only."""

    def field(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    def get(obj: Any, name: str) -> int:
        return int(field(obj, name) or 0)

    prompt = get(usage, "prompt_tokens")
    completion = get(usage, "completion_tokens")
    prompt_details = field(usage, "prompt_tokens_details")
    completion_details = field(usage, "completion_tokens_details")
    cache_read = get(usage, "cache_read_input_tokens") or get(prompt_details, "cached_tokens")
    cache_write = get(usage, "cache_creation_input_tokens")
    reasoning = get(completion_details, "reasoning_tokens")
    return Tokens(
        input=max(prompt - cache_read - cache_write, 0),
        output=max(completion - reasoning, 0),
        reasoning=reasoning,
        cache=CacheTokens(read=cache_read, write=cache_write),
    )


def _signed(block: Any) -> ReasoningSigned | None:
    """A signature or redacted block from litellm's `thinking_blocks` delta; the
    thinking text itself arrives as `reasoning_content`."""
    get = block.get if isinstance(block, dict) else lambda key: getattr(block, key, None)
    if get("type") == "redacted_thinking" and get("data"):
        return ReasoningSigned(redacted=get("data"))
    signature = get("signature")
    return ReasoningSigned(signature=signature) if signature else None


class _ToolCallBuffer:
    def __init__(self, call_id: str, name: str) -> None:
        self.call_id = call_id
        self.name = name
        self.arguments: list[str] = []


class InProcess:
    """litellm imported in this process (on a thread: `load_litellm`), called here."""

    async def model_info(self, model: str) -> dict[str, Any] | None:
        return info_of(await load_litellm(), model)

    async def validate_environment(self, model: str) -> dict[str, Any]:
        lib = await load_litellm()
        return dict(lib.validate_environment(model) or {})

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        return litellm_stream(request)


def info_of(lib: Any, model: str) -> dict[str, Any] | None:
    """litellm's `get_model_info` (a lookup once imported); None for unmapped models."""
    try:
        return dict(lib.get_model_info(model))
    except Exception:  # litellm raises several types for unmapped models
        return None


async def litellm_stream(request: ModelRequest) -> AsyncIterator[ProviderEvent]:
    """Stream one completion. Raises ProviderError (mapped) on failures."""
    lib = await load_litellm()
    kwargs: dict[str, Any] = {
        "model": request.model,
        "messages": shape_messages(request.model, request.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
        "num_retries": 0,
        "max_retries": 0,
        # Our tools are plain functions, never litellm's MCP gateway: skipping its check
        # spares the first request importing the mcp SDK.
        "_skip_mcp_handler": True,
    }
    if request.tools:
        kwargs["tools"] = request.tools
    optional = {"api_base", "api_key", "max_tokens", "temperature"}
    kwargs.update(request.model_dump(include=optional, exclude_none=True))
    kwargs.update(request.options)
    received = Received()
    response: Any = None
    try:
        response = await lib.acompletion(**kwargs)
        async for event in _events(response, received):
            yield event
    except ProviderError:
        raise
    except Exception as exc:  # every litellm/httpx failure becomes a mapped ProviderError
        raise map_exception(exc, model=request.model, received=received) from exc
    finally:
        # An abort (Esc) cancels the reading, often in _events' pause rather than in
        # the socket's read: close the connection now, or the server goes on
        # generating (a local model burning its GPU) until the response is collected.
        if response is not None and hasattr(response, "aclose"):
            with contextlib.suppress(Exception):
                await response.aclose()
    if not received.finished:
        raise stream_cut_error(request.model, request.api_base, received)


def _provider_finished(response: Any, seen: str | None) -> bool:
    """Whether the server itself ended the answer with a finish reason. litellm's stream
    wrapper makes one up ("stop") when the server sent none, so its own record of what
    arrived decides; a plain iterator (not litellm's wrapper) is judged by what was seen."""
    if hasattr(response, "received_finish_reason"):
        return bool(
            response.received_finish_reason or getattr(response, "intermittent_finish_reason", None)
        )
    return seen is not None


async def _events(response: Any, received: Received) -> AsyncIterator[ProviderEvent]:
    calls: dict[int, _ToolCallBuffer] = {}
    finish_reason: str | None = None
    usage: Tokens | None = None
    turn = time.perf_counter()
    async for chunk in response:
        received.chunks += 1
        if time.perf_counter() - turn > STREAM_SLICE:
            await asyncio.sleep(STREAM_PAUSE)  # the app's keys and frames, other streams
            turn = time.perf_counter()
        if chunk_usage := getattr(chunk, "usage", None):
            usage = normalise_usage(chunk_usage)
            received.usage = True
        for choice in chunk.choices or []:
            delta = choice.delta
            if reasoning := getattr(delta, "reasoning_content", None):
                received.reasoning += len(reasoning)
                yield ReasoningDelta(text=reasoning)
            for block in getattr(delta, "thinking_blocks", None) or []:
                if (signed := _signed(block)) is not None:
                    yield signed
            if delta.content:
                received.text += len(delta.content)
                yield TextDelta(text=delta.content)
            for call in getattr(delta, "tool_calls", None) or []:
                index = call.index if call.index is not None else len(calls)
                buffer = calls.get(index)
                fn = call.function
                if buffer is None:
                    buffer = _ToolCallBuffer(call.id or f"call_{index}", (fn and fn.name) or "")
                    calls[index] = buffer
                    received.tools.append(buffer.name)
                    yield ToolCallStart(call_id=buffer.call_id, name=buffer.name)
                if fn and fn.arguments:
                    buffer.arguments.append(fn.arguments)
                    yield ToolInputDelta(call_id=buffer.call_id, delta=fn.arguments)
            if choice.finish_reason:
                finish_reason = choice.finish_reason
    if not _provider_finished(response, finish_reason):
        return  # stream_model raises: the answer is incomplete, its calls are never run
    received.finished = True
    for buffer in calls.values():
        yield ToolCallReady(
            call_id=buffer.call_id, name=buffer.name, arguments="".join(buffer.arguments)
        )
    reason = finish_reason or ("tool_calls" if calls else "stop")
    if calls and reason == "stop":
        reason = "tool_calls"  # some providers say stop while calling tools
    yield StepFinish(reason=reason, usage=usage or Tokens(), has_usage=usage is not None)
