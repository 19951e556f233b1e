"""acp/markdown.py: a report the app lays out for a terminal, as Markdown a client shows
line for line and wraps (rendered here by markdown-it, as editors render it)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_tui.acp.markdown import laid_out
from tests.markdown_blocks import blocks, in_code

WORDS = st.text(
    alphabet=st.sampled_from("abcXYZ019_*`#-+=.)([]<>|~\\!&;:/$%'\" "), min_size=1, max_size=14
).filter(lambda word: word.strip() != "")


def _line(depth: int, columns: list[str]) -> str:
    return "  " * depth + "  ".join(" ".join(c.split()) for c in columns)


LINES = st.lists(
    st.tuples(st.integers(0, 3), st.lists(WORDS, min_size=1, max_size=3)), min_size=1, max_size=8
)


@settings(max_examples=300, deadline=None)
@given(LINES)
def test_every_line_is_shown_as_it_was_and_nothing_is_a_code_block(drawn: list) -> None:
    text = "\n".join(_line(depth, columns) for depth, columns in drawn)
    shown = blocks(laid_out(text))
    assert in_code(shown) == []
    assert shown == [" ".join(line.split()) for line in text.split("\n") if line.strip()]


def test_a_report_keeps_its_columns_lists_and_long_lines() -> None:
    report = "\n".join(
        [
            "Context for openai/test-model",
            "",
            "  System prompt          359    0.4%",
            "  __init__.py docs     2,900    2.9%",
            "  Total                3,262",
            "",
            "Sandbox: " + "a long line that a terminal wraps, " * 6 + "and a Markdown client too.",
            "Waiting for trust (`agent-tui trust`):",
            "  hooks.Stop: runs commands",
            "    - removed, 1. not a list, # not a heading, R&amp;D, <b>",
        ]
    )
    markdown = laid_out(report)
    assert "| System prompt | 359 | 0.4% |" in markdown.splitlines()
    assert "|---|--:|--:|" in markdown.splitlines()  # figures right-aligned, as in the app
    assert blocks(markdown)[-2:] == [
        "hooks.Stop: runs commands",
        "- removed, 1. not a list, # not a heading, R&amp;D, <b>",
    ]
    assert "- hooks.Stop: runs commands\n  - \\- removed" in markdown  # one level deeper
