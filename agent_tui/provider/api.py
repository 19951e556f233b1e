"""The one asynchronous provider interface: what the engine asks of litellm (a stream,
a model's info, a credentials check), answered by litellm in this process or in the
provider process (provider/remote.py), whichever was started. Nothing here blocks the
event loop: litellm's import and the pipe's answers are awaited, never waited for."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from agent_tui.provider import remote
from agent_tui.provider.stream import InProcess
from agent_tui.provider.stream_events import ModelRequest, ProviderEvent, TextDelta


class Provider(Protocol):
    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """One completion's events; ProviderError (mapped) on failures."""
        ...

    async def model_info(self, model: str) -> dict[str, Any] | None:
        """litellm's `get_model_info(model)`, None for a model it does not know."""
        ...

    async def validate_environment(self, model: str) -> dict[str, Any]:
        """litellm's `validate_environment(model)`: the keys it finds or misses."""
        ...


IN_PROCESS = InProcess()


def current() -> Provider:
    """The provider process when the command started one (first thing, in __main__ or
    tui/launch.py), else litellm in this process."""
    return remote.current() or IN_PROCESS


def stream_model(request: ModelRequest) -> AsyncIterator[ProviderEvent]:
    return current().stream(request)


async def complete_text(request: ModelRequest) -> str:
    """A short non-tool call (titles, summaries of chunks): the streamed text joined."""
    return "".join([e.text async for e in stream_model(request) if isinstance(e, TextDelta)])
