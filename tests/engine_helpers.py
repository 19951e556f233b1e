"""Drive the real engine (real SQLite, litellm against the fake server) from async tests."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_tui import paths
from agent_tui.cli import main
from agent_tui.config.settings import load_config
from agent_tui.engine_context import EngineContext
from agent_tui.session.engine import Engine
from agent_tui.step.messages import COMPACTION_QUESTION, CONTINUE_TEXT
from agent_tui.storage.db import Database
from tests.fake_openai import Call, ToolCalls


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`agent-tui ARGV` in-process: (exit code, stdout, stderr); never a traceback."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@contextlib.asynccontextmanager
async def open_engine(**engine_kwargs: Any) -> AsyncIterator[Engine]:
    """An engine on the config in the cwd (see conftest.write_config) and the tmp data dir."""
    db = await Database.open(paths.database_path())
    engine = None
    try:
        engine = Engine(EngineContext(db=db, config=load_config()), **engine_kwargs)
        yield engine
    finally:
        if engine is not None:
            await engine.close()  # MCP servers
        await db.close()


def tool_results(request: dict[str, Any]) -> list[str]:
    """The tool results a request carries, oldest first."""
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def write(path: str | Path, content: str) -> ToolCalls:
    """The model's write call, scripted."""
    return ToolCalls([Call("write", json.dumps({"file_path": str(path), "content": content}))])


def edit(path: str | Path, old: str, new: str) -> ToolCalls:
    """The model's edit call, scripted."""
    arguments = {"file_path": str(path), "old_string": old, "new_string": new}
    return ToolCalls([Call("edit", json.dumps(arguments))])


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(block.get("text", "") for block in content)
    return content or ""


def conversation(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's messages without the system prompt."""
    return [m for m in request["messages"] if m["role"] != "system"]


def is_summary_request(request: dict[str, Any]) -> bool:
    """The summariser's request: its last message asks for the summary (it carries the
    conversation's own tools so that a prompt cache can serve it)."""
    return "Summarise the conversation above" in text_of(request["messages"][-1])


def starts_with_summary(request: dict[str, Any], summary: str) -> bool:
    conv = conversation(request)
    return (
        conv[0]["role"] == "user"
        and text_of(conv[0]) == COMPACTION_QUESTION
        and conv[1]["role"] == "assistant"
        and text_of(conv[1]) == summary
    )


def ends_with_continue(request: dict[str, Any]) -> bool:
    last = conversation(request)[-1]
    return last["role"] == "user" and text_of(last).endswith(CONTINUE_TEXT)


def tool_pairs_ok(request: dict[str, Any]) -> bool:
    """Every tool call has exactly one result right after its assistant message."""
    messages = request["messages"]
    for index, message in enumerate(messages):
        calls = [c["id"] for c in message.get("tool_calls") or []]
        if not calls:
            continue
        results = []
        for follower in messages[index + 1 :]:
            if follower["role"] != "tool":
                break
            results.append(follower["tool_call_id"])
        if sorted(results) != sorted(calls):
            return False
    called = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    return sorted(answered) == sorted(called)


def anthropic_body(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The request body litellm builds for the Anthropic Messages API from OpenAI-format
    messages (tool results and user text merge into one user message)."""
    from agent_tui.provider.loader import litellm

    return (
        litellm()
        .AnthropicConfig()
        .transform_request(
            model="claude-sonnet-4-5",
            messages=copy.deepcopy(messages),
            optional_params={"tools": tools} if tools else {},
            litellm_params={},
            headers={},
        )
    )


def count_breakpoints(messages: list[dict[str, Any]]) -> int:
    """cache_control marks in provider messages (the API allows MAX_BREAKPOINTS)."""
    total = 0
    for message in messages:
        total += "cache_control" in message
        content = message.get("content")
        if isinstance(content, list):
            total += sum("cache_control" in block for block in content if isinstance(block, dict))
        total += sum("cache_control" in call for call in message.get("tool_calls") or [])
    return total


async def preparation_done(ctx: Any, session_id: str) -> None:
    """Until the session's summary being prepared in the background (if any) is written."""
    task = ctx.live(session_id).preparing
    if task is not None and not task.done():
        await asyncio.wait({task})
