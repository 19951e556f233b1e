"""Model limits and prices: litellm's model info, overridden by config."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agent_tui.config.settings import Config, ModelLimit
from agent_tui.provider import api, loader, stream
from agent_tui.provider.windows import known_window
from agent_tui.usage import Prices

SERVED_OUTPUT_SHARE = 8
"""A served model's window with no output limit: 1/8 of it is kept for the answer (at
least SERVED_OUTPUT_MIN, at most half), instead of the 32,000 meant for hosted models
that would leave nothing of a 4k-32k local window."""
SERVED_OUTPUT_MIN = 256


class ModelInfo(BaseModel):
    id: str
    limit: ModelLimit
    prices: Prices
    known: bool
    """False when neither litellm, the config, nor the model's server knows its window."""
    window_source: str = ""
    """Where the window comes from: "config", "litellm", a server's answer, "learned…"."""
    vision: bool = False
    """The model takes images: `models.<id>.vision`, else litellm's `supports_vision`."""


_asked: dict[str, dict[str, Any] | None] = {}
"""litellm's info per model, once asked (None: a model it does not know)."""


class NotAsked(RuntimeError):
    """`model_info` before `load_model_info` for that model: a bug, never a person's."""


async def load_model_info(model: str, config: Config) -> ModelInfo:
    """The model's limits and prices; litellm's info is asked of the provider (awaited:
    litellm may still be importing) the first time, then kept for the process."""
    if model not in _asked:
        _asked[model] = await api.current().model_info(model)
    return model_info(model, config)


async def load_with_summariser(model: str, config: Config) -> ModelInfo:
    """`load_model_info`, with the summariser's (`compaction.model`) loaded beside it:
    compactions read it without awaiting."""
    if config.compaction.model:
        await load_model_info(config.compaction.model, config)
    return await load_model_info(model, config)


def model_info(model: str, config: Config) -> ModelInfo:
    """`load_model_info` without waiting, for code that cannot await (request assembly):
    the model's info must have been loaded before, unless litellm is already imported
    in this process (then asking it is a lookup)."""
    if model not in _asked:
        module = loader.imported()
        if module is None or api.current() is not api.IN_PROCESS:
            raise NotAsked(f"model info for {model} used before load_model_info")
        _asked[model] = stream.info_of(module, model)
    raw = _asked[model] or {}
    output = raw.get("max_output_tokens") or raw.get("max_tokens")
    context = raw.get("max_input_tokens") or 0
    # litellm's max_input_tokens is the whole window for most chat models.
    source = "litellm" if context else ""
    override = config.limit_for(model)
    served = known_window(model, config)  # None when the config sets the window
    if served is not None:
        context, output, source = served.context, served_output(served.context), served.source
    limit = ModelLimit(context=context, output=output)
    if override is not None:
        limit = limit.model_copy(update=override.model_dump(exclude_unset=True))
        if override.context:
            source = "config"
    input_price = raw.get("input_cost_per_token") or 0.0
    # A model without cache prices is charged the input price for cached tokens (the
    # usage still says how many were cached): never cheaper than it really was.
    prices = Prices(
        input=input_price,
        output=raw.get("output_cost_per_token") or 0.0,
        cache_read=raw.get("cache_read_input_token_cost") or input_price,
        cache_write=raw.get("cache_creation_input_token_cost") or input_price,
    )
    vision = config.model_settings(model).vision
    if vision is None:
        vision = bool(raw.get("supports_vision"))
    return ModelInfo(
        id=model,
        limit=limit,
        prices=prices,
        known=limit.context > 0,
        window_source=source,
        vision=vision,
    )


def served_output(window: int) -> int:
    """Output tokens reserved in a window a server reported (see SERVED_OUTPUT_SHARE)."""
    return min(max(window // SERVED_OUTPUT_SHARE, SERVED_OUTPUT_MIN), window // 2)
