"""Where no server tells its window, the first overflow error does ("Requested tokens (N)
exceed context window of M", llama.cpp's n_ctx, vLLM's and LM Studio's sentences) — also
inside a 200 stream. The window is remembered per model and server in the data dir, the
conversation is compacted and the question retried once; the next process knows it from
the start and compacts before the server would refuse."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_tui import paths
from agent_tui.config.settings import Config, ModelConfig, ModelLimit, ProviderConfig
from agent_tui.provider import windows
from agent_tui.provider.provider_errors import window_from_text
from agent_tui.provider.window_store import read_store, window_key
from tests.conftest import forget_windows, write_config
from tests.engine_helpers import is_summary_request, run_cli, text_of
from tests.fake_local import FakeLocal, prompt_tokens
from tests.fake_openai import Text
from tests.process_helpers import agent_tui_argv

LOCAL = "openai/local-model"
NOTE = "A long note. " * 460  # ~6,000 characters: ~1,500 tokens as the server counts


def reply(body: dict[str, Any]) -> Text:
    if is_summary_request(body) or "Summarise" in text_of(body["messages"][-1]):
        return Text("SUMMARY: the person sent long notes and asked for acknowledgements.")
    return Text(f"ack {len(body['messages'])}")


def local_config(project: Path, server: FakeLocal, **overrides: Any) -> None:
    write_config(
        project,
        server,
        model=LOCAL,
        provider={"openai": {"api_base": server.base_url}},
        **overrides,
    )


def assistants(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    _, out, _ = run_cli(capsys, "sessions", "--json")
    _, out, _ = run_cli(capsys, "export", json.loads(out)[0]["id"])
    return [m["info"] for m in json.loads(out)["messages"] if m["info"]["role"] == "assistant"]


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("Requested tokens (7233) exceed context window of 4096", 4096),
        ("This model's maximum context length is 8192 tokens. However, you requested 9000", 8192),
        ("the model is loaded with context length of only 4096 tokens, which is not enough", 4096),
        ("the request exceeds the available context size (16384 tokens)", 16384),
        ('{"type": "exceed_context_size_error", "n_prompt_tokens": 7233, "n_ctx": 4096}', 4096),
        ("prompt is too long: 210000 tokens > 200000 maximum", 200_000),
        ("the request exceeds the available context size, try increasing it", None),
        ("Rate limit reached for 128000 tokens per minute", None),
    ],
)
def test_the_window_is_read_from_the_error_text(text: str, window: int | None) -> None:
    assert window_from_text(text) == window


def test_learned_inside_a_200_stream_then_compacted_retried_and_remembered(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeLocal("llama-cpp-python", overflow="stream", n_ctx=1_000_000) as server:
        local_config(isolated, server)
        server.responder = reply
        code, _, err = run_cli(capsys, "run", f"first: {NOTE}")
        assert code == 0, err
        assert 'Set models."openai/local-model".limit.context' in err  # unknown so far
        # The server's window: the second note fits, the third does not.
        note = prompt_tokens({"messages": [{"role": "user", "content": NOTE}]})
        server.n_ctx = prompt_tokens(server.requests[-1]) + 2 * note
        code, _, err = run_cli(capsys, "run", "--continue", f"second: {NOTE}")
        assert code == 0, err and server.overflows == 0

        code, out, err = run_cli(capsys, "run", "--continue", f"third: {NOTE}")
        assert code == 0, err
        assert server.overflows == 1
        assert (
            f"The server says the context window of {LOCAL} is {server.n_ctx:,} tokens; "
            "remembered for the next runs"
        ) in err
        assert "Compacting the conversation" in err
        assert "ack" in out
        summaries = [
            b
            for b in server.requests
            if is_summary_request(b) or "Summarise" in text_of(b["messages"][-1])
        ]
        assert summaries, "the conversation was summarised"
        retried = server.requests[-1]
        assert "third: A long note." in json.dumps(retried["messages"])  # the question again
        assert prompt_tokens(retried) <= server.n_ctx

        stored = read_store(paths.data_dir() / "windows.json").windows
        assert stored[window_key(LOCAL, server.base_url)].context == server.n_ctx
        assert "exceed context window of" in stored[window_key(LOCAL, server.base_url)].detail
        assert assistants(capsys)[-1]["context_limit"] == server.n_ctx

        # Another process knows the window from its first request: context % at once.
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        done = subprocess.run(
            agent_tui_argv("run", "--continue", "fourth: short"),
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "unknown" not in done.stderr and "The server says" not in done.stderr
        fourth = assistants(capsys)[-1]
        assert fourth["context_limit"] == server.n_ctx and fourth["context_usable"] > 0

        # And it compacts before the server would refuse: no overflow reaches it again.
        forget_windows()  # as a fresh process would start
        requests_before = len(server.requests)
        for n in range(3):
            code, _, err = run_cli(capsys, "run", "--continue", f"note {n}: {NOTE}")
            assert code == 0, err
        assert server.overflows == 1
        later = server.requests[requests_before:]
        assert any(
            is_summary_request(b) or "Summarise" in text_of(b["messages"][-1]) for b in later
        )
        assert all(prompt_tokens(b) <= server.n_ctx for b in later)


@pytest.mark.parametrize("kind", ["llama.cpp", "vllm", "lmstudio"])
def test_a_400_overflow_names_the_window_too(
    isolated: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """Servers that refuse before streaming (their probes are off here: the config names
    no window and the server answers none of the questions)."""
    with FakeLocal(kind, n_ctx=1_000_000) as server:  # type: ignore[arg-type]
        server.get_route = lambda path: None  # type: ignore[method-assign]
        local_config(isolated, server)
        server.responder = reply
        code, _, err = run_cli(capsys, "run", f"first: {NOTE}")
        assert code == 0, err
        server.n_ctx = (
            prompt_tokens(server.requests[-1])
            + prompt_tokens({"messages": [{"role": "user", "content": NOTE}]}) // 2
        )
        code, _, err = run_cli(capsys, "run", "--continue", f"second: {NOTE}")
        assert code == 0, err
        assert server.overflows == 1
        assert f"context window of {LOCAL} is {server.n_ctx:,} tokens" in err
        stored = read_store(paths.data_dir() / "windows.json").windows
        assert stored[window_key(LOCAL, server.base_url)].context == server.n_ctx


async def test_learning_never_overrides_the_config_nor_grows_a_window(isolated: Path) -> None:
    base = "http://127.0.0.1:9/v1"
    config = Config(model=LOCAL, provider={"openai": ProviderConfig(api_base=base)})
    assert await windows.learn_window(LOCAL, config, 8192, "exceed context window of 8192")
    assert not await windows.learn_window(LOCAL, config, 16384)  # not smaller: nothing new
    assert await windows.learn_window(LOCAL, config, 4096)
    found = windows.known_window(LOCAL, config)
    assert found is not None and found.context == 4096
    configured = Config(
        model=LOCAL,
        provider={"openai": ProviderConfig(api_base=base)},
        models={LOCAL: ModelConfig(limit=ModelLimit(context=32_000))},
    )
    assert not await windows.learn_window(LOCAL, configured, 2048)
    assert windows.known_window(LOCAL, configured) is None
    # Per server: the same model id elsewhere knows nothing of it.
    other = Config(model=LOCAL, provider={"openai": ProviderConfig(api_base="http://h:1/v1")})
    assert windows.known_window(LOCAL, other) is None


def test_a_model_that_counts_more_tokens_is_compacted_before_it_overflows(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SmolLM2 on llama-cpp-python made ~1.7x the tokens tiktoken counts, and a request
    over its window only ends the stream (no finish, no reason). The last step's reported
    prompt tells how the server counts: the next request is sized by that measure, so the
    conversation is compacted before a request the server would cut."""
    from agent_tui.budget.overflow import usable_tokens
    from agent_tui.config.settings import CompactionConfig
    from agent_tui.step.request import estimate_tokens

    with FakeLocal(
        "llama-cpp-python", overflow="silent", n_ctx=1_000_000, token_scale=1.7
    ) as server:
        server.responder = reply
        local_config(isolated, server)
        for n in range(3):
            code, _, err = run_cli(
                capsys, "run", *(["--continue"] if n else []), f"note {n}: {NOTE}"
            )
            assert code == 0, err
        used = server.prompt_tokens(server.requests[-1]) + 50  # its prompt and the answer
        question = f"note 3: {NOTE}"
        local = estimate_tokens([{"role": "user", "content": question}], [], LOCAL)
        # A window the next request fits by the local count, and not by the server's.
        output = 64
        usable = used + local + 200
        window = usable + output
        assert (
            usable_tokens(ModelLimit(context=window, output=output), CompactionConfig()) == usable
        )
        assert used + int(local * 1.7) > window
        server.n_ctx = window
        local_config(
            isolated, server, models={LOCAL: {"limit": {"context": window, "output": output}}}
        )
        before = len(server.requests)
        code, out, err = run_cli(capsys, "run", "--continue", question)
        assert code == 0, err
        assert server.overflows == 0  # never sent a request the server would cut
        later = server.requests[before:]
        assert any(is_summary_request(b) for b in later), "compacted first"
        assert "note 3: A long note." in json.dumps(later[-1]["messages"])
        assert all(server.prompt_tokens(b) <= window for b in later)
        assert "ack" in out


def test_a_silent_overflow_is_an_error_that_names_the_key(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """llama-cpp-python 0.3.36 over its window: 200, then the stream ends, the reason only
    in its log. Not an empty success: retried, then exit 1 with the key to set."""
    with FakeLocal("llama-cpp-python", n_ctx=1_000) as server:
        local_config(
            isolated, server, retry={"max_attempts": 2, "initial_delay": 0.01, "max_delay": 0.05}
        )
        code, out, err = run_cli(capsys, "run", f"too long: {NOTE}")
        assert code == 1
        assert server.overflows == 2  # retried once, as a dropped connection is
        assert "ended without a finish reason, after no text and no tool call" in err
        assert f'set models."{LOCAL}".limit.context' in err
        assert out.strip() == ""
