"""The fake Anthropic server: litellm's real `anthropic/` HTTP path, and the prefix cache."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from agent_tui.provider.loader import litellm as load_litellm
from tests.fake_anthropic import (
    LOOKBACK,
    Block,
    Call,
    Drop,
    Error,
    FakeAnthropic,
    Hang,
    PrefixCache,
    StreamError,
    Text,
    ToolUse,
    overloaded,
    prompt_too_long,
    rate_limited,
    request_blocks,
    server_error,
)

MODEL = "anthropic/claude-sonnet-4-5"
EPHEMERAL = {"type": "ephemeral"}
THINKING = {"type": "enabled", "budget_tokens": 1024}
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


@pytest.fixture(scope="module")
def lib() -> ModuleType:
    return load_litellm()


@pytest.fixture
def server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(min_cacheable_tokens=1) as fake:
        yield fake


def _kwargs(server: FakeAnthropic, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "api_base": server.base_url,
        "api_key": "test",
        "messages": messages,
        "num_retries": 0,
        "max_retries": 0,
        **extra,
    }


async def _stream(
    lib: ModuleType, server: FakeAnthropic, messages: list[dict[str, Any]], **extra: Any
) -> list[Any]:
    response = await lib.acompletion(
        **_kwargs(server, messages, stream=True, stream_options={"include_usage": True}, **extra)
    )
    return [chunk async for chunk in response]


def _deltas(chunks: list[Any]) -> list[Any]:
    return [chunk.choices[0].delta for chunk in chunks if chunk.choices]


def _final_usage(chunks: list[Any]) -> Any:
    return [chunk.usage for chunk in chunks if getattr(chunk, "usage", None)][-1]


def _user(text: str, mark: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if mark:
        block["cache_control"] = EPHEMERAL
    return {"role": "user", "content": [block]}


def _assistant(text: str, mark: bool = False) -> dict[str, Any]:
    return {"role": "assistant", "content": _user(text, mark)["content"]}


def _system(text: str, mark: bool = True) -> dict[str, Any]:
    return {"role": "system", "content": _user(text, mark)["content"]}


def _raw(
    server: FakeAnthropic, body: dict[str, Any], path: str = "/v1/messages"
) -> tuple[int, dict[str, str], bytes]:
    host, port = server.base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


# -- wire format -------------------------------------------------------------------------


async def test_litellm_posts_to_v1_messages_under_the_bare_base_url(
    lib: ModuleType, server: FakeAnthropic
) -> None:
    server.script(Text("hi"))
    await _stream(lib, server, [_user("hello")])

    assert server.base_url.count("/") == 2  # http://127.0.0.1:PORT, no /v1
    assert server.headers[0]["x-api-key"] == "test"
    assert server.headers[0]["anthropic-version"] == "2023-06-01"
    assert server.requests[0]["max_tokens"] > 0  # litellm always sends it
    status, _, body = _raw(
        server, {"model": "m", "max_tokens": 10, "messages": []}, path="/v1/v1/messages"
    )
    assert status == 404
    assert json.loads(body)["error"]["type"] == "not_found_error"


def test_stream_is_the_real_event_sequence(server: FakeAnthropic) -> None:
    server.script(
        ToolUse(
            [Call("read", '{"path": "a.py"}', id="toolu_1")],
            text="Reading.",
            thinking="Plan.",
            signature="sig-1",
            argument_parts=2,
            chunk_size=5,
        )
    )
    status, headers, raw = _raw(
        server, {"model": "claude-x", "max_tokens": 100, "stream": True, "messages": [_user("go")]}
    )
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    events = [
        (
            part.split("\n")[0].removeprefix("event: "),
            json.loads(part.split("\n")[1].removeprefix("data: ")),
        )
        for part in raw.decode().strip().split("\n\n")
    ]
    names = [name for name, _ in events]
    assert all(name == payload["type"] for name, payload in events)
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",  # thinking
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",  # "Reading."
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",  # tool_use
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    message = events[0][1]["message"]
    assert message["content"] == [] and message["stop_reason"] is None
    assert message["model"] == "claude-x" and message["role"] == "assistant"
    assert set(message["usage"]) == {
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens",
    }
    assert message["usage"]["output_tokens"] == 1
    assert events[2][1]["content_block"] == {"type": "thinking", "thinking": ""}
    assert events[4][1]["delta"] == {"type": "signature_delta", "signature": "sig-1"}
    assert events[10][1]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "read",
        "input": {},
    }
    parts = [payload["delta"]["partial_json"] for _, payload in events[11:13]]
    assert "".join(parts) == '{"path": "a.py"}'
    assert events[14][1]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert events[14][1]["usage"] == {"output_tokens": server.usages[0]["output_tokens"]}


def test_missing_max_tokens_is_400_and_keeps_the_scripted_reply(server: FakeAnthropic) -> None:
    server.script(Text("kept"))
    status, _, body = _raw(server, {"model": "m", "messages": [_user("hi")]})
    assert status == 400
    assert json.loads(body) == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"},
    }
    assert server.pending == 1 and len(server.requests) == 1
    status, _, body = _raw(server, {"model": "m", "max_tokens": 5, "messages": [_user("hi")]})
    assert status == 200
    assert json.loads(body)["content"] == [{"type": "text", "text": "kept"}]


# -- through litellm -------------------------------------------------------------------


async def test_streamed_text_arrives_in_order(lib: ModuleType, server: FakeAnthropic) -> None:
    server.script(Text("The quick brown fox.", chunk_size=3, output_tokens=42))
    chunks = await _stream(lib, server, [_user("hi")])

    pieces = [delta.content for delta in _deltas(chunks) if delta.content]
    assert len(pieces) == 7
    assert "".join(pieces) == "The quick brown fox."
    assert [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ] == ["stop"]
    assert _final_usage(chunks).completion_tokens == 42


async def test_tool_use_arguments_split_over_deltas_arrive_as_tool_calls(
    lib: ModuleType, server: FakeAnthropic
) -> None:
    server.script(
        ToolUse(
            [("read", '{"path": "src/main.py"}'), Call("bash", '{"cmd": "ls"}')],
            text="Let me look.",
            argument_parts=3,
        )
    )
    chunks = await _stream(lib, server, [_user("look")], tools=TOOLS)

    calls = [call for delta in _deltas(chunks) for call in (delta.tool_calls or [])]
    assert [(c.index, c.id, c.function.name) for c in calls if c.id] == [
        (0, "toolu_fake1", "read"),
        (1, "toolu_fake2", "bash"),
    ]
    arguments = {0: "", 1: ""}
    for call in calls:
        arguments[call.index] += call.function.arguments or ""
    assert arguments == {0: '{"path": "src/main.py"}', 1: '{"cmd": "ls"}'}
    assert sum(1 for c in calls if c.index == 0 and c.function.arguments) == 3
    assert "".join(d.content for d in _deltas(chunks) if d.content) == "Let me look."
    assert "tool_calls" in [c.choices[0].finish_reason for c in chunks if c.choices]


async def test_thinking_arrives_as_reasoning_content_and_a_signature_delta(
    lib: ModuleType, server: FakeAnthropic
) -> None:
    server.script(Text("Answer.", thinking="Think hard.", chunk_size=4))
    chunks = await _stream(lib, server, [_user("q")], thinking=THINKING)

    deltas = _deltas(chunks)
    # Deltas without thinking have no reasoning_content / thinking_blocks attribute at all.
    (text,) = [d for d in deltas if d.content == "er."]
    assert not hasattr(text, "reasoning_content") and not hasattr(text, "thinking_blocks")
    thinking = [d for d in deltas if getattr(d, "reasoning_content", None)]
    assert "".join(d.reasoning_content for d in thinking) == "Think hard."
    # Each thinking_delta carries its piece as a thinking block without a signature.
    assert thinking[0].thinking_blocks == [{"type": "thinking", "thinking": "Thin"}]
    assert thinking[0].provider_specific_fields == {"thinking_blocks": thinking[0].thinking_blocks}
    # The signature_delta: a block with empty thinking, and reasoning_content "".
    signed = [
        d
        for d in deltas
        if getattr(d, "thinking_blocks", None) and d.thinking_blocks[0].get("signature")
    ]
    assert len(signed) == 1
    (signature,) = server.signatures
    assert signed[0].thinking_blocks == [
        {"type": "thinking", "thinking": "", "signature": signature}
    ]
    assert signed[0].reasoning_content == ""
    assert server.signatures[signature] == "Think hard."
    # stream_chunk_builder joins them into one signed block.
    message = lib.stream_chunk_builder(chunks).choices[0].message
    assert message.thinking_blocks == [
        {"type": "thinking", "thinking": "Think hard.", "signature": signature}
    ]
    assert message.reasoning_content == "Think hard."
    assert _final_usage(chunks).completion_tokens_details.reasoning_tokens > 0


async def test_streamed_usage_maps_cache_reads_and_writes(
    lib: ModuleType, server: FakeAnthropic
) -> None:
    messages = [_system("You are terse. " * 50), _user("hi", mark=True)]
    await _stream(lib, server, messages)
    chunks = await _stream(lib, server, [*messages[:1], _user("hi"), _user("more", mark=True)])

    first, second = server.usages
    assert first["cache_read_input_tokens"] == 0 and first["cache_creation_input_tokens"] > 0
    assert second["cache_read_input_tokens"] > 0
    usage = _final_usage(chunks)
    assert usage.prompt_tokens == (
        second["input_tokens"]
        + second["cache_read_input_tokens"]
        + second["cache_creation_input_tokens"]
    )
    assert usage.cache_read_input_tokens == second["cache_read_input_tokens"]
    assert usage.cache_creation_input_tokens == second["cache_creation_input_tokens"]
    assert usage.prompt_tokens_details.cached_tokens == second["cache_read_input_tokens"]
    assert (
        usage.prompt_tokens_details.cache_creation_tokens == second["cache_creation_input_tokens"]
    )
    assert usage.prompt_tokens_details.text_tokens == second["input_tokens"]
    assert usage.completion_tokens == second["output_tokens"]


async def test_non_streaming_reply_has_the_same_usage(
    lib: ModuleType, server: FakeAnthropic
) -> None:
    server.script(ToolUse([("read", '{"path": "a"}')], thinking="Hm."), Text("done"))
    messages = [_system("Rules. " * 40), _user("go")]
    response = await lib.acompletion(**_kwargs(server, messages, tools=TOOLS, thinking=THINKING))
    message = response.choices[0].message
    assert message.tool_calls[0].function.arguments == '{"path": "a"}'
    assert message.thinking_blocks[0]["thinking"] == "Hm."
    assert message.thinking_blocks[0]["signature"] in server.signatures
    assert response.usage.prompt_tokens == sum(
        server.usages[0][key]
        for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    assert (
        response.usage.cache_creation_input_tokens
        == server.usages[0]["cache_creation_input_tokens"]
        > 0
    )


async def test_cache_control_placements_litellm_sends_are_breakpoints(
    lib: ModuleType, server: FakeAnthropic
) -> None:
    server.script(ToolUse([Call("read", '{"path": "a"}', id="toolu_a")]), Text("ok"))
    tools = [{**TOOLS[0], "cache_control": EPHEMERAL}]
    history = [_system("sys"), _user("read a")]
    await _stream(lib, server, history, tools=tools)
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "toolu_a",
                "type": "function",
                "cache_control": EPHEMERAL,
                "function": {"name": "read", "arguments": '{"path": "a"}'},
            }
        ],
    }
    tool = {"role": "tool", "tool_call_id": "toolu_a", "content": "x", "cache_control": EPHEMERAL}
    await _stream(lib, server, [*history, assistant, tool], tools=tools)

    body = server.requests[1]
    assert [b.where for b in request_blocks(body) if b.breakpoint] == [
        "tools.0",
        "system.0",
        "messages.1.content.0",
        "messages.2.content.0",
    ]
    assert body["messages"][1]["content"][0]["type"] == "tool_use"
    assert body["messages"][2]["content"][0]["type"] == "tool_result"
    # The second request reads what the first wrote at the system breakpoint.
    assert (
        server.usages[1]["cache_read_input_tokens"]
        == server.usages[0]["cache_creation_input_tokens"]
    )


async def test_marking_the_last_two_messages_reads_the_previous_prefix(
    lib: ModuleType, server: FakeAnthropic
) -> None:
    system = _system("Long instructions. " * 60)
    history = [_user("q0"), _assistant("a1")]
    await _stream(lib, server, [system, *history, _assistant("a1", mark=True), _user("q2", True)])
    await _stream(
        lib,
        server,
        [
            system,
            *history,
            _assistant("a1"),
            _user("q2"),
            _assistant("a3", mark=True),
            _user("q4", mark=True),
        ],
    )

    written = server.usages[0]["cache_creation_input_tokens"]
    assert server.usages[1]["cache_read_input_tokens"] == written > 0
    assert server.usages[1]["cache_creation_input_tokens"] > 0
    assert server.usages[1]["input_tokens"] == 0


async def test_five_breakpoints_raise_bad_request(lib: ModuleType, server: FakeAnthropic) -> None:
    def marked(d: bool) -> list[dict[str, Any]]:
        return [
            _system("s"),
            _user("a", True),
            _assistant("b"),
            _user("c", True),
            _assistant("d", mark=d),
            _user("e", True),
        ]

    await _stream(lib, server, marked(False))  # four: fine
    with pytest.raises(lib.BadRequestError) as caught:
        await _stream(lib, server, marked(True))
    assert type(caught.value) is lib.BadRequestError
    assert "A maximum of 4 blocks with cache_control may be provided. Found 5." in str(caught.value)
    assert len(server.usages) == 1


async def test_429_with_retry_after_is_a_rate_limit_error(
    lib: ModuleType, server: FakeAnthropic
) -> None:
    server.script(rate_limited(retry_after=7))
    with pytest.raises(lib.RateLimitError) as caught:
        await _stream(lib, server, [_user("hi")])
    assert caught.value.status_code == 429
    # The rebuilt `response` has no headers; litellm keeps the real ones aside.
    assert caught.value.litellm_response_headers["retry-after"] == "7"


@pytest.mark.parametrize("stream", [True, False])
async def test_529_overloaded_and_500_are_internal_server_errors(
    lib: ModuleType, server: FakeAnthropic, stream: bool
) -> None:
    for error in (overloaded(), server_error()):
        server.script(error)
        with pytest.raises(lib.InternalServerError) as caught:
            await lib.acompletion(**_kwargs(server, [_user("hi")], stream=stream))
        assert type(caught.value) is lib.InternalServerError
        assert caught.value.status_code == 500  # 529 too
        assert error.type in str(caught.value)


async def test_error_event_mid_stream_is_a_mid_stream_fallback_error(
    lib: ModuleType, server: FakeAnthropic
) -> None:
    server.script(StreamError("partial answer"))
    with pytest.raises(lib.exceptions.MidStreamFallbackError) as caught:
        await _stream(lib, server, [_user("hi")])
    assert isinstance(caught.value, lib.ServiceUnavailableError)
    assert "Overloaded" in str(caught.value)


async def test_prompt_too_long_is_a_context_window_error(lib: ModuleType) -> None:
    with FakeAnthropic(context_window=50) as server:
        server.script(prompt_too_long())
        with pytest.raises(lib.ContextWindowExceededError) as caught:
            await _stream(lib, server, [_user("hi")])
        assert "prompt is too long: 210000 tokens > 200000 maximum" in str(caught.value)
        assert isinstance(caught.value, lib.BadRequestError)
        # With a context window set, a long prompt gets the real numbers.
        with pytest.raises(lib.ContextWindowExceededError, match=r"tokens > 50 maximum"):
            await _stream(lib, server, [_user("x" * 400)])


async def test_thinking_tool_turn_round_trips_with_thinking_blocks(
    lib: ModuleType, server: FakeAnthropic
) -> None:
    server.script(
        ToolUse([("read", '{"path": "a.py"}')], thinking="Read a.py first."),
        Text("It prints 1.", thinking="Easy."),
    )
    history = [_user("what does a.py do?")]
    chunks = await _stream(lib, server, history, tools=TOOLS, thinking=THINKING)
    message = lib.stream_chunk_builder(chunks).choices[0].message
    call = message.tool_calls[0]
    assistant = {
        "role": "assistant",
        "content": None,
        "thinking_blocks": message.thinking_blocks,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
        ],
    }
    tool = {"role": "tool", "tool_call_id": call.id, "content": "print(1)"}

    chunks = await _stream(lib, server, [*history, assistant, tool], tools=TOOLS, thinking=THINKING)
    assert "".join(d.content for d in _deltas(chunks) if d.content) == "It prints 1."
    sent = server.requests[1]["messages"][1]["content"]
    assert [block["type"] for block in sent] == ["thinking", "tool_use"]
    assert sent[0]["thinking"] == "Read a.py first."

    # Without the thinking block, or with its text altered, the API refuses the turn.
    bare = {key: value for key, value in assistant.items() if key != "thinking_blocks"}
    with pytest.raises(
        lib.BadRequestError,
        match="Expected `thinking` or `redacted_thinking`, but found `tool_use`",
    ):
        await _stream(lib, server, [*history, bare, tool], tools=TOOLS, thinking=THINKING)
    forged = {
        **assistant,
        "thinking_blocks": [{**message.thinking_blocks[0], "thinking": "Something else."}],
    }
    with pytest.raises(lib.BadRequestError, match="Invalid `signature` in `thinking` block"):
        await _stream(lib, server, [*history, forged, tool], tools=TOOLS, thinking=THINKING)
    # Turns produced without thinking, or requests without thinking, are not checked.
    await _stream(lib, server, [*history, bare, tool], tools=TOOLS)


async def test_tool_use_without_its_result_is_refused(
    lib: ModuleType, server: FakeAnthropic
) -> None:
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "toolu_x", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        ],
    }
    with pytest.raises(lib.BadRequestError, match="without `tool_result` blocks"):
        await _stream(lib, server, [_user("a"), assistant, _user("b")], tools=TOOLS)


def test_drop_and_hang_end_cleanly(server: FakeAnthropic) -> None:
    server.script(Drop(after_chunks=2, text="abcdefghijkl"))
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        _raw(server, {"model": "m", "max_tokens": 5, "stream": True, "messages": [_user("x")]})
    server.script(Hang("wait", delay=0.05))
    status, _, raw = _raw(
        server, {"model": "m", "max_tokens": 5, "stream": True, "messages": [_user("x")]}
    )
    assert status == 200 and b'"text": "wait"' in raw and b"message_stop" in raw
    server.wait_idle()


async def test_cache_can_be_disabled_or_cleared(lib: ModuleType) -> None:
    messages = [_system("Policy. " * 50), _user("hi")]
    with FakeAnthropic(min_cacheable_tokens=1, cache_enabled=False) as server:
        await _stream(lib, server, messages)
        await _stream(lib, server, messages)
        assert all(
            u["cache_read_input_tokens"] == u["cache_creation_input_tokens"] == 0
            for u in server.usages
        )
    with FakeAnthropic(min_cacheable_tokens=1) as server:
        await _stream(lib, server, messages)
        server.clear_cache()
        await _stream(lib, server, messages)
        assert server.usages[1] == server.usages[0]


# -- PrefixCache ------------------------------------------------------------------------


def _body(
    *messages: dict[str, Any],
    system: Any = "You are a coding agent.",
    tools: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "model": "claude-x",
        "max_tokens": 100,
        "system": system,
        "tools": tools or [],
        "messages": list(messages),
    }


def _msg(role: str, *texts: str, mark: bool = False) -> dict[str, Any]:
    """A message of text blocks; `mark` puts cache_control on the last one."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text} for text in texts]
    if mark:
        blocks[-1]["cache_control"] = EPHEMERAL
    return {"role": role, "content": blocks}


