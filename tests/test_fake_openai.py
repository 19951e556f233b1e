"""The fake OpenAI server speaks well enough for litellm's real code path."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import threading
import time
from types import ModuleType
from typing import Any

import pytest

from tests.fake_openai import (
    Call,
    Drop,
    Error,
    FakeOpenAI,
    Gated,
    Hang,
    Malformed,
    Text,
    ToolCalls,
    Usage,
    context_overflow,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def litellm() -> ModuleType:
    """litellm imported once for the module (the import costs seconds)."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm as module

    module.suppress_debug_info = True
    return module


@pytest.fixture
def server() -> Any:
    with FakeOpenAI() as fake:
        yield fake


def _kwargs(server: FakeOpenAI, **extra: Any) -> dict[str, Any]:
    return {
        "model": "openai/fake-model",
        "api_base": server.base_url,
        "api_key": "test",
        "messages": MESSAGES,
        "num_retries": 0,
        "max_retries": 0,
        **extra,
    }


async def _stream(litellm: ModuleType, server: FakeOpenAI, **extra: Any) -> list[Any]:
    response = await litellm.acompletion(
        **_kwargs(server, stream=True, stream_options={"include_usage": True}, **extra)
    )
    return [chunk async for chunk in response]


def _content(chunks: list[Any]) -> list[str]:
    return [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]


async def test_streamed_text_arrives_in_order_with_usage(
    litellm: ModuleType, server: FakeOpenAI
) -> None:
    server.script(
        Text(
            "The quick brown fox jumps.",
            chunk_size=3,
            reasoning="Think first.",
            usage=Usage(120, 30, cached_tokens=100, reasoning_tokens=5),
        )
    )
    chunks = await _stream(litellm, server)

    pieces = _content(chunks)
    assert len(pieces) > 5
    assert "".join(pieces) == "The quick brown fox jumps."
    reasoning = "".join(
        getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in chunks if c.choices
    )
    assert reasoning == "Think first."
    assert [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ] == ["stop"]
    usage = next(c.usage for c in chunks if getattr(c, "usage", None))
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (120, 30, 150)
    assert usage.prompt_tokens_details.cached_tokens == 100
    assert usage.completion_tokens_details.reasoning_tokens == 5


async def test_tool_call_arguments_split_across_deltas_are_assembled(
    litellm: ModuleType, server: FakeOpenAI
) -> None:
    arguments = json.dumps({"path": "src/agent_tui/session/loop.py"})
    server.script(
        ToolCalls(
            [Call("read", arguments, id="call_abc"), ("read", '{"path": "b"}')],
            text="Reading.",
            argument_parts=4,
        )
    )
    chunks = await _stream(litellm, server, tools=TOOLS)

    deltas = [call for c in chunks if c.choices for call in c.choices[0].delta.tool_calls or []]
    first = [d for d in deltas if d.index == 0]
    assert len(first) == 4  # the arguments really arrived in pieces
    assert first[0].id == "call_abc" and first[0].function.name == "read"
    assert "".join(d.function.arguments or "" for d in first) == arguments
    assert "".join(_content(chunks)) == "Reading."

    rebuilt = litellm.stream_chunk_builder(chunks, messages=MESSAGES)
    message = rebuilt.choices[0].message
    assert rebuilt.choices[0].finish_reason == "tool_calls"
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls] == [
        ("call_abc", "read", arguments),
        ("call_1", "read", '{"path": "b"}'),
    ]


async def test_server_records_request_bodies(litellm: ModuleType, server: FakeOpenAI) -> None:
    await _stream(litellm, server, tools=TOOLS)

    assert len(server.requests) == 1
    body = server.requests[0]
    assert body["model"] == "fake-model"
    assert body["messages"] == MESSAGES
    assert body["tools"] == TOOLS
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert server.headers[0]["authorization"] == "Bearer test"


async def test_default_and_custom_responder(litellm: ModuleType, server: FakeOpenAI) -> None:
    assert "".join(_content(await _stream(litellm, server))) == "ok"
    server.responder = lambda body: Text(f"{len(body['messages'])} messages")
    assert "".join(_content(await _stream(litellm, server))) == "2 messages"


async def test_non_streaming_request_gets_a_whole_completion(
    litellm: ModuleType, server: FakeOpenAI
) -> None:
    server.script(Text("A short title"))
    response = await litellm.acompletion(**_kwargs(server))

    assert response.choices[0].message.content == "A short title"
    assert response.usage.completion_tokens > 0
    assert server.requests[0].get("stream") in (None, False)


