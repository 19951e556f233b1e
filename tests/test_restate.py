"""choose_restated: the person's words a summary restates verbatim, within a budget."""

from __future__ import annotations

import pytest

from agent_tui.context import restate
from agent_tui.context.restate import MESSAGE_OVERHEAD_TOKENS, choose_restated


def test_each_text_once_newest_first_and_what_does_not_fit_is_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted: list[str] = []

    def count(text: str, model: str) -> int:
        counted.append(text)
        return len(text)

    monkeypatch.setattr(restate, "count_tokens", count)
    earlier = ["b" * 10, "a" * 50, "b" * 10, "c" * 5]
    budget = 10 + 5 + 2 * MESSAGE_OVERHEAD_TOKENS  # room for b and c, not a
    assert choose_restated([], earlier, budget, "m") == ["b" * 10, "c" * 5]
    assert sorted(counted) == sorted(["b" * 10, "a" * 50, "c" * 5])  # a repeat is not counted