def _tokens(blocks: list[Block], end: int) -> int:
    """Tokens of blocks[0..end] inclusive."""
    return sum(block.tokens for block in blocks[: end + 1])


def _conversation(n: int, mark_last: int = 2) -> list[dict[str, Any]]:
    messages = [_msg("user" if i % 2 == 0 else "assistant", f"message {i} " * 10) for i in range(n)]
    for i in range(n - mark_last, n):
        messages[i] = _msg(messages[i]["role"], messages[i]["content"][0]["text"], mark=True)
    return messages


def test_identical_request_reads_the_whole_marked_prefix() -> None:
    cache = PrefixCache(min_cacheable_tokens=1)
    body = _body(*_conversation(5), _msg("assistant", "unmarked tail"))
    blocks = request_blocks(body)
    total, last = _tokens(blocks, len(blocks) - 1), len(blocks) - 2

    first = cache.lookup_and_store(blocks)
    assert first == {
        "input_tokens": total - _tokens(blocks, last),
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": _tokens(blocks, last),
        "output_tokens": 1,
    }
    second = cache.lookup_and_store(request_blocks(body))
    assert second["cache_read_input_tokens"] == _tokens(blocks, last)
    assert second["cache_creation_input_tokens"] == 0
    assert second["input_tokens"] == total - _tokens(blocks, last)


