"""Saved full outputs stay bounded: capped in size (head and tail kept), memory bounded
while a command prints, and deleted after `truncation.retention_days`."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_tui.config.settings import TruncationConfig
from agent_tui.redact import Redactor
from agent_tui.tool.base import ToolContext
from agent_tui.tool.bash import BashParams, BashTool
from agent_tui.tool.saved_outputs import SavedOutputWriter, cap_bytes, delete_expired, human_size
from agent_tui.tool.truncation import truncate_output
from tests.conftest import write_config
from tests.engine_helpers import open_engine, run_cli
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls

SMALL_CAP = 100_000
TOKEN = "svc-tok-0123456789-abcdef"
DAY = 24 * 60 * 60


def make_ctx(tmp_path: Path, **truncation: int) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return ToolContext(
        "ses_test",
        "msg_test",
        "call_test",
        work,
        tmp_path / "tool-output",
        truncation=TruncationConfig(**truncation),
        redact=Redactor({TOKEN: "MY_SERVICE_TOKEN"}),
    )


async def bash(ctx: ToolContext, command: str):
    return await BashTool().execute(BashParams(command=command), ctx)


@pytest.mark.parametrize("megabytes", [1, 30])  # kept in memory / streamed to the file
async def test_a_saved_output_keeps_head_and_tail_within_the_cap(
    tmp_path: Path, megabytes: int
) -> None:
    ctx = make_ctx(tmp_path, max_saved_bytes=SMALL_CAP)
    size = megabytes * 1_000_000
    result = await bash(ctx, f"echo first; head -c {size} /dev/zero | tr '\\0' x; echo; echo last")
    assert result.metadata["truncated"] is True
    assert result.metadata["total_bytes"] == size + len("first\n\nlast\n")
    saved = Path(result.metadata["output_path"])
    data = saved.read_bytes()
    assert len(data) <= SMALL_CAP
    assert data.startswith(b"first\nxxx") and data.endswith(b"xxx\nlast\n")
    total = size + len("first\n\nlast\n")
    head, line, tail = re.split(rb"(\n\[\.\.\. .* output \.\.\.\]\n)", data)
    cut = total - len(head) - len(tail)
    expected = (
        f"\n[... {human_size(cut)} cut from the middle of this {human_size(total)} output ...]\n"
    )
    assert line.decode() == expected
    assert "last" in result.output


async def test_secrets_in_a_streamed_output_are_redacted_in_the_saved_file(
    tmp_path: Path,
) -> None:
    """The secret is printed at the start, across many read-chunk boundaries, and at the
    end of a 12 MB output (past the in-memory limit, so it streams to the file)."""
    ctx = make_ctx(tmp_path)
    script = (
        "import sys\n"
        f"t = {TOKEN!r}\n"
        "w = sys.stdout.write\n"
        "w(t + '\\n')\n"
        "for i in range(12_000):\n"
        "    w('y' * (977 + i % 13) + t)\n"
        "w('\\n' + t + '\\n')\n"
    )
    (ctx.directory / "emit.py").write_text(script)
    result = await bash(ctx, "python3 emit.py")
    saved = Path(result.metadata["output_path"]).read_bytes()
    assert TOKEN.encode() not in saved
    assert saved.count(b"[REDACTED:MY_SERVICE_TOKEN]") == 12_002
    assert TOKEN not in result.output
    assert result.metadata["redacted"] == 12_002
    assert "[REDACTED:MY_SERVICE_TOKEN]" in result.output  # the tail shown to the model


async def test_200_mb_with_a_redactor_keeps_memory_bounded(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    tracemalloc.start()
    try:
        result = await bash(ctx, r"head -c 200000000 /dev/zero | tr '\0' x; echo; echo the end")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * 1024 * 1024, f"peak Python memory {peak / 1e6:.0f} MB"
    saved = Path(result.metadata["output_path"])
    assert saved.stat().st_size <= 52_428_800
    with saved.open("rb") as handle:
        assert handle.read(10) == b"x" * 10
        handle.seek(-9, os.SEEK_END)
        assert handle.read() == b"\nthe end\n"


def test_a_200_mb_output_through_the_engine_leaves_a_capped_file(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm)
    command = r"head -c 200000000 /dev/zero | tr '\0' x; echo; echo the end"
    fake_llm.script(ToolCalls([Call("bash", json.dumps({"command": command}))]), Text("ok"))
    code, _, err = run_cli(capsys, "run", "print a lot")
    assert code == 0, err
    (saved,) = (isolated.parent / "data" / "tool-output").iterdir()
    assert saved.stat().st_size <= 52_428_800  # the default truncation.max_saved_bytes
    data = saved.read_bytes()
    assert b"\n[... 140.7 MB cut from the middle of this 190.7 MB output ...]\n" in data
    assert data.endswith(b"\nthe end\n")
    sent = json.dumps(fake_llm.requests[1])
    assert "the end" in sent and str(saved) in sent


def test_truncate_output_saves_at_most_the_cap(tmp_path: Path) -> None:
    """What other tools return whole is saved by truncation.py, capped the same way."""
    text = "".join(f"ligne {i} é€😀\n" for i in range(5000))
    config = TruncationConfig(max_saved_bytes=2048)
    _, meta = truncate_output(text, config, tmp_path)
    data = Path(meta["output_path"]).read_bytes()
    assert len(data) <= 2048
    assert data.startswith(b"ligne 0 ") and data.endswith("ligne 4999 é€😀\n".encode())
    assert b"cut from the middle of this" in data
    data.decode("utf-8")  # never cut inside a character
    assert meta["total_bytes"] == len(text.encode())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(min_size=0, max_size=300), max_size=20),
    st.integers(min_value=1024, max_value=3000),
)
def test_the_writer_keeps_head_and_tail_whole_characters(
    tmp_path_factory: pytest.TempPathFactory, pieces: list[str], cap: int
) -> None:
    path = tmp_path_factory.mktemp("w") / "tool_x.txt"
    writer = SavedOutputWriter(path, cap)
    for piece in pieces:
        writer.write(piece.encode("utf-8", "surrogatepass"))
    writer.close()
    whole = "".join(pieces).encode("utf-8", "surrogatepass")
    data = path.read_bytes()
    assert writer.total == len(whole)
    assert data == cap_bytes(whole, cap)  # streaming gives what capping the whole gives
    assert len(data) <= cap
    if len(whole) <= cap:
        assert data == whole
    else:
        head, _, tail = data.partition(b"\n[... ")
        assert whole.startswith(head) and whole.endswith(tail.split(b" ...]\n", 1)[1])
        data.decode("utf-8", "surrogatepass")


@pytest.mark.parametrize("char", ["x", "é", "€", "😀"])
def test_the_writer_around_the_cap(tmp_path: Path, char: str) -> None:
    """Outputs a few bytes either side of the cap, in chunks of every size from 1 to 7."""
    cap = 1024
    width = len(char.encode())
    for count in range((cap - 8) // width, (cap + 9) // width + 1):
        text = char * count
        for step in range(1, 8):
            path = tmp_path / f"tool_{count}_{step}.txt"
            writer = SavedOutputWriter(path, cap)
            for i in range(0, count, step):
                writer.write(text[i : i + step].encode())
            writer.close()
            data = path.read_bytes()
            assert data == cap_bytes(text.encode(), cap), (count, step)
            assert len(data) <= cap
            data.decode("utf-8")


# ---- retention ----------------------------------------------------------------------


def saved_file(folder: Path, name: str, age_days: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("output\n")
    stamp = time.time() - age_days * DAY
    os.utime(path, (stamp, stamp))
    return path


async def test_old_saved_outputs_are_deleted_at_start_up(configured: FakeOpenAI) -> None:
    folder = Path(os.environ["AGENT_TUI_DATA_DIR"]) / "tool-output"
    old = saved_file(folder, "tool_01old.txt", 10)
    new = saved_file(folder, "tool_01new.txt", 1)
    other = saved_file(folder, "notes.txt", 30)  # not a saved output: never touched
    async with open_engine() as engine:
        assert await asyncio.wrap_future(engine.saved_outputs_cleanup) == 1
    assert not old.exists()
    assert new.exists() and other.exists()


async def test_retention_zero_keeps_everything(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(isolated, fake_llm, truncation={"retention_days": 0})
    folder = Path(os.environ["AGENT_TUI_DATA_DIR"]) / "tool-output"
    old = saved_file(folder, "tool_01old.txt", 400)
    async with open_engine() as engine:
        assert await asyncio.wrap_future(engine.saved_outputs_cleanup) == 0
    assert old.exists()


def test_delete_expired_without_a_folder(tmp_path: Path) -> None:
    assert delete_expired(tmp_path / "missing", 7) == 0


def test_human_sizes() -> None:
    assert human_size(512) == "512 bytes"
    assert human_size(51_200) == "50.0 KB"
    assert human_size(200_000_000) == "190.7 MB"
    assert human_size(3 * 1024**4) == "3072.0 GB"
