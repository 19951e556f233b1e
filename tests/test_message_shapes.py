"""Message shapes every server accepts: on OpenAI-compatible endpoints text-only content
goes as a string and the system text as one system message at the start; parts only for
images; the Anthropic path keeps its blocks and breakpoints.

The server here renders its chat template like many Hugging Face templates (content must
be a string, one system message, first): a list or a second system message fails the
stream after `200` (tests/fake_local.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agent_tui.provider.shapes import one_system_message, shape_messages
from tests.conftest import write_config
from tests.engine_helpers import run_cli
from tests.fake_local import FakeLocal
from tests.fake_openai import Call, Text, ToolCalls

LOCAL = "openai/local-model"


def local_config(project: Path, server: FakeLocal, **overrides: Any) -> None:
    write_config(
        project,
        server,
        model=LOCAL,
        provider={"openai": {"api_base": server.base_url}},
        models={LOCAL: {"limit": {"context": 100_000, "output": 4_000}}},
        **overrides,
    )


def test_a_string_template_server_answers_every_step(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (isolated / "notes.txt").write_text("line one\nline two\n")
    with FakeLocal("llama-cpp-python", string_template=True, one_system=True) as server:
        local_config(isolated, server)
        server.script(
            ToolCalls([Call("read", json.dumps({"file_path": "notes.txt"}))], text="Reading."),
            Text("It has two lines."),
        )
        # An @mention adds a second text part to the user message; the tool step adds
        # tool results; the second step sends the whole history again.
        code, out, err = run_cli(capsys, "run", "what is in @notes.txt ?")
        assert code == 0, err
        assert "It has two lines." in out
        assert server.template_failures == 0
        assert len(server.requests) == 2
        for body in server.requests:
            messages = body["messages"]
            roles = [m["role"] for m in messages]
            assert roles.count("system") == 1 and roles[0] == "system"
            for message in messages:
                assert message["content"] is None or isinstance(message["content"], str), message
        user = server.requests[0]["messages"][1]["content"]
        assert user.startswith("what is in @notes.txt ?\n\n") and "line two" in user
        # The history is sent byte for byte again at the next step (prefix caches hold).
        first, second = server.requests
        assert second["messages"][: len(first["messages"])] == first["messages"]


def test_the_fake_template_really_fails_on_list_content(isolated: Path) -> None:
    """What agent-tui used to send: the server answers 200 and the stream just ends."""
    import httpx

    with FakeLocal("llama-cpp-python", string_template=True) as server:
        body = {
            "model": "local-model",
            "stream": True,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        }
        response = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=5)
        assert response.status_code == 200
        assert 'finish_reason": "stop' not in response.text
        assert server.template_failures == 1


def test_shapes_keep_images_as_parts_and_never_change_the_input() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    messages = [
        {"role": "system", "content": "base prompt"},
        {"role": "system", "content": "environment"},
        {"role": "user", "content": [{"type": "text", "text": "look"}, image]},
        {"role": "assistant", "content": "I see."},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    ]
    before = copy.deepcopy(messages)
    shaped = shape_messages("openai/gpt-5.4", messages)
    assert messages == before
    assert shaped[0] == {"role": "system", "content": "base prompt\n\nenvironment"}
    assert [m["role"] for m in shaped] == ["system", "user", "assistant", "user"]
    assert shaped[1]["content"] == messages[2]["content"]  # the image needs parts
    assert shaped[3]["content"] == "a\n\nb"
    for model in ("deepseek/deepseek-chat", "gemini/gemini-2.5-pro", "ollama_chat/qwen3"):
        assert shape_messages(model, messages) == shaped


def test_the_anthropic_path_keeps_blocks_and_breakpoints() -> None:
    marked = {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}
    messages = [
        {"role": "system", "content": [{**marked, "text": "s1"}]},
        {"role": "system", "content": "s2"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, marked]},
    ]
    for model in ("anthropic/claude-sonnet-4-5", "openrouter/anthropic/claude-sonnet-4.5"):
        assert shape_messages(model, messages) is messages
    # Elsewhere a block with a cache mark is left as a list, never joined away.
    shaped = shape_messages("openai/x", messages)
    assert shaped[-1]["content"] == messages[-1]["content"]
    assert one_system_message(messages) is messages  # a marked system block stays


def test_a_second_system_message_would_fail_the_template(isolated: Path) -> None:
    """The fake's Mistral/Qwen-like rule, which one_system_message satisfies."""
    import httpx

    with FakeLocal("llama-cpp-python", one_system=True) as server:
        messages = [
            {"role": "system", "content": "a"},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "b"},
        ]
        url = f"{server.base_url}/chat/completions"
        httpx.post(url, json={"model": "m", "stream": True, "messages": messages}, timeout=5)
        assert server.template_failures == 1
        merged = one_system_message(messages)
        assert merged == [{"role": "system", "content": "a\n\nb"}, messages[1]]
        httpx.post(url, json={"model": "m", "stream": True, "messages": merged}, timeout=5)
        assert server.template_failures == 1
