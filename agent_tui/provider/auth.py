"""Check that the chosen model's provider has credentials before calling it."""

from __future__ import annotations

from typing import Any

from agent_tui.config.settings import Config
from agent_tui.errors import ConfigError
from agent_tui.provider import api
from agent_tui.provider.defaults import (
    LOCAL_PROVIDERS,
    PROVIDERS,
    credentials_source,
    model_is_configured,
    provider_name,
    providers_with_keys,
    setup_text,
)

# Local OpenAI-compatible servers usually need no key, but the SDK insists on one.
PLACEHOLDER_KEY = "sk-no-key-required"
SETUP_SUMMARY = (
    "No model provider is set up: set an API key (e.g. OPENAI_API_KEY), start Ollama, or "
    'set "model" and "provider" in agent-tui.json. The first screen lists every choice.'
)


class ProviderSetupError(ConfigError):
    """No key for the model's provider. `summary` is the one-line form for a notification
    (the app's first screen shows the whole text)."""

    def __init__(self, message: str, summary: str) -> None:
        super().__init__(message)
        self.summary = summary


def _known(model: str, config: Config) -> tuple[str | None, str | None] | None:
    """(api_base, api_key) when they are known without asking litellm, else None."""
    api_base, api_key = config.provider_for(model)
    if api_key:
        return api_base, api_key
    if api_base:
        return api_base, PLACEHOLDER_KEY
    if provider_name(model) in LOCAL_PROVIDERS:
        return None, None  # litellm finds Ollama on localhost:11434 (or $OLLAMA_API_BASE)
    check_setup(model, config)
    if credentials_source(config, model):
        return None, None  # a provider we know, and its key is set: litellm reads it
    return None


def credentials(model: str, config: Config) -> tuple[str | None, str | None]:
    """(api_base, api_key) to pass to litellm; ConfigError naming the variable to set."""
    known = _known(model, config)
    if known is not None:
        return known
    env = _checked.get(model)
    if env is None:
        return None, None  # not checked (or it failed): the provider's error is mapped later
    missing = env.get("missing_keys") or []
    if env.get("keys_in_environment") or not missing:
        return None, None
    raise ConfigError(_missing_key(model, config, missing))


def _missing_key(model: str, config: Config, missing: list[str], joiner: str = " and ") -> str:
    name = provider_name(model)
    variables = joiner.join(missing)
    message = (
        f"No API key for provider '{name}' (model {model}). Set {variables} "
        f'(export {missing[0]}=...) or add "provider": {{"{name}": {{"api_key": '
        f'"{{env:{missing[0]}}}"}}}} to agent-tui.json.'
    )
    others = providers_with_keys(config)
    if others:
        choices = ", ".join(p.model for p in others)
        message += f"\nKeys are set for other providers: choose one with --model ({choices})."
    return message


def check_setup(model: str, config: Config) -> None:
    """Without litellm: ConfigError when the model's provider surely has no key. With no
    provider set up at all, the message lists every way to set one up."""
    if credentials_source(config, model) is not None:
        return
    known = next(p for p in PROVIDERS if p.name == provider_name(model))
    missing = _missing_key(model, config, list(known.env), " or ")
    # A project file that was skipped (broken) may be where the provider was named.
    skipped = "".join(f"{line}\n" for line in (config.project.skipped if config.project else []))
    if providers_with_keys(config):
        raise ProviderSetupError(skipped + missing, missing)
    if model == config.model and not model_is_configured(config):
        # Nobody chose this model: no need to name it.
        raise ProviderSetupError(skipped + setup_text(), SETUP_SUMMARY)
    raise ProviderSetupError(f"{skipped}{missing}\n\n{setup_text()}", missing)


_checked: dict[str, dict[str, Any]] = {}
"""litellm's `validate_environment` per model, for providers agent-tui does not know."""


async def check_credentials(model: str, config: Config) -> None:
    """ConfigError naming what to set when the model's provider has no key. For a
    provider agent-tui does not know, litellm is asked (awaited: the event loop, and any
    database transaction in flight on it, is never held up), and `credentials` reads the
    answer from then on."""
    check_setup(model, config)  # the common mistake, answered before litellm's import
    if _known(model, config) is None and model not in _checked:
        try:
            _checked[model] = await api.current().validate_environment(model)
        except Exception:
            _checked[model] = {}  # let the provider answer; its error is mapped later
    credentials(model, config)
