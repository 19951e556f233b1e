"""Token counts of one step, as providers report them: their own module, so the provider
process (provider/worker.py) reads them without importing the storage layer."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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
