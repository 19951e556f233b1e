"""Offline token counting: tiktoken where an encoding is on disk, else a calibrated estimate.

tiktoken downloads its encodings on first use. We never let it: the BPE files are looked
up in tiktoken's own cache (TIKTOKEN_CACHE_DIR, DATA_GYM_CACHE_DIR, the temp-dir default)
and in the copy litellm ships (found without importing litellm, which costs seconds).
Provider usage stays the truth for what was actually sent; these counts are for budgets
(prune, overflow checks before a request) and for display.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import math
import os
import re
import tempfile
import types
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tiktoken import Encoding

O200K = "o200k_base"
CL100K = "cl100k_base"
P50K = "p50k_base"

# Models on the older OpenAI tokenizers; every other model (gpt-4o/4.1/5, o-series,
# Claude, Gemini, DeepSeek, Qwen, ...) is counted with o200k, the closest modern match.
_CL100K_MODELS = re.compile(
    r"^(gpt-4(?![o.])|gpt-3\.5|gpt-35|text-embedding-(ada|3)|davinci-002|babbage-002)"
)
_P50K_MODELS = re.compile(r"^(text-davinci-00[23]|code-(davinci|cushman))")

LARGE_TEXT_CHARS = 1_000_000  # above this, count evenly spaced samples and scale up
SAMPLE_WINDOWS = 8
SAMPLE_WINDOW_CHARS = 32_000

MEMO_MIN_CHARS = 256  # shorter texts are cheaper to count than to look up
MEMO_ENTRIES = 20_000


def encoding_for_model(model: str) -> str:
    """The tiktoken encoding that best approximates `model`'s tokenizer."""
    name = model.strip().lower().rsplit("/", 1)[-1].removeprefix("ft:")
    if _CL100K_MODELS.match(name):
        return CL100K
    if _P50K_MODELS.match(name):
        return P50K
    return O200K


class TokenCounter:
    """Counts tokens of text for one encoding; `exact` is False when estimating."""

    __slots__ = ("_encoding", "_memo", "encoding_name", "exact")

    def __init__(self, encoding_name: str, encoding: Encoding | None) -> None:
        self.encoding_name = encoding_name
        self._encoding = encoding
        self._memo: OrderedDict[str, int] = OrderedDict()
        self.exact = encoding is not None

    def count(self, text: str) -> int:
        """Tokens in `text`; special-token strings count as ordinary text.

        Exact for texts up to LARGE_TEXT_CHARS; beyond that, sampled to bound the time.
        Long texts are memoised: the loop and prune count the same tool outputs each step.
        """
        if not text:
            return 0
        if len(text) < MEMO_MIN_CHARS:
            return self._count(text)
        if (cached := self._memo.get(text)) is not None:
            self._memo.move_to_end(text)
            return cached
        tokens = self._count(text)
        self._memo[text] = tokens
        if len(self._memo) > MEMO_ENTRIES:
            self._memo.popitem(last=False)
        return tokens

    def _count(self, text: str) -> int:
        if self._encoding is None:
            return estimate_tokens(text, self.encoding_name)
        if len(text) <= LARGE_TEXT_CHARS:
            return len(self._encoding.encode_ordinary(text))
        return _sampled_count(self._encoding, text)

    def __repr__(self) -> str:
        kind = "exact" if self.exact else "estimate"
        return f"TokenCounter({self.encoding_name!r}, {kind})"


def counter_for(model: str) -> TokenCounter:
    """The (cached) counter for `model`; loads its encoding on first use."""
    return _counter(encoding_for_model(model))


def count_tokens(text: str, model: str) -> int:
    """Tokens `model` would see for `text` (exact when a tokenizer is available offline)."""
    return counter_for(model).count(text)


def counter_ready(model: str) -> bool:
    """Whether `model`'s counter is loaded, so counting costs no encoding load."""
    return encoding_for_model(model) in _loaded


_loaded: set[str] = set()


@functools.cache  # one counter (and encoding load) per encoding
def _counter(encoding_name: str) -> TokenCounter:
    counter = TokenCounter(encoding_name, _load_encoding(encoding_name))
    _loaded.add(encoding_name)
    return counter


def _sampled_count(encoding: Encoding, text: str) -> int:
    step = len(text) // SAMPLE_WINDOWS
    windows = [text[i * step : i * step + SAMPLE_WINDOW_CHARS] for i in range(SAMPLE_WINDOWS)]
    sampled_chars = sum(len(window) for window in windows)
    sampled_tokens = sum(len(encoding.encode_ordinary(window)) for window in windows)
    return round(sampled_tokens * len(text) / sampled_chars)


# -- loading encodings without the network -----------------------------------------------


class _BlobMissing(Exception):
    """No verified local copy of an encoding file."""


