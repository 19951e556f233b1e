"""Token counts of one step, as providers report them, and what they cost: their own
module, so the provider process (provider/worker.py) reads them without importing the
storage layer."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agent_tui import pydantic_plugins  # noqa: F401 (before any model: no plugin scan)


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CacheTokens(_Model):
    read: int = 0
    write: int = 0


class Tokens(_Model):
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache: CacheTokens = Field(default_factory=CacheTokens)

    @property
    def total(self) -> int:
        """Everything the step occupied in the window (the sidebar's context figure)."""
        return self.input + self.output + self.reasoning + self.cache.read + self.cache.write


class Prices(BaseModel):
    """USD per token."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


def cost_of(tokens: Tokens, prices: Prices) -> float:
    return (
        tokens.input * prices.input
        + (tokens.output + tokens.reasoning) * prices.output
        + tokens.cache.read * prices.cache_read
        + tokens.cache.write * prices.cache_write
    )
