"""The model to use when the config names none, and what to tell a person who has none.

Order of choice (the first that applies wins):

1. `model` in the config files or `--model`: always.
2. The first provider in `PROVIDERS` with a key, from its environment variables or from
   `provider.<name>.api_key` in the config: that provider's default model.
3. No key at all: a local server answering on its default port (Ollama 11434, LM Studio
   1234, llama.cpp 8080), or at a `provider.<name>.api_base` the config sets without a
   key; its first model. Probed with a short timeout, only in this case.
4. Nothing: `DEFAULT_MODEL`, and the app and `run` say what to set (`setup_text`).

Import-light: no litellm (its model map is read as JSON from its package), httpx only when
probing. The engine (`Engine`, `credentials`) sees the result as an ordinary config.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from agent_tui.config.settings import DEFAULT_MODEL, Config, ModelConfig, ModelLimit, ProviderConfig
from agent_tui.errors import ConfigError
from agent_tui.provider.windows import first_answer, json_object, known_window


@dataclass(frozen=True)
class ProviderDefault:
    name: str
    """litellm's provider name: the model id's prefix and the config's `provider` key."""
    label: str
    env: tuple[str, ...]
    """Environment variables litellm reads the key from; any one is enough."""
    model: str
    """The model chosen when this is the first provider with a key."""
    limit_from: str | None = None
    """A model map entry to copy the window from when litellm's map lacks `model`."""


PROVIDERS: tuple[ProviderDefault, ...] = (
    ProviderDefault("anthropic", "Anthropic", ("ANTHROPIC_API_KEY",), DEFAULT_MODEL),
    ProviderDefault("openai", "OpenAI", ("OPENAI_API_KEY",), "openai/gpt-5.4"),
    ProviderDefault(
        "gemini", "Gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "gemini/gemini-pro-latest"
    ),
    # litellm's model map has no OpenRouter entries: the window is that of the same model
    # at Anthropic.
    ProviderDefault(
        "openrouter",
        "OpenRouter",
        ("OPENROUTER_API_KEY",),
        "openrouter/anthropic/claude-sonnet-4.6",
        limit_from="claude-sonnet-4-6",
    ),
    ProviderDefault("deepseek", "DeepSeek", ("DEEPSEEK_API_KEY",), "deepseek/deepseek-v4-pro"),
    ProviderDefault("mistral", "Mistral", ("MISTRAL_API_KEY",), "mistral/devstral-latest"),
    ProviderDefault("groq", "Groq", ("GROQ_API_KEY",), "groq/openai/gpt-oss-120b"),
    ProviderDefault("xai", "xAI", ("XAI_API_KEY",), "xai/grok-code-fast-1"),
)
"""Providers in the order a key picks the default model."""

LOCAL_PROVIDERS = frozenset({"ollama", "ollama_chat"})
"""Providers that need no key: litellm finds Ollama at localhost:11434 by itself."""


@dataclass(frozen=True)
class LocalServer:
    label: str
    base_url: str
    kind: Literal["ollama", "openai"]
    """`ollama`: GET /api/tags, models `ollama_chat/NAME`; `openai`: GET /models (the base
    ends in /v1), models `openai/ID` with the base as `provider.openai.api_base`."""

    @property
    def port(self) -> int | None:
        return urlsplit(self.base_url).port


LOCAL_SERVERS: tuple[LocalServer, ...] = (
    LocalServer("Ollama", "http://127.0.0.1:11434", "ollama"),
    LocalServer("LM Studio", "http://127.0.0.1:1234/v1", "openai"),
    LocalServer("llama.cpp", "http://127.0.0.1:8080/v1", "openai"),
)
PROBED_SERVERS: tuple[LocalServer, ...] = LOCAL_SERVERS
"""What `choose_model` asks (tests point it at their own ports)."""
PROBE_TIMEOUT = 0.3
"""Seconds a local server may take to list its models (a closed port fails at once)."""

CONFIG_EXAMPLE = (
    '{"model": "openai/NAME", "provider": {"openai": '
    '{"api_base": "http://HOST:PORT/v1", "api_key": "{env:MY_KEY}"}}}'
)


@dataclass(frozen=True)
class ModelChoice:
    model: str
    source: Literal["config", "key", "local", "none"]
    detail: str = ""
    """The variable, config field or server that decided it."""


# ---- keys ---------------------------------------------------------------------------------


def _config_key(config: Config, name: str) -> str | None:
    entry = config.provider.get(name)
    if entry is None or entry.api_key is None:
        return None
    try:
        _, key = config.provider_for(f"{name}/x")
    except ConfigError:  # `{env:NAME}` naming an unset variable: no key
        return None
    return key


def key_source(
    provider: ProviderDefault, config: Config, environ: Mapping[str, str] | None = None
) -> str | None:
    """Where this provider's key comes from (`$NAME` or the config field), or None."""
    environ = os.environ if environ is None else environ
    for name in provider.env:
        if environ.get(name):
            return f"${name}"
    if _config_key(config, provider.name):
        return f"provider.{provider.name}.api_key"
    return None


