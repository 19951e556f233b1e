"""The model when the config names none: keys present (environment or config file) in
order, else a local server answering on 127.0.0.1, else a clear message saying what to set."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agent_tui.config.settings import DEFAULT_MODEL, load_config
from agent_tui.errors import ConfigError
from agent_tui.provider import defaults
from agent_tui.provider.auth import check_credentials, credentials
from agent_tui.provider.defaults import (
    PROVIDERS,
    LocalServer,
    choose_model,
    context_window,
    model_catalog,
    setup_text,
)
from tests.engine_helpers import run_cli

ALL_KEYS = sorted({name for p in PROVIDERS for name in p.env})


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key from the developer's shell, and no probe of the real local ports."""
    for name in (*ALL_KEYS, "OLLAMA_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(defaults, "PROBED_SERVERS", ())


class FakeLocalServer:
    """Stands in for Ollama (`/api/tags`) and an OpenAI-compatible server (`/v1/models`)
    on a free 127.0.0.1 port; records the paths asked for."""

    def __init__(
        self,
        ollama: list[str] | None = None,
        openai: list[str] | None = None,
        answers: dict[str, Any] | None = None,
    ) -> None:
        """`answers` replaces the bodies of those paths (any JSON, `None` for `null`)."""
        self.paths: list[str] = []
        bodies = {
            "/api/tags": {"models": [{"name": n, "model": n} for n in ollama or []]},
            "/v1/models": {"object": "list", "data": [{"id": i} for i in openai or []]},
            **(answers or {}),
        }
        paths = self.paths

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paths.append(self.path)
                body = json.dumps(bodies.get(self.path, {})).encode()
                self.send_response(200 if self.path in bodies else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeLocalServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def ollama() -> Iterator[FakeLocalServer]:
    with FakeLocalServer(ollama=["qwen3-coder:30b", "llama3.2:3b"]) as server:
        yield server


def _closed_port() -> int:
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as server:
        return server.server_address[1]


# ---- keys -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "model"),
    [(name, p.model) for p in PROVIDERS for name in p.env],
)
async def test_each_providers_key_picks_its_default(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, variable: str, model: str
) -> None:
    monkeypatch.setenv(variable, "sk-test")
    config = load_config()
    choice = await choose_model(config)
    assert (choice.model, choice.source, choice.detail) == (model, "key", f"${variable}")
    assert config.model == model
    assert context_window(model, config) > 0  # the window is known, so context % works


async def test_the_order_of_providers_decides(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "d")
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    assert (await choose_model(load_config())).model == "openai/gpt-5.4"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a")
    assert (await choose_model(load_config())).model == DEFAULT_MODEL
    assert [p.name for p in PROVIDERS][:5] == [
        "anthropic",
        "openai",
        "gemini",
        "openrouter",
        "deepseek",
    ]


async def test_a_key_in_the_config_file_counts(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = {"deepseek": {"api_key": "sk-file"}, "openai": {"api_key": "{env:UNSET_KEY}"}}
    (isolated / "agent-tui.json").write_text(json.dumps({"provider": provider}))
    monkeypatch.delenv("UNSET_KEY", raising=False)
    config = load_config()
    choice = await choose_model(config)
    # openai's `{env:UNSET_KEY}` names an unset variable: not a key.
    assert (choice.model, choice.detail) == (
        "deepseek/deepseek-v4-pro",
        "provider.deepseek.api_key",
    )
    assert credentials(choice.model, config) == (None, "sk-file")


async def test_a_configured_model_or_option_always_wins(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, ollama: FakeLocalServer
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    servers = [LocalServer("Ollama", f"http://127.0.0.1:{ollama.port}", "ollama")]
    (isolated / "agent-tui.json").write_text(json.dumps({"model": "gemini/gemini-2.5-pro"}))
    config = load_config()
    assert (await choose_model(config, servers=servers)).source == "config"
    assert config.model == "gemini/gemini-2.5-pro"
    config = load_config({"model": "xai/grok-4.3"})  # --model
    assert (await choose_model(config, servers=servers)).model == "xai/grok-4.3"
    monkeypatch.delenv("OPENAI_API_KEY")
    await choose_model(load_config(), servers=servers)
    assert ollama.paths == []  # a configured model: nothing probed


def test_every_default_is_in_litellms_model_map() -> None:
    from agent_tui.config.settings import Config
    from agent_tui.provider.limits import load_model_info

    for provider in PROVIDERS:
        if provider.limit_from is None:
            entry = defaults.model_map().get(provider.model) or defaults.model_map().get(
                provider.model.split("/", 1)[1]
            )
            assert entry and entry["mode"] == "chat", provider.model
            assert entry.get("supports_function_calling"), provider.model
        # litellm itself knows the window (OpenRouter: copied from the same model's entry).
        config = Config()
        defaults._use_provider(config, provider)
        info = asyncio.run(load_model_info(provider.model, config))
        assert info.limit.context >= 128_000, provider.model
    assert PROVIDERS[0].model == DEFAULT_MODEL


# ---- no key: a local server -------------------------------------------------------------------


async def test_no_key_finds_ollama_on_its_port(isolated: Path, ollama: FakeLocalServer) -> None:
    base = f"http://127.0.0.1:{ollama.port}"
    config = load_config()
    servers = [
        LocalServer("LM Studio", f"http://127.0.0.1:{_closed_port()}/v1", "openai"),
        LocalServer("Ollama", base, "ollama"),
    ]
    choice = await choose_model(config, servers=servers)
    assert (choice.model, choice.source) == ("ollama_chat/qwen3-coder:30b", "local")
    assert ollama.paths == ["/api/tags"]
    assert credentials(choice.model, config)[0] == base  # litellm is pointed at it
    assert "ollama_chat/llama3.2:3b" in [r.id for r in model_catalog(config)]


async def test_no_key_finds_an_openai_compatible_server(isolated: Path) -> None:
    with FakeLocalServer(openai=["qwen2.5-coder-7b-instruct"]) as server:
        base = f"http://127.0.0.1:{server.port}/v1"
        config = load_config()
        choice = await choose_model(config, servers=[LocalServer("LM Studio", base, "openai")])
        assert choice.model == "openai/qwen2.5-coder-7b-instruct"
        assert server.paths == ["/v1/models"]
        assert credentials(choice.model, config)[0] == base


async def test_a_configured_base_url_without_a_model_is_asked(isolated: Path) -> None:
    with FakeLocalServer(openai=["my-model"]) as server:
        base = f"http://127.0.0.1:{server.port}/v1"
        (isolated / "agent-tui.json").write_text(
            json.dumps({"provider": {"openai": {"api_base": base}}})
        )
        config = load_config()
        assert (await choose_model(config)).model == "openai/my-model"


async def test_keys_present_mean_no_probe(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, ollama: FakeLocalServer
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "g")
    servers = [LocalServer("Ollama", f"http://127.0.0.1:{ollama.port}", "ollama")]
    assert (await choose_model(load_config(), servers=servers)).model == "groq/openai/gpt-oss-120b"
    assert ollama.paths == []


async def test_a_server_with_no_models_or_nothing_listening_is_skipped(isolated: Path) -> None:
    with FakeLocalServer(ollama=[]) as empty:
        servers = [
            LocalServer("Ollama", f"http://127.0.0.1:{empty.port}", "ollama"),
            LocalServer("llama.cpp", f"http://127.0.0.1:{_closed_port()}/v1", "openai"),
        ]
        config = load_config()
        choice = await choose_model(config, servers=servers)
    assert (choice.model, choice.source) == (DEFAULT_MODEL, "none")


async def test_a_server_answering_json_that_is_not_an_object_is_skipped(isolated: Path) -> None:
    """`null` or a list where the models' object belongs means no server there (this
    raised an AttributeError out of `choose_model`)."""
    with FakeLocalServer(answers={"/api/tags": None, "/v1/models": [1]}) as server:
        servers = [
            LocalServer("Ollama", f"http://127.0.0.1:{server.port}", "ollama"),
            LocalServer("LM Studio", f"http://127.0.0.1:{server.port}/v1", "openai"),
        ]
        config = load_config()
        choice = await choose_model(config, servers=servers)
    assert (choice.model, choice.source) == (DEFAULT_MODEL, "none")
    assert sorted(server.paths) == ["/api/tags", "/v1/models"]


# ---- nothing at all -------------------------------------------------------------------------


async def test_nothing_set_up_says_what_to_set(isolated: Path) -> None:
    config = load_config()
    choice = await choose_model(config, servers=[])
    assert choice.source == "none"
    with pytest.raises(ConfigError) as raised:
        await check_credentials(config.model, config)
    message = str(raised.value)
    assert message == setup_text()
    for needed in (*ALL_KEYS, "Ollama", "11434", "agent-tui.json", '"provider"'):
        assert needed in message
    assert len(message.splitlines()) <= 24  # one screen


def test_run_with_no_provider_exits_with_the_message(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 1
    assert out == ""
    assert "No model provider is set up" in err
    assert "OPENAI_API_KEY" in err and "ollama serve" in err and "agent-tui.json" in err
    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert json.loads(out) == []  # nothing half-saved


def test_run_with_a_configured_model_and_no_key_names_its_variable_first(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (isolated / "agent-tui.json").write_text(json.dumps({"model": "mistral/devstral-latest"}))
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 1
    first = err.splitlines()[0]
    assert "mistral" in first and "MISTRAL_API_KEY" in first
    assert "No model provider is set up" in err


async def test_a_key_for_another_provider_is_suggested(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    config = load_config({"model": "anthropic/claude-opus-4-7"})
    with pytest.raises(ConfigError, match=r"ANTHROPIC_API_KEY.*\n.*--model \(openai/gpt-5\.4\)"):
        await check_credentials(config.model, config)


class _Trickle(BaseHTTPRequestHandler):
    """A busy single-request server (llama-cpp-python while it answers someone else): it
    never finishes its headers, but keeps each read short of the client's read timeout."""

    def do_GET(self) -> None:
        self.wfile.write(b"HTTP/1.1 200 OK\r\n")
        try:
            while not self.server.stopping.is_set():  # type: ignore[attr-defined]
                self.wfile.write(b"X")
                self.wfile.flush()
                self.server.stopping.wait(0.02)  # type: ignore[attr-defined]
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def test_a_server_too_busy_to_list_its_models_is_skipped_quietly() -> None:
    """The overall deadline cancels the question: no answer, never a traceback (found
    with a real llama-cpp-python server still busy with a long request)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    server.stopping = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        busy = LocalServer("busy", f"http://127.0.0.1:{server.server_address[1]}/v1", "openai")
        assert await defaults.probe_local([busy], timeout=0.2) is None
    finally:
        server.stopping.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()
