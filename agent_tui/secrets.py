"""Keep API keys out of what the model sees and what is stored.

Keys reach agent-tui through the environment or the config (`{env:NAME}`); they must
never come back in a tool output (`env`, `cat .env`, an error echoing a header), in the
database or in exports. Tool outputs and stored error texts pass through `redact`, and
the bash tool runs without the provider key variables.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 8  # shorter values would redact ordinary words
SECRET_NAME = re.compile(
    r"(API_?KEY|API_?TOKEN|ACCESS_?TOKEN|AUTH_?TOKEN|SECRET|PASSWORD|PRIVATE_?KEY)",
    re.IGNORECASE,
)
PROVIDER_KEY_NAME = re.compile(r"(_API_KEY|_API_TOKEN|_AUTH_TOKEN)$", re.IGNORECASE)


def secret_values(environ: Mapping[str, str], extra: Iterable[str | None] = ()) -> list[str]:
    """Values of secret-looking environment variables plus configured keys, longest
    first so that a key containing another is replaced whole."""
    values = {v for k, v in environ.items() if SECRET_NAME.search(k) and v}
    values.update(v for v in extra if v)
    return sorted((v for v in values if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)


class Redactor:
    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = [s for s in secrets if s]
        self._pattern = (
            re.compile("|".join(re.escape(s) for s in self.secrets)) if self.secrets else None
        )

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(REDACTED, text)

    @classmethod
    def from_environment(cls, extra: Iterable[str | None] = ()) -> Redactor:
        return cls(secret_values(os.environ, extra))


def tool_environment() -> dict[str, str]:
    """The environment for commands the model runs: without provider keys."""
    return {k: v for k, v in os.environ.items() if not PROVIDER_KEY_NAME.search(k)}