def providers_with_keys(
    config: Config, environ: Mapping[str, str] | None = None
) -> list[ProviderDefault]:
    return [p for p in PROVIDERS if key_source(p, config, environ)]


def provider_name(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else "openai"


def credentials_source(
    config: Config, model: str, environ: Mapping[str, str] | None = None
) -> str | None:
    """How a model's provider is reached (a key's source, a base URL), or None when
    agent-tui can tell it has nothing. Providers it does not know are given the benefit
    of the doubt ("" : litellm decides)."""
    name = provider_name(model)
    entry = config.provider.get(name)
    if entry is not None:
        if _config_key(config, name):
            return f"provider.{name}.api_key"
        if entry.api_base:
            return entry.api_base
    known = next((p for p in PROVIDERS if p.name == name), None)
    if known is not None:
        return key_source(known, config, environ)
    if name in LOCAL_PROVIDERS:
        environ = os.environ if environ is None else environ
        return environ.get("OLLAMA_API_BASE") or LOCAL_SERVERS[0].base_url
    return ""


# ---- litellm's model map, read without importing litellm ------------------------------------


@lru_cache(maxsize=1)
def model_map() -> dict[str, dict[str, Any]]:
    """litellm's bundled model map (the one litellm uses: `LITELLM_LOCAL_MODEL_COST_MAP`)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(next(iter(spec.submodule_search_locations)))
    try:
        data = json.loads((path / "model_prices_and_context_window_backup.json").read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)}


def _map_entry(model: str) -> dict[str, Any] | None:
    entries = model_map()
    if model in entries:
        return entries[model]
    if "/" in model:
        provider, bare = model.split("/", 1)
        entry = entries.get(bare)
        if entry is not None and entry.get("litellm_provider") == provider:
            return entry
    return None


def context_window(model: str, config: Config) -> int:
    """The model's window in tokens: config `models.<id>.limit.context`, else what its
    server said or its overflow error named (provider/windows.py), else litellm's map;
    0 = unknown."""
    override = config.limit_for(model)
    if override is not None and override.context:
        return override.context
    served = known_window(model, config)
    if served is not None:
        return served.context
    entry = _map_entry(model) or {}
    return int(entry.get("max_input_tokens") or 0)


NOT_FOR_CODING = ("-audio", "-realtime", "-tts", "-transcribe", "-image")
"""Chat models of the map made for something else (fine-tuning bases, `ft:`, are left out too)."""
MIN_LISTED_WINDOW = 32_000
"""`/model` leaves out models with a smaller window: too small for a coding session."""
DATED = re.compile(r"^(.+?)-(?:\d{4}-\d{2}-\d{2}|\d{8})$")
"""A dated snapshot id (`gpt-4.1-2025-04-14`, `claude-opus-4-5-20251101`) and its alias."""


@dataclass(frozen=True)
class ModelRow:
    id: str
    window: int


def provider_models(provider: str) -> list[ModelRow]:
    """Chat models of a provider that can call tools and hold a coding session, from
    litellm's model map; dated snapshots are left out when their alias is listed."""
    rows = {}
    for key, entry in model_map().items():
        if entry.get("litellm_provider") != provider or entry.get("mode") != "chat":
            continue
        if key.startswith("ft:") or any(kind in key for kind in NOT_FOR_CODING):
            continue
        window = int(entry.get("max_input_tokens") or 0)
        if not entry.get("supports_function_calling") or window < MIN_LISTED_WINDOW:
            continue
        model = key if key.startswith(f"{provider}/") else f"{provider}/{key}"
        rows[model] = ModelRow(model, window)
    return [
        row
        for model, row in sorted(rows.items())
        if not ((m := DATED.match(model)) and m.group(1) in rows)
    ]


def model_catalog(
    config: Config, extra: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> list[ModelRow]:
    """What `/model` offers: `extra` (the current model first) and the configured models,
    then the providers with keys: their default model, then their other chat models."""
    ids = [*extra, config.model, *config.models]
    if config.small_model:
        ids.append(config.small_model)
    for provider in providers_with_keys(config, environ):
        ids.append(provider.model)
        ids.extend(row.id for row in provider_models(provider.name))
    return [ModelRow(m, context_window(m, config)) for m in dict.fromkeys(i for i in ids if i)]


# ---- local servers ----------------------------------------------------------------------------


def _configured_servers(config: Config) -> list[LocalServer]:
    """`provider.<name>.api_base` without a key: a server the person runs (no model named)."""
    servers = []
    for name, entry in config.provider.items():
        if not entry.api_base or entry.api_key is not None or "{env:" in entry.api_base:
            continue
        kind = "ollama" if name in LOCAL_PROVIDERS else "openai" if name == "openai" else None
        if kind is not None:
            servers.append(LocalServer(name, entry.api_base.rstrip("/"), kind))
    return servers


@dataclass(frozen=True)
class LocalModels:
    server: LocalServer
    models: list[str]
    """litellm ids, the server's order."""


async def _list_models(client: Any, server: LocalServer) -> LocalModels | None:
    path = "/api/tags" if server.kind == "ollama" else "/models"
    data = await json_object(client, "GET", server.base_url + path)
    if data is None:  # refused, timed out, not a JSON object: no server there
        return None
    if server.kind == "ollama":
        names = [m.get("name") or m.get("model") for m in data.get("models") or []]
        models = [f"ollama_chat/{n}" for n in names if isinstance(n, str) and n]
    else:
        ids = [m.get("id") for m in data.get("data") or [] if isinstance(m, dict)]
        models = [f"openai/{i}" for i in ids if isinstance(i, str) and i]
    return LocalModels(server, models) if models else None


async def _accepts(server: LocalServer, timeout: float) -> bool:
    parts = urlsplit(server.base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        async with asyncio.timeout(timeout):
            _, writer = await asyncio.open_connection(parts.hostname or "127.0.0.1", port)
    except (OSError, TimeoutError):
        return False
    writer.close()
    return True


async def probe_local(
    servers: Sequence[LocalServer] = LOCAL_SERVERS, timeout: float = PROBE_TIMEOUT
) -> LocalModels | None:
    """The first server (in `servers` order) that lists at least one model; all are asked
    at once, so this takes at most `timeout`."""
    # Only servers whose port accepts a connection are asked (a refusal is immediate).
    accepts = await asyncio.gather(*(_accepts(s, timeout) for s in servers))
    servers = [s for s, ok in zip(servers, accepts, strict=True) if ok]
    if not servers:
        return None  # the usual case on a machine without one: httpx is not even imported
    import httpx

    # Plain http needs no TLS: skipping the certificate store saves its load.
    verify = any(s.base_url.startswith("https:") for s in servers)
    async with httpx.AsyncClient(timeout=timeout, trust_env=False, verify=verify) as client:
        return await first_answer([_list_models(client, s) for s in servers], timeout * 2)


def _use_local(config: Config, found: LocalModels) -> None:
    """Point the config at the server: its first model, its base URL, its models listed."""
    name = "ollama_chat" if found.server.kind == "ollama" else "openai"
    if name not in config.provider:
        config.provider[name] = ProviderConfig(api_base=found.server.base_url)
    for model in found.models:
        config.models.setdefault(model, ModelConfig())
    config.model = found.models[0]


# ---- choosing -------------------------------------------------------------------------------


def _use_provider(config: Config, provider: ProviderDefault) -> None:
    config.model = provider.model
    if provider.limit_from and not context_window(provider.model, config):
        entry = model_map().get(provider.limit_from) or {}
        if entry.get("max_input_tokens") and provider.model not in config.models:
            limit = ModelLimit(
                context=entry["max_input_tokens"], output=entry.get("max_output_tokens")
            )
            config.models[provider.model] = ModelConfig(limit=limit)


def model_is_configured(config: Config) -> bool:
    return "model" in config.model_fields_set


def choose_by_keys(config: Config, environ: Mapping[str, str] | None = None) -> ModelChoice | None:
    """The config's own model, else the first provider's whose key is set; None when
    neither (a local server may still be probed)."""
    if model_is_configured(config):
        return ModelChoice(config.model, "config", "model")
    for provider in PROVIDERS:
        source = key_source(provider, config, environ)
        if source:
            _use_provider(config, provider)
            return ModelChoice(config.model, "key", source)
    return None


async def choose_model(
    config: Config,
    *,
    probe: bool = True,
    servers: Sequence[LocalServer] | None = None,
    environ: Mapping[str, str] | None = None,
) -> ModelChoice:
    """Set `config.model` when the config names none (see the module's docstring)."""
    chosen = choose_by_keys(config, environ)
    if chosen is not None:
        return chosen
    if probe:
        servers = PROBED_SERVERS if servers is None else servers
        found = await probe_local([*_configured_servers(config), *servers])
        if found is not None:
            _use_local(config, found)
            return ModelChoice(
                config.model, "local", f"{found.server.label} at {found.server.base_url}"
            )
    return ModelChoice(config.model, "none")


# ---- what to tell a person with no provider --------------------------------------------------


def setup_text() -> str:
    """The one-screen answer to "why can't agent-tui talk to a model?"."""
    lines = [(" or ".join(p.env), p.model) for p in PROVIDERS]  # in the order of choice
    width = max(len(v) for v, _ in lines)
    keys = "\n".join(f"  {v:<{width}}  {m}" for v, m in lines)
    servers = ", ".join(f"{s.label} (port {s.port})" for s in LOCAL_SERVERS)
    return (
        "No model provider is set up. Do one of these, then start agent-tui again:\n\n"
        "Set an API key (the first one found picks the default model):\n"
        f"{keys}\n"
        "  e.g. export OPENAI_API_KEY=sk-...\n\n"
        f"Or start a local server: {servers}; its first model is used.\n"
        "  e.g. ollama serve, then ollama pull qwen3-coder\n\n"
        "Or name the model and its provider in agent-tui.json:\n"
        f"  {CONFIG_EXAMPLE}"
    )
