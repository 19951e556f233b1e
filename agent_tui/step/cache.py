"""Prompt caching: where the cache breakpoints of a request go (which models take them:
provider/shapes.cache_style).

Anthropic caches a prefix (tools, system, messages, in that order) up to a block marked
`cache_control`; a later request reads the longest cached prefix ending at one of its own
breakpoints or a few blocks (about 20) before one. So: mark both system blocks (stable
for the whole session), and the last block of each of the last two messages. The
previous step's last message is then found a few blocks behind this step's breakpoints,
and everything before it is read from the cache. The API rejects a fifth breakpoint.

OpenAI caches prefixes by itself; a `prompt_cache_key` (the session id) routes the
requests of one session to the same cache. Gemini and DeepSeek cache implicitly.
"""

from __future__ import annotations

from typing import Any

EPHEMERAL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4


def _conversation_groups(messages: list[dict[str, Any]]) -> list[list[int]]:
    """Indexes of the non-system messages grouped as the Anthropic API will see them:
    consecutive user and tool messages (tool results) become one user message."""
    groups: list[list[int]] = []
    last_role = None
    for index, message in enumerate(messages):
        if message["role"] == "system":
            continue
        role = "assistant" if message["role"] == "assistant" else "user"
        if groups and role == last_role == "user":
            groups[-1].append(index)
        else:
            groups.append([index])
        last_role = role
    return groups


def _mark_system(message: dict[str, Any]) -> dict[str, Any]:
    """A system message's text as a block, so the breakpoint is on the block."""
    if isinstance(message["content"], str):
        message = {**message, "content": [{"type": "text", "text": message["content"]}]}
    return _mark_last_block(message)


def _mark_last_block(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of `message` whose last content block carries the breakpoint."""
    if message["role"] == "assistant" and message.get("tool_calls"):
        calls = [dict(call) for call in message["tool_calls"]]
        calls[-1]["cache_control"] = EPHEMERAL  # litellm moves it onto the tool_use block
        return {**message, "tool_calls": calls}
    content = message.get("content")
    if isinstance(content, list) and content:
        blocks = [dict(block) for block in content]
        blocks[-1]["cache_control"] = EPHEMERAL
        return {**message, "content": blocks}
    return {**message, "cache_control": EPHEMERAL}  # string content, tool results


def mark_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of `messages` with at most MAX_BREAKPOINTS cache_control marks: the first
    and the last system message, and the last block of each of the last two conversation
    messages (as the Anthropic API groups them)."""
    out = list(messages)
    systems = [i for i, m in enumerate(out) if m["role"] == "system" and m.get("content")]
    marked = sorted(set(systems[:1] + systems[-1:]))
    for index in marked:
        out[index] = _mark_system(out[index])
    room = MAX_BREAKPOINTS - len(marked)
    for group in _conversation_groups(out)[-room:]:
        out[group[-1]] = _mark_last_block(out[group[-1]])
    return out
