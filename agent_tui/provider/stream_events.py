"""What crosses the provider boundary: a model request and the events of its stream
(the same models in this process and on the provider process's pipe)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from agent_tui.usage import Prices, Tokens


class SaveWhenLeft(BaseModel):
    """A summary prepared in the background, as the relay saves it when the command
    that asked for it ended first (context/prepared_left.py): nothing is lost at exit."""

    database: str
    """The session's database (the command's: each command may have its own data dir)."""
    prepared: dict[str, Any]
    """A PreparedSummary (agent_tui/records.py) but for what the stream gives: its text,
    tokens, cost and time. Validated where it is saved: this module stays below storage."""
    prices: Prices
    """The summariser's, for the summary's cost."""


class ModelRequest(BaseModel):
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    api_base: str | None = None
    api_key: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    """Further litellm parameters: prompt_cache_key, reasoning_effort, thinking."""
    detachable: bool = False
    """A summary prepared in the background: the relay finishes it when the command
    that sent it ends, and gives it to the next command sending the same request
    (provider/detached.py) instead of starting it again."""
    save_when_left: SaveWhenLeft | None = None
    """With `detachable`: how the relay saves the summary itself when no command is left
    to read its end."""


class TextDelta(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ReasoningDelta(BaseModel):
    type: Literal["reasoning"] = "reasoning"
    text: str


class ReasoningSigned(BaseModel):
    """The end of a thinking block: its signature (Anthropic), which must be sent back
    with the block's exact text for the model to continue a tool-use turn; or a whole
    redacted block (`redacted` holds its opaque data)."""

    type: Literal["reasoning-signed"] = "reasoning-signed"
    signature: str = ""
    redacted: str | None = None


class ToolCallStart(BaseModel):
    type: Literal["tool-start"] = "tool-start"
    call_id: str
    name: str


class ToolInputDelta(BaseModel):
    type: Literal["tool-delta"] = "tool-delta"
    call_id: str
    delta: str


class ToolCallReady(BaseModel):
    type: Literal["tool-ready"] = "tool-ready"
    call_id: str
    name: str
    arguments: str


class StepFinish(BaseModel):
    type: Literal["finish"] = "finish"
    reason: str
    usage: Tokens
    has_usage: bool = True


ProviderEvent = (
    TextDelta
    | ReasoningDelta
    | ReasoningSigned
    | ToolCallStart
    | ToolInputDelta
    | ToolCallReady
    | StepFinish
)


@lru_cache(maxsize=1)
def event_adapter() -> TypeAdapter[ProviderEvent]:
    """Reads the events the provider process sends (provider/remote.py)."""
    return TypeAdapter(Annotated[ProviderEvent, Field(discriminator="type")])


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """The tool input as a dict, or None when it is not a JSON object."""
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def summary_of(events: list[ProviderEvent]) -> tuple[str, Tokens] | None:
    """A summary's text and usage from its stream; None when it has no text (the model
    called a tool instead)."""
    text = "".join(e.text for e in events if isinstance(e, TextDelta)).strip()
    usage = [e.usage for e in events if isinstance(e, StepFinish)]
    return (text, usage[-1] if usage else Tokens()) if text else None
