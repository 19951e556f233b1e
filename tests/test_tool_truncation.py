from __future__ import annotations

import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from agent_tui.config.settings import TruncationConfig
from agent_tui.tool.truncation import (
    count_lines,
    cut_utf8,
    truncate_output,
    truncate_output_async,
)

HINT_END = (
    "Use the read tool with offset/limit to view specific sections, or grep to search the "
    "full content."
)


def test_output_within_limits_is_unchanged(tmp_path: Path) -> None:
    text = "line\n" * 10
    out, meta = truncate_output(text, TruncationConfig(), tmp_path / "out")
    assert out == text
    assert meta == {"truncated": False}
    assert not (tmp_path / "out").exists()


def test_exactly_at_limits_is_not_truncated(tmp_path: Path) -> None:
    config = TruncationConfig(max_lines=3, max_bytes=6)
    out, meta = truncate_output("a\nb\nc\n", config, tmp_path)
    assert meta == {"truncated": False}
    assert out == "a\nb\nc\n"


def test_too_many_lines_keeps_head_and_saves_everything(tmp_path: Path) -> None:
    text = "".join(f"line {i}\n" for i in range(1, 5001))
    out, meta = truncate_output(text, TruncationConfig(max_lines=100), tmp_path / "out")
    assert meta["truncated"] is True
    assert meta["total_lines"] == 5000
    assert meta["total_bytes"] == len(text.encode())
    saved = Path(meta["output_path"])
    assert saved.parent == tmp_path / "out"
    assert saved.name.startswith("tool_") and saved.suffix == ".txt"
    assert saved.read_text() == text
    assert out.startswith("line 1\nline 2\n")
    assert "line 100\n" in out and "line 101\n" not in out
    assert "... 4900 lines truncated ..." in out
    assert (
        f"The tool call succeeded but the output was truncated. Full output saved to: {saved}"
        in out
    )
    assert out.endswith(HINT_END)


def test_too_many_bytes_cuts_at_a_line(tmp_path: Path) -> None:
    text = "x" * 99 + "\n"
    text *= 100  # 100 lines of 100 bytes
    out, meta = truncate_output(text, TruncationConfig(max_bytes=1050), tmp_path)
    assert meta["truncated"] is True
    preview = out.split("\n\n...")[0]
    assert preview == "\n".join(["x" * 99] * 10)
    assert "... 90 lines truncated ..." in out


def test_tail_direction_keeps_the_end(tmp_path: Path) -> None:
    text = "".join(f"line {i}\n" for i in range(1, 1001))
    out, meta = truncate_output(text, TruncationConfig(max_lines=5), tmp_path, direction="tail")
    assert out.startswith("... 995 lines truncated ...\n\nline 996\n")
    assert "line 1000\n\nThe tool call succeeded" in out
    assert "line 995\n" not in out
    assert Path(meta["output_path"]).read_text() == text


def test_a_single_huge_line_is_cut_without_splitting_characters(tmp_path: Path) -> None:
    text = "é" * 10_000  # 2 bytes each
    config = TruncationConfig(max_bytes=1001)
    for direction in ("head", "tail"):
        out, meta = truncate_output(text, config, tmp_path, direction=direction)
        assert meta["truncated"] is True
        preview = out.split("\n\n")[0 if direction == "head" else 1]
        assert preview == "é" * 500
        assert "line was cut to 1001 bytes" in out


def test_count_lines() -> None:
    assert count_lines("") == 0
    assert count_lines("a") == 1
    assert count_lines("a\n") == 1
    assert count_lines("a\nb") == 2
    assert count_lines("\n\n") == 2


@given(st.text(), st.integers(min_value=1, max_value=64), st.booleans())
def test_cut_utf8_fits_and_keeps_whole_characters(text: str, limit: int, from_end: bool) -> None:
    cut = cut_utf8(text, limit, from_end=from_end)
    assert len(cut.encode("utf-8", "surrogatepass")) <= limit
    assert text.endswith(cut) if from_end else text.startswith(cut)
    # Maximal: one more character would not fit.
    if len(cut) < len(text):
        extra = text[-len(cut) - 1] if from_end else text[len(cut)]
        assert len((cut + extra).encode("utf-8", "surrogatepass")) > limit


async def test_100_mb_output_is_handled_quickly(tmp_path: Path) -> None:
    line = "0123456789" * 9 + "abcdefghi\n"  # 100 bytes
    text = line * 1_000_000  # 100 MB, 1,000,000 lines
    start = time.perf_counter()
    out, meta = await truncate_output_async(text, TruncationConfig(), tmp_path)
    elapsed = time.perf_counter() - start
    assert meta["truncated"] is True
    assert meta["total_lines"] == 1_000_000
    assert meta["total_bytes"] == 100_000_000
    assert Path(meta["output_path"]).stat().st_size <= TruncationConfig().max_saved_bytes
    assert len(out.encode()) < 60 * 1024
    assert "lines truncated" in out
    assert elapsed < 10, f"took {elapsed:.1f}s"


async def test_async_wrapper_small_output(tmp_path: Path) -> None:
    out, meta = await truncate_output_async("hello", TruncationConfig(), tmp_path)
    assert (out, meta) == ("hello", {"truncated": False})
    out, meta = await truncate_output_async("a\nb\nc", TruncationConfig(max_lines=2), tmp_path)
    assert meta["truncated"] is True
    assert out.startswith("a\nb\n\n... 1 lines truncated ...")