def _load_encoding(name: str) -> Encoding | None:
    """The tiktoken Encoding `name` built from local files only, or None."""
    try:
        import tiktoken
        from tiktoken_ext import openai_public
    except ImportError:
        return None
    loaded = getattr(getattr(tiktoken, "registry", None), "ENCODINGS", {}).get(name)
    if loaded is not None:  # someone (e.g. litellm) already built it: share the memory
        return loaded
    if (constructor := getattr(openai_public, name, None)) is None:
        return None
    try:
        return tiktoken.Encoding(**_offline(constructor)())
    except (_BlobMissing, OSError, ValueError):
        return None


def _offline(constructor: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    """A copy of a tiktoken_ext constructor whose file loaders read local files only.

    The constructor keeps supplying tiktoken's own pattern, special tokens, blob URL and
    expected sha256, so nothing is copied here that could drift from tiktoken.
    """
    globals_ = {
        **constructor.__globals__,
        "load_tiktoken_bpe": _load_local_bpe,
        "data_gym_to_mergeable_bpe_ranks": _no_download,
    }
    return types.FunctionType(
        constructor.__code__,
        globals_,
        constructor.__name__,
        constructor.__defaults__,
        constructor.__closure__,
    )


def _no_download(*args: Any, **kwargs: Any) -> Any:
    raise _BlobMissing("this encoding needs a download")


def _load_local_bpe(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
    data = _read_local_blob(url, expected_hash)
    return {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }


def _read_local_blob(url: str, expected_hash: str | None) -> bytes:
    """The first verified copy of `url` in tiktoken's cache layout (file name = sha1(url))."""
    key = hashlib.sha1(url.encode()).hexdigest()
    for folder in _blob_dirs():
        try:
            data = (folder / key).read_bytes()
        except OSError:
            continue
        if expected_hash is None or hashlib.sha256(data).hexdigest() == expected_hash:
            return data
    raise _BlobMissing(url)


def _blob_dirs() -> list[Path]:
    folders = [os.environ.get(var) for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")]
    folders.append(os.path.join(tempfile.gettempdir(), "data-gym-cache"))
    shipped = _litellm_tokenizers_dir()
    return [Path(folder) for folder in folders if folder] + ([shipped] if shipped else [])


def _litellm_tokenizers_dir() -> Path | None:
    """litellm's bundled tiktoken files, located without importing litellm."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    for location in (spec and spec.submodule_search_locations) or []:
        folder = Path(location) / "litellm_core_utils" / "tokenizers"
        if folder.is_dir():
            return folder
    return None


# -- the estimate used when no encoding can be loaded -------------------------------------

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
# One alternative per kind of piece, in the spirit of tiktoken's pre-tokenizer pattern.
_PIECES = re.compile(rf"([{_CJK}])|([^\W\d_{_CJK}]+)|(\d+)|(\n+)|([^\w\s]+|_+)|([ \t]{{2,}})")
_SLOTS = {1: 0, 2: 1, 3: 3, 4: 4, 5: 5, 6: 7}
"""Where each alternative of _PIECES counts in the list `_Weights.apply` reads."""


@dataclass(frozen=True)
class _Weights:
    """Tokens per piece, fitted by least squares on ~480 samples of 4 KB (Markdown docs,
    Python, JavaScript) plus Chinese prose against the real encodings; mean error
    within 3 %, 80 % of samples within 15 %."""

    cjk_char: float
    word: float = 0.46
    letter_after_first: float = 0.137
    digit_group: float = 1.0  # tiktoken splits numbers into groups of up to 3 digits
    newline_run: float = 0.75
    punct_run: float = 0.72
    punct_after_first: float = 0.39
    space_run: float = 0.42  # indentation; single spaces merge into the next word

    def apply(self, counts: list[int]) -> float:
        cjk, words, extra_letters, digit_groups, newlines, puncts, extra_puncts, spaces = counts
        return (
            cjk * self.cjk_char
            + words * self.word
            + extra_letters * self.letter_after_first
            + digit_groups * self.digit_group
            + newlines * self.newline_run
            + puncts * self.punct_run
            + extra_puncts * self.punct_after_first
            + spaces * self.space_run
        )


_WEIGHTS = {
    O200K: _Weights(cjk_char=0.74),
    CL100K: _Weights(cjk_char=1.09),
    P50K: _Weights(cjk_char=2.0),
}


def estimate_tokens(text: str, encoding_name: str = O200K) -> int:
    """A tokenizer-free estimate of tokens in `text`.

    Counts pieces the way tiktoken's pre-tokenizer splits text: CJK characters (about
    0.75 token each for o200k, 1.1 for cl100k; chars/4 would undercount Chinese 3-fold),
    words by length, digit groups, punctuation runs, newlines and indentation.
    """
    counts = [0] * 8
    for match in _PIECES.finditer(text):
        kind, length = match.lastindex or 0, len(match.group())
        slot = _SLOTS[kind]
        counts[slot] += math.ceil(length / 3) if kind == 3 else 1  # digits: groups of 3
        if kind in (2, 5):  # a word's letters, a punctuation run's marks, after the first
            counts[slot + 1] += length - 1
    return max(1, round(_WEIGHTS.get(encoding_name, _WEIGHTS[O200K]).apply(counts)))