def test_moving_last_two_breakpoints_forward_reads_through_the_lookback() -> None:
    cache = PrefixCache(min_cacheable_tokens=1)
    before = request_blocks(_body(*_conversation(6)))
    cache.lookup_and_store(before)
    after = request_blocks(_body(*_conversation(8)))
    # The earlier request's last breakpoint is no breakpoint now: only the lookback finds it.
    assert not any(block.breakpoint and block.key == before[-1].key for block in after)

    usage = cache.lookup_and_store(after)
    assert usage["cache_read_input_tokens"] == _tokens(before, len(before) - 1)
    assert usage["cache_creation_input_tokens"] == _tokens(after, len(after) - 1) - _tokens(
        before, len(before) - 1
    )
    assert usage["input_tokens"] == 0


def test_a_changed_early_block_reads_nothing_after_it() -> None:
    cache = PrefixCache(min_cacheable_tokens=1)
    tools = [{"name": "read", "input_schema": {"type": "object"}, "cache_control": EPHEMERAL}]
    system = [{"type": "text", "text": "Rules v1", "cache_control": EPHEMERAL}]
    cache.lookup_and_store(request_blocks(_body(*_conversation(4), system=system, tools=tools)))
    changed = [{"type": "text", "text": "Rules v2", "cache_control": EPHEMERAL}]
    blocks = request_blocks(_body(*_conversation(4), system=changed, tools=tools))

    usage = cache.lookup_and_store(blocks)
    assert usage["cache_read_input_tokens"] == blocks[0].tokens  # the tool definition only
    assert (
        usage["cache_creation_input_tokens"] == _tokens(blocks, len(blocks) - 1) - blocks[0].tokens
    )


