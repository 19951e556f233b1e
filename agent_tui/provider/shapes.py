"""Message shapes every server accepts.

The history is built in OpenAI's format with content as a list of parts, because that is
what carries images and Anthropic's cache breakpoints. Many servers take less: the chat
templates of local models (llama.cpp, llama-cpp-python, vLLM, LM Studio, Ollama's OpenAI
endpoint) often concatenate `content` as a string, and fail on a list after answering
`200` — the client sees a stream that simply ends. Mistral's and Qwen's templates also
reject a system message anywhere but first. So, before a request leaves:

- models cached with explicit breakpoints (Claude: `cache_style` "anthropic") keep their
  blocks and both system blocks, byte for byte (the cached prefix depends on them);
- every other model gets each text-only content list as one string (parts joined by a
  blank line), lists only where a part is not text (an image), and its system text as
  ONE system message at the start.

Both are pure functions of the messages, so a message's bytes never change from one step
to the next and implicit prefix caches (OpenAI, DeepSeek, Gemini, llama.cpp's own prompt
cache) keep working.
"""

from __future__ import annotations

from typing import Any, Literal

from agent_tui.provider.defaults import provider_name

PROMPT_CACHE_KEY_PROVIDERS = ("openai", "azure")
TEXT_JOINER = "\n\n"

CacheStyle = Literal["anthropic", "openai", "implicit"]


def cache_style(model: str) -> CacheStyle:
    """How `model` is cached: explicit breakpoints for Claude (Anthropic, Bedrock, Vertex,
    OpenRouter…), a cache key for OpenAI, the provider's own implicit cache otherwise."""
    lowered = model.lower()
    if "claude" in lowered or lowered.startswith("anthropic/"):
        return "anthropic"
    if provider_name(lowered) in PROMPT_CACHE_KEY_PROVIDERS:
        return "openai"
    return "implicit"


def _text_only(content: Any) -> str | None:
    """A string content, or the joined text of a list of text parts; None when a part is
    anything else (an image, a cache breakpoint, a block with fields a server may need),
    or there is no content."""
    if not isinstance(content, list):
        return content if isinstance(content, str) else None
    texts: list[str] = []
    for block in content:
        text_part = isinstance(block, dict) and block.get("type") == "text"
        if not text_part or set(block) - {"type", "text"}:
            return None
        texts.append(str(block.get("text") or ""))
    return TEXT_JOINER.join(texts)


def plain_content(message: dict[str, Any]) -> dict[str, Any]:
    """`message` with text-only list content as a string (the same object when nothing
    changes)."""
    content = message.get("content")
    text = _text_only(content) if isinstance(content, list) else None
    return message if text is None else {**message, "content": text}


def one_system_message(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every system message's text as one system message at the start. Left as it is
    when a system message is not plain text (it carries a cache mark)."""
    texts: list[str] = []
    rest: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") != "system":
            rest.append(message)
            continue
        text = _text_only(message.get("content"))
        if text is None:
            return messages
        if text:
            texts.append(text)
    if not texts:
        return rest
    return [{"role": "system", "content": TEXT_JOINER.join(texts)}, *rest]


def shape_messages(model: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as `model`'s provider should receive them (see the module docstring).
    The input is never changed in place."""
    if cache_style(model) == "anthropic":
        return messages
    return [plain_content(m) for m in one_system_message(messages)]
