"""Offline token counting: exact with tiktoken's files on disk, calibrated otherwise."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_tui.budget import tokens
from agent_tui.budget.tokens import (
    CL100K,
    O200K,
    P50K,
    count_tokens,
    counter_for,
    encoding_for_model,
    estimate_tokens,
)

ENGLISH = (
    "Long conversations stay inside the model's context window through three layers. "
    "First, each tool output is truncated when it exceeds two thousand lines or fifty "
    "kilobytes, and the full text is saved to disk so the model can read parts of it "
    "later. Second, old tool outputs are pruned: they are marked as cleared, but nothing "
    "is deleted from the database. Third, when the history still does not fit, the model "
    "writes a summary that becomes the new start of the conversation, and the person can "
    "keep working without losing the thread of what was decided and why."
)
CHINESE = (
    "在终端中运行的编码助手需要解决一个核心问题：对话越来越长，而模型的上下文窗口是有限的。"
    "为了让长时间的会话保持可用，我们采用了三层策略。第一层是截断，每个工具的输出如果超过两千行"
    "或五十千字节，就只保留开头的一部分，并把完整内容保存到磁盘上。第二层是修剪，较早的工具输出"
    "会被标记为已清除，但不会从数据库中删除。第三层是摘要压缩，由模型写出一份总结，作为新的历史"
    "起点。春天来了，公园里的桃花和樱花都开了。孩子们在草地上放风筝，老人们坐在长椅上晒太阳、"
    "聊天。湖面上有几只白色的天鹅慢慢地游来游去，偶尔有一阵微风吹过，柳枝轻轻摇摆。"
)
CODE = '''
def prune(messages: list[Message], *, protect: int = PRUNE_PROTECT) -> list[ToolPart]:
    """Mark old tool outputs as compacted, newest first, beyond `protect` tokens."""
    total = 0
    marked: list[ToolPart] = []
    for message in reversed(messages[:-2]):
        if message.info.summary:
            break
        for part in message.parts:
            if part.type != "tool" or part.state.status != "completed":
                continue
            if part.state.time.compacted is not None:
                return marked
            total += count_tokens(part.state.output, message.info.model)
            if total > protect:
                marked.append(part)
    return marked if sum(p.size for p in marked) > PRUNE_MINIMUM else []
'''
LITELLM_TOKENIZERS = tokens._litellm_tokenizers_dir()


@pytest.fixture
def fresh_counters() -> Iterator[None]:
    """Counters built inside the test only (they are cached per encoding)."""
    tokens._counter.cache_clear()
    yield
    tokens._counter.cache_clear()


@pytest.fixture
def offline(fresh_counters: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[None]:
    """No network, empty tiktoken caches, nothing preloaded in tiktoken's registry."""
    attempts: list[tuple[Any, ...]] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("network access blocked in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    empty = tmp_path / "tiktoken-cache"
    empty.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the default cache is empty too
    import tiktoken.registry

    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    yield
    assert attempts == [], "token counting tried to reach the network"


def reference(encoding_name: str) -> Any:
    """tiktoken's own encoding, read from litellm's bundled copy (present: no download)."""
    import tiktoken.load
    from tiktoken_ext import openai_public

    assert LITELLM_TOKENIZERS is not None
    old = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(LITELLM_TOKENIZERS)
    try:
        return tiktoken.Encoding(**getattr(openai_public, encoding_name)())
    finally:
        if old is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def o200k() -> Any:
    return reference(O200K)


def within(value: float, target: float, tolerance: float) -> bool:
    return abs(value - target) <= tolerance * target


@pytest.mark.parametrize("model", ["openai/gpt-4o", "gpt-4", "text-davinci-003"])
def test_counts_exactly_with_the_network_blocked(offline: None, model: str) -> None:
    counter = counter_for(model)
    assert counter.exact
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    assert counter.count("<|endoftext|>") > 1  # special tokens count as plain text


def test_honours_a_populated_tiktoken_cache(
    offline: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    assert LITELLM_TOKENIZERS is not None
    cache = tmp_path / "populated"
    cache.mkdir()
    name = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"  # sha1 of the cl100k blob URL
    (cache / name).write_bytes((LITELLM_TOKENIZERS / name).read_bytes())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.setattr(tokens, "_litellm_tokenizers_dir", lambda: None)

    assert counter_for("gpt-3.5-turbo").exact
    assert not counter_for("gpt-4o").exact  # o200k is neither cached nor shipped here


def test_a_corrupt_cached_file_is_skipped(
    offline: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    cache = tmp_path / "corrupt"
    cache.mkdir()
    (cache / "fb374d419588a4632f3f557e76b4b70aebbca790").write_bytes(b"garbage 1\n")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    assert counter_for("gpt-4o").exact  # falls through to litellm's verified copy


def test_chinese_is_counted_like_o200k_not_like_chars_over_4(o200k: Any) -> None:
    truth = len(o200k.encode(CHINESE))
    assert within(count_tokens(CHINESE, "gpt-4o"), truth, 0.15)
    assert len(CHINESE) / 4 < truth * 0.6  # chars/4 would undercount by more than 40 %


def test_code_and_english_are_counted_like_o200k(o200k: Any) -> None:
    for text in (CODE, ENGLISH):
        assert within(
            count_tokens(text, "anthropic/claude-sonnet-4-5"), len(o200k.encode(text)), 0.15
        )


def test_very_long_text_is_sampled_close_to_exact(o200k: Any) -> None:
    text = (ENGLISH + CODE + CHINESE) * (tokens.LARGE_TEXT_CHARS // 1000)
    assert len(text) > tokens.LARGE_TEXT_CHARS
    assert within(count_tokens(text, "gpt-4o"), len(o200k.encode_ordinary(text)), 0.05)


def test_fallback_estimate_is_calibrated(
    fresh_counters: None, monkeypatch: pytest.MonkeyPatch, o200k: Any
) -> None:
    monkeypatch.setattr(tokens, "_load_encoding", lambda name: None)
    counter = counter_for("gpt-4o")
    assert not counter.exact
    for text in (ENGLISH, CHINESE, CODE):
        assert within(counter.count(text), len(o200k.encode(text)), 0.30), text[:40]


def test_fallback_estimate_for_cl100k_chinese() -> None:
    cl100k = reference(CL100K)
    assert within(estimate_tokens(CHINESE, CL100K), len(cl100k.encode(CHINESE)), 0.30)


def test_fallback_when_tiktoken_cannot_load(offline: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_litellm_tokenizers_dir", lambda: None)
    counter = counter_for("gpt-5")
    assert not counter.exact
    assert counter.count(ENGLISH) > 0


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", O200K),
        ("openai/gpt-4o-mini", O200K),
        ("gpt-4.1", O200K),
        ("gpt-5", O200K),
        ("o3-mini", O200K),
        ("anthropic/claude-sonnet-4-5", O200K),
        ("gemini/gemini-2.5-pro", O200K),
        ("deepseek/deepseek-chat", O200K),
        ("openrouter/qwen/qwen3-coder", O200K),
        ("gpt-4", CL100K),
        ("gpt-4-turbo", CL100K),
        ("openai/gpt-4-0613", CL100K),
        ("gpt-3.5-turbo", CL100K),
        ("azure/gpt-35-turbo", CL100K),
        ("text-embedding-3-small", CL100K),
        ("ft:gpt-4-0613:acme::abc", CL100K),
        ("text-davinci-003", P50K),
    ],
)
def test_encoding_by_model_family(model: str, encoding: str) -> None:
    assert encoding_for_model(model) == encoding


def test_import_is_lazy_and_never_imports_litellm() -> None:
    script = (
        "import sys\n"
        "from agent_tui.budget import tokens\n"
        "assert 'tiktoken' not in sys.modules\n"
        "assert tokens.counter_for('gpt-4o').exact\n"
        "assert 'litellm' not in sys.modules\n"
    )
    repo = Path(tokens.__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60, cwd=repo)
