"""Replace secrets in text by `[REDACTED:NAME]` before it is stored or sent to the model.

Two kinds of secret are found: known values (withheld environment variables and
configured provider keys, see secrets.py), labelled with their name; and strings in the
well-known key formats below, labelled with the format. No maintained detector on PyPI
fitted (detect-secrets flags lines and guesses by entropy; we need exact spans), so the
formats live here, each with a literal hint that skips its regex when the hint is absent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

MIN_SECRET_LENGTH = 8
"""Known values shorter than this are not redacted: they would hit ordinary words."""
STREAM_HOLD_CHARS = 4096
"""A stream keeps this much text back: a secret may have started in it and not ended."""
PEM_BODY_MAX_CHARS = 20_000
"""How far a private-key block may reach for its END line."""
STREAM_MAX_HOLD_CHARS = 64 * 1024
"""A match reaching further back than this is no real secret (`sk-` and 200 MB of
letters): it is released, redacted as far as it went, rather than held for ever."""


@dataclass(frozen=True)
class KeyFormat:
    name: str
    """The label: `[REDACTED:<name>]`."""
    hints: tuple[str, ...]
    """Literals one of which every match contains (a cheap test before the regex)."""
    pattern: re.Pattern[str]


KEY_FORMATS = (
    KeyFormat(
        "private-key",
        ("PRIVATE KEY-----",),
        re.compile(
            r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----"
            rf"(?:[\s\S]{{0,{PEM_BODY_MAX_CHARS}}}?-----END \1PRIVATE KEY-----"
            # No END (the output was cut): the base64 lines that follow, line numbers allowed.
            r"|(?:\s+\d*\s*[A-Za-z0-9+/=]{16,})*)"
        ),
    ),
    KeyFormat("anthropic-key", ("sk-ant-",), re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    KeyFormat("openai-key", ("sk-",), re.compile(r"\bsk-[A-Za-z0-9_-]{20,}")),
    KeyFormat(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ),
    KeyFormat("aws-access-key", ("AKIA", "ASIA"), re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    KeyFormat("slack-token", ("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    KeyFormat("google-api-key", ("AIza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    KeyFormat("stripe-key", ("k_live_",), re.compile(r"\b[rs]k_live_[0-9A-Za-z]{16,}")),
)


@dataclass(frozen=True, order=True)
class Span:
    start: int
    end: int
    name: str


class Redactor:
    """Finds and replaces secrets. `redact` returns the text and how many were replaced."""

    def __init__(self, known: Mapping[str, str] | None = None) -> None:
        """`known` maps a secret value to its name (an env variable, `provider.x.api_key`)."""
        values = {v: n for v, n in (known or {}).items() if len(v) >= MIN_SECRET_LENGTH}
        # Longest first: a value containing another is replaced whole.
        self.known = dict(sorted(values.items(), key=lambda item: -len(item[0])))
        self.longest = max((len(v) for v in self.known), default=0)

    def find(self, text: str, start_at: int = 0) -> list[Span]:
        """Non-overlapping secrets in `text`, in order; a known value wins a tie. Only
        secrets starting at `start_at` or later count: what comes before is context (a
        word boundary), and a match starting there must not hide one that starts after."""
        found: list[tuple[int, int, int, str]] = []
        for value, name in self.known.items():
            start = text.find(value, start_at)
            while start != -1:
                found.append((start, 0, -len(value), name))
                start = text.find(value, start + len(value))
        for rank, fmt in enumerate(KEY_FORMATS, start=1):
            if any(hint in text for hint in fmt.hints):
                for match in fmt.pattern.finditer(text, start_at):
                    found.append((match.start(), rank, match.start() - match.end(), fmt.name))
        spans: list[Span] = []
        end = 0
        # By start; at one start a known value first, then the formats in their order.
        for start, _, negative_length, name in sorted(found):
            if start >= end:
                end = start - negative_length
                spans.append(Span(start, end, name))
        return spans

    def redact(self, text: str) -> tuple[str, int]:
        if not text:
            return text, 0
        spans = self.find(text)
        return replace_spans(text, spans), len(spans)

    def __call__(self, text: str) -> str:
        return self.redact(text)[0]


def replace_spans(text: str, spans: list[Span]) -> str:
    pieces: list[str] = []
    pos = 0
    for span in spans:
        pieces += [text[pos : span.start], f"[REDACTED:{span.name}]"]
        pos = span.end
    return "".join([*pieces, text[pos:]])


class StreamRedactor:
    """Redacts text that arrives in pieces (a command's output): text is released only up
    to a point where no secret can straddle it."""

    def __init__(
        self,
        redactor: Redactor,
        batch_chars: int = 256 * 1024,
        hold_chars: int = STREAM_HOLD_CHARS,
    ) -> None:
        self.redactor = redactor
        self.count = 0
        self.batch_chars = batch_chars
        self._hold = max(hold_chars, redactor.longest)
        self._max_hold = max(STREAM_MAX_HOLD_CHARS, 2 * redactor.longest)
        self._pieces: list[str] = []
        self._size = 0
        self._context = ""
        """The last character released: a pattern's word boundary depends on it."""

    def feed(self, text: str) -> str:
        """Add text; return the redacted text that is safe to pass on (often empty)."""
        self._pieces.append(text)
        self._size += len(text)
        if self._size < self.batch_chars + self._hold:
            return ""
        return self._release(final=False)

    def feed_lines(self, text: str) -> str:
        """`feed` for output read while it runs (a background command's): every whole line
        is released at once; held are the line being printed and a secret reaching the end
        of the whole lines (a private key's base64 lines may follow)."""
        self._pieces.append(text)
        self._size += len(text)
        return self._release(final=False, lines=True)

    def finish(self) -> str:
        return self._release(final=True)

    def _release(self, *, final: bool, lines: bool = False) -> str:
        text = "".join(self._pieces)
        # Search with the character before the cut in front, as the whole text would be
        # (word boundaries); a match starting in it was decided on already.
        offset = len(self._context)
        spans = [
            Span(span.start - offset, span.end - offset, span.name)
            for span in self.redactor.find(self._context + text, start_at=offset)
        ]
        cut, reach = len(text) if final else max(len(text) - self._hold, 0), len(text)
        if lines and not final and text.rfind("\n") + 1 > cut:
            # Released up to the newest line end: a secret ending there may go on.
            cut = text.rfind("\n") + 1
            reach = cut - 1
        # A secret that reaches the cut (or the end: it may go on) is held back whole.
        for span in spans:
            if span.start < cut and (span.end > cut or (not final and span.end >= reach)):
                cut = span.start if len(text) - span.start <= self._max_hold else span.end
                break
        kept = [s for s in spans if s.end <= cut]
        self.count += len(kept)
        rest = text[cut:]
        self._pieces, self._size = ([rest], len(rest)) if rest else ([], 0)
        if cut:
            self._context = text[cut - 1]
        return replace_spans(text[:cut], kept)
