"""Model limits and prices: litellm's model info, overridden by config."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from agent_tui.config import Config, ModelLimit
from agent_tui.provider.loader import litellm
from agent_tui.storage.models import Tokens


class Prices(BaseModel):
    """USD per token."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class ModelInfo(BaseModel):
    id: str
    limit: ModelLimit
    prices: Prices
    known: bool
    """False when neither litellm nor the config knows the model's window."""
    vision: bool = False
    """The model takes images: `models.<id>.vision`, else litellm's `supports_vision`."""


@lru_cache(maxsize=64)
def _litellm_info(model: str) -> dict[str, Any] | None:
    try:
        return dict(litellm().get_model_info(model))
    except Exception:  # litellm raises several types for unmapped models
        return None


def model_info(model: str, config: Config) -> ModelInfo:
    raw = _litellm_info(model) or {}
    output = raw.get("max_output_tokens") or raw.get("max_tokens")
    context = raw.get("max_input_tokens") or 0
    # litellm's max_input_tokens is the whole window for most chat models.
    limit = ModelLimit(context=context, output=output)
    override = config.limit_for(model)
    if override is not None:
        limit = limit.model_copy(update=override.model_dump(exclude_unset=True))
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
    return ModelInfo(id=model, limit=limit, prices=prices, known=limit.context > 0, vision=vision)


def cost_of(tokens: Tokens, prices: Prices) -> float:
    return (
        tokens.input * prices.input
        + (tokens.output + tokens.reasoning) * prices.output
        + tokens.cache.read * prices.cache_read
        + tokens.cache.write * prices.cache_write
    )