@pytest.mark.parametrize(
    ("reply", "error_name"),
    [
        (Error(429, "Rate limit reached", retry_after=7), "RateLimitError"),
        (Error(401, "Bad key", code="invalid_api_key"), "AuthenticationError"),
        (context_overflow(), "ContextWindowExceededError"),
        (Error(500, "Upstream exploded"), "InternalServerError"),
    ],
)
async def test_errors_map_to_litellm_exceptions(
    litellm: ModuleType, server: FakeOpenAI, reply: Error, error_name: str
) -> None:
    server.script(reply)
    with pytest.raises(getattr(litellm, error_name)) as caught:
        await _stream(litellm, server)

    assert reply.message in str(caught.value)
    assert len(server.requests) == 1  # num_retries=0 / max_retries=0: no hidden retries
    if reply.retry_after is not None:
        # litellm rebuilds exc.response without headers; the real ones are kept here.
        assert caught.value.litellm_response_headers["retry-after"] == "7"


async def test_drop_breaks_the_stream(litellm: ModuleType, server: FakeOpenAI) -> None:
    server.script(Drop(after_chunks=2, text="one two three four five"))
    received: list[str] = []
    # litellm 1.106 wraps the broken chunked body (an APIConnectionError inside) in a
    # MidStreamFallbackError, which is a ServiceUnavailableError.
    broken = r"not completed|incomplete|peer closed"  # aiohttp's or httpx's wording
    with pytest.raises(litellm.ServiceUnavailableError, match=broken):
        response = await litellm.acompletion(**_kwargs(server, stream=True))
        async for chunk in response:
            received += _content([chunk])
    assert "".join(received) == "one two "


async def test_malformed_sse_raises(litellm: ModuleType, server: FakeOpenAI) -> None:
    server.script(Malformed("partial"))
    with pytest.raises(Exception, match="Expecting"):
        await _stream(litellm, server)


async def test_client_abort_ends_a_hanging_stream(litellm: ModuleType, server: FakeOpenAI) -> None:
    server.script(Hang("first words", delay=30))
    first_text = asyncio.Event()
    received: list[str] = []

    async def consume() -> None:
        response = await litellm.acompletion(**_kwargs(server, stream=True))
        async for chunk in response:
            received.extend(_content([chunk]))
            if received:
                first_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_text.wait(), 10)
    assert received == ["first words"]
    assert server.active == 1  # the server is stalled mid-stream

    started = time.monotonic()
    task.cancel()  # how the session loop aborts a step
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.to_thread(server.wait_idle, 5)  # the server noticed the disconnect
    assert time.monotonic() - started < 5


async def test_gated_reply_is_held_until_the_gate_opens(
    litellm: ModuleType, server: FakeOpenAI
) -> None:
    gate = threading.Event()
    server.script(Gated(Text(" and the rest"), gate, text="first words"))
    first_text = asyncio.Event()
    received: list[str] = []

    async def consume() -> None:
        response = await litellm.acompletion(**_kwargs(server, stream=True))
        async for chunk in response:
            received.extend(_content([chunk]))
            if "".join(received):
                first_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_text.wait(), 10)
    assert "".join(received) == "first words"
    assert server.active == 1  # held mid-stream until the test says so
    gate.set()
    await asyncio.wait_for(task, 10)
    assert "".join(received) == "first words and the rest"


async def test_slow_text_streams_with_delays(litellm: ModuleType, server: FakeOpenAI) -> None:
    server.script(Text("abcdefgh", chunk_size=2, delay=0.05))
    started = time.monotonic()
    chunks = await _stream(litellm, server)
    assert "".join(_content(chunks)) == "abcdefgh"
    assert time.monotonic() - started >= 0.2


def test_keep_alive_serves_several_requests_on_one_connection(server: FakeOpenAI) -> None:
    server.script(Text("one"), Text("two"))
    port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    bodies = []
    for _ in range(2):
        payload = json.dumps({"model": "m", "messages": [], "stream": True})
        conn.request("POST", "/v1/chat/completions", payload, {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.getheader("Content-Type") == "text/event-stream"
        bodies.append(response.read().decode())
    conn.close()
    assert all(body.rstrip().endswith("data: [DONE]") for body in bodies)
    assert '"content": "one"' in bodies[0] and '"content": "two"' in bodies[1]


def test_wait_for_requests(server: FakeOpenAI) -> None:
    port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])

    def post() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("POST", "/v1/chat/completions", json.dumps({"messages": []}))
        conn.getresponse().read()
        conn.close()

    thread = threading.Thread(target=post)
    thread.start()
    server.wait_for_requests(1, timeout=5)
    thread.join()
    with pytest.raises(TimeoutError):
        server.wait_for_requests(2, timeout=0.05)
