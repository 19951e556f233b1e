"""The window of a local model is asked from its server: llama.cpp /props, Ollama
/api/show + /api/ps (with the num_ctx warning), LM Studio /api/v0/models, vLLM
/v1/models. Context % and automatic compaction are on; the notice for a window that
cannot be found names the config key."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.widgets import Static

from agent_tui.config.settings import Config, ModelConfig, ModelLimit, ProviderConfig
from agent_tui.provider import windows
from agent_tui.provider.limits import load_model_info
from agent_tui.tui.welcome_view import WelcomeView
from tests.conftest import write_config
from tests.engine_helpers import run_cli
from tests.fake_local import FakeLocal
from tests.fake_openai import Call, Text, ToolCalls
from tests.tui_helpers import open_app, wait_for

LOCAL = "openai/local-model"


def local_config(project: Path, server: FakeLocal, model: str = LOCAL, **overrides: Any) -> None:
    provider = model.split("/", 1)[0]
    base = server.root_url if provider.startswith("ollama") else server.base_url
    write_config(project, server, model=model, provider={provider: {"api_base": base}}, **overrides)


def assistants(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert code == 0
    _, out, _ = run_cli(capsys, "export", json.loads(out)[0]["id"])
    return [m["info"] for m in json.loads(out)["messages"] if m["info"]["role"] == "assistant"]


@pytest.mark.parametrize(
    ("kind", "source"),
    [
        ("llama.cpp", "llama.cpp GET /props (n_ctx)"),
        ("ollama", "Ollama GET /api/ps (num_ctx)"),
        ("lmstudio", "LM Studio GET /api/v0/models (loaded_context_length)"),
        ("vllm", "vLLM GET /v1/models (max_model_len)"),
    ],
)
def test_the_window_is_read_from_the_server(
    isolated: Path, capsys: pytest.CaptureFixture[str], kind: str, source: str
) -> None:
    with FakeLocal(kind, n_ctx=8192, model_window=8192) as server:  # type: ignore[arg-type]
        local_config(isolated, server)
        server.script(Text("hello from the local model"))
        code, out, err = run_cli(capsys, "run", "hello")
        assert code == 0, err
        assert "unknown" not in err and "num_ctx" not in err
        (info,) = assistants(capsys)
        assert info["context_limit"] == 8192
        assert info["context_usable"] == 8192 - 1024  # 1/8 kept for the answer
        code, out, _ = run_cli(capsys, "sessions", "--json")
        assert json.loads(out)[0]["context"]["percent"] is not None
        code, out, _ = run_cli(capsys, "context")
        assert f"Context window: 8,192 tokens ({source})" in out
        config = Config(model=LOCAL, provider={"openai": ProviderConfig(api_base=server.base_url)})
        info = asyncio.run(load_model_info(LOCAL, config))
        assert info.window_source == source
        assert info.limit.context == 8192


def test_ollama_below_the_model_window_warns_and_says_how_to_raise_it(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through litellm's own Ollama route (/api/chat). The model is not loaded at first:
    the running num_ctx is known once it is, and asked again at the next step."""
    (isolated / "a.txt").write_text("alpha\n")
    model = "ollama_chat/local-model"
    with FakeLocal("ollama", n_ctx=8192, model_window=32768, loaded=False) as server:
        local_config(isolated, server, model=model)
        server.script(
            ToolCalls([Call("read", json.dumps({"file_path": "a.txt"}))]), Text("It says alpha.")
        )
        code, out, err = run_cli(capsys, "run", "read a.txt")
        assert code == 0, err
        assert "It says alpha." in out
        assert "Ollama runs local-model with num_ctx 8,192" in err
        assert "below the model's own window of 32,768" in err
        assert "OLLAMA_CONTEXT_LENGTH=32768 ollama serve" in err
        assert "PARAMETER num_ctx 32768" in err
        first, second = assistants(capsys)
        assert first["context_limit"] == 32768  # not loaded yet: the model's own window
        assert second["context_limit"] == 8192  # what Ollama really gives it
        # Asked again at each step until the answer settled; then no more.
        asked = len(server.asked)
        config = Config(
            model=model, provider={"ollama_chat": ProviderConfig(api_base=server.root_url)}
        )
        assert (await_window := windows.known_window(model, config)) is not None
        assert await_window.settled and await_window.context == 8192
        assert windows.start_probe(model, config) is None and len(server.asked) == asked
    # Nothing of agent-tui's request is an OpenAI-style list: Ollama got strings.
    assert all(isinstance(m["content"], str) for b in server.requests for m in b["messages"])


def test_ollama_num_ctx_from_the_modelfile_is_used_before_the_model_is_loaded(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = "ollama_chat/local-model"
    with FakeLocal(
        "ollama", n_ctx=16384, model_window=16384, loaded=False, num_ctx_parameter=16384
    ) as server:
        local_config(isolated, server, model=model)
        code, _, err = run_cli(capsys, "run", "hello")
        assert code == 0, err
        assert "num_ctx" not in err  # the whole window: nothing to warn about
        (info,) = assistants(capsys)
        assert info["context_limit"] == 16384


def test_a_window_no_server_tells_names_the_key_to_set(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeLocal("llama-cpp-python") as server:
        local_config(isolated, server)
        code, _, err = run_cli(capsys, "run", "hello")
        assert code == 0, err
        assert 'Set models."openai/local-model".limit.context in agent-tui.json' in err
        assert f"the server at {server.base_url} did not say" in err
        assert {"GET /props", "GET /v1/models", "GET /api/v0/models/local-model"} <= set(
            server.asked
        )
        (info,) = assistants(capsys)
        assert info["context_limit"] == 0


def test_the_config_wins_and_nothing_is_asked(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeLocal("llama.cpp", n_ctx=4096) as server:
        local_config(isolated, server, models={LOCAL: {"limit": {"context": 20_000}}})
        code, _, err = run_cli(capsys, "run", "hello")
        assert code == 0, err
        assert server.asked == []
        (info,) = assistants(capsys)
        assert info["context_limit"] == 20_000


async def test_hosted_models_are_never_probed() -> None:
    config = Config(model="openai/gpt-5.4")
    assert windows.target("openai/gpt-5.4", config) is None
    assert windows.target("anthropic/claude-sonnet-4-6", config) is None
    assert windows.start_probe("openai/gpt-5.4", config) is None
    ollama = windows.target("ollama_chat/qwen3", config)
    assert ollama is not None and ollama.base == "http://localhost:11434"
    configured = Config(models={"ollama_chat/qwen3": ModelConfig(limit=ModelLimit(context=9000))})
    assert windows.start_probe("ollama_chat/qwen3", configured) is None


async def test_the_answer_is_cached(isolated: Path) -> None:
    with FakeLocal("llama.cpp", n_ctx=8192) as server:
        config = Config(model=LOCAL, provider={"openai": ProviderConfig(api_base=server.base_url)})
        first = await windows.discover_window(LOCAL, config)
        asked = len(server.asked)
        second = await windows.discover_window(LOCAL, config)
        assert first == second and first is not None and first.context == 8192
        assert len(server.asked) == asked  # asked once per process


async def test_the_app_shows_the_window_after_its_first_frame(isolated: Path) -> None:
    with FakeLocal("vllm", n_ctx=12288) as server:
        local_config(isolated, server)
        app = await open_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await app.loaded.wait()
            welcome = app.query_one(WelcomeView).query_one(Static)
            await wait_for(pilot, lambda: "12,288 tokens" in plain(welcome.content), "window")
        await app.db.close()


def plain(renderable: object) -> str:
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()