def test_block_identity_includes_its_message() -> None:
    together = request_blocks(_body(_msg("user", "a", "b", mark=True)))
    apart = request_blocks(_body(_msg("user", "a"), _msg("user", "b", mark=True)))
    other_role = request_blocks(_body(_msg("assistant", "a", "b", mark=True)))
    assert [b.tokens for b in together] == [b.tokens for b in apart]
    assert together[-1].key != apart[-1].key != other_role[-1].key
    # cache_control is not part of a block's identity; a plain string is one text block.
    assert request_blocks(_body(_msg("user", "a", "b")))[-1].key == together[-1].key
    plain = request_blocks(_body({"role": "user", "content": "a"}))
    assert plain[-1].key == request_blocks(_body(_msg("user", "a")))[-1].key


def test_a_prefix_below_the_minimum_is_not_cached() -> None:
    blocks = request_blocks(_body(*_conversation(4)))
    total = _tokens(blocks, len(blocks) - 1)
    cache = PrefixCache(min_cacheable_tokens=total + 1)
    assert cache.lookup_and_store(blocks) == {
        "input_tokens": total,
        "output_tokens": 1,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    assert cache.lookup_and_store(blocks)["cache_read_input_tokens"] == 0
    assert cache.entries == set()
    # The default minimum is Sonnet's 1024 tokens.
    assert PrefixCache().lookup_and_store(blocks)["cache_creation_input_tokens"] == 0


def test_no_breakpoint_means_no_read_even_of_a_cached_prefix() -> None:
    cache = PrefixCache(min_cacheable_tokens=1)
    marked = request_blocks(_body(*_conversation(3)))
    cache.lookup_and_store(marked)
    unmarked = request_blocks(_body(*_conversation(3, mark_last=0), _msg("assistant", "x")))
    assert cache.lookup_and_store(unmarked)["cache_read_input_tokens"] == 0


@pytest.mark.parametrize(("extra", "found"), [(LOOKBACK, True), (LOOKBACK + 1, False)])
def test_lookback_reaches_exactly_lookback_blocks(extra: int, found: bool) -> None:
    cache = PrefixCache(min_cacheable_tokens=1)
    start = _conversation(3, mark_last=1)
    cached = request_blocks(_body(*start))
    cache.lookup_and_store(cached)
    tail = _msg("assistant", *[f"block {i}" for i in range(extra)], mark=True)
    usage = cache.lookup_and_store(
        request_blocks(_body(*start[:-1], _msg("user", start[-1]["content"][0]["text"]), tail))
    )
    assert usage["cache_read_input_tokens"] == (_tokens(cached, len(cached) - 1) if found else 0)


def test_error_replies_are_plain_anthropic_bodies() -> None:
    assert rate_limited(3).to_json() == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": rate_limited(3).message},
    }
    assert (overloaded().status, overloaded().type) == (529, "overloaded_error")
    assert (server_error().status, server_error().type) == (500, "api_error")
    assert prompt_too_long() == Error(
        400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"
    )
