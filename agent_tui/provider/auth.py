"""Check that the chosen model's provider has credentials before calling it."""

from __future__ import annotations

from agent_tui.config import Config
from agent_tui.errors import ConfigError
from agent_tui.provider.loader import litellm, load_litellm

# Local OpenAI-compatible servers usually need no key, but the SDK insists on one.
PLACEHOLDER_KEY = "sk-no-key-required"


def provider_name(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else "openai"


def credentials(model: str, config: Config) -> tuple[str | None, str | None]:
    """(api_base, api_key) to pass to litellm; ConfigError naming the variable to set."""
    api_base, api_key = config.provider_for(model)
    if api_key:
        return api_base, api_key
    if api_base:
        return api_base, PLACEHOLDER_KEY
    try:
        env = litellm().validate_environment(model)
    except Exception:
        return None, None  # let the provider answer; its error is mapped later
    missing = env.get("missing_keys") or []
    if env.get("keys_in_environment") or not missing:
        return None, None
    name = provider_name(model)
    variables = " and ".join(missing)
    raise ConfigError(
        f"No API key for provider '{name}' (model {model}). Set {variables} "
        f'(export {missing[0]}=...) or add "provider": {{"{name}": {{"api_key": '
        f'"{{env:{missing[0]}}}"}}}} to agent-tui.json.'
    )


async def check_credentials(model: str, config: Config) -> None:
    """`credentials` from async code: litellm's import (seconds) runs on a thread, so the
    event loop, and any database transaction in flight on it, is never held up."""
    await load_litellm()
    credentials(model, config)
