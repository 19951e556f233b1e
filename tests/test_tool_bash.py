from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import tracemalloc
from pathlib import Path

import pytest

from agent_tui.config.settings import TruncationConfig
from agent_tui.errors import PermissionDenied, ToolError
from agent_tui.events import BackgroundCommand
from agent_tui.tool import bash as bash_module
from agent_tui.tool.background_lines import ending, killed_by
from agent_tui.tool.base import ToolContext
from agent_tui.tool.bash import BashParams, BashTool


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir()
    return ToolContext("ses_test", "msg_test", "call_test", work, tmp_path / "tool-output")


async def run(ctx: ToolContext, command: str, **kwargs: object):
    return await BashTool().execute(BashParams(command=command, **kwargs), ctx)


needs_pidfd = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs Linux pidfd")


async def is_gone(pid: int, within: float = 5.0) -> bool:
    """True once `pid` has terminated (awaited through a pidfd: no polling).

    A process that got SIGKILL still needs a moment of CPU to die; `within` bounds that.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    loop.add_reader(fd, lambda: ended.done() or ended.set_result(None))
    try:
        await asyncio.wait_for(ended, within)
        return True
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def read_pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


async def wait_for_fifo(path: Path) -> str:
    """Block (in a thread) until the command writes to the FIFO: no sleeping, no polling."""
    return await asyncio.to_thread(path.read_text)


async def test_combined_output_and_exit_code(ctx: ToolContext) -> None:
    result = await run(ctx, "echo out; echo err >&2; echo out2; exit 3")
    assert result.output.splitlines()[:3] == ["out", "err", "out2"]
    assert result.output.endswith("Exit code: 3")
    assert result.metadata["exit_code"] == 3
    assert result.title == "echo out; echo err >&2; echo out2; exit 3"


async def test_success_has_no_exit_code_line(ctx: ToolContext) -> None:
    result = await run(ctx, "echo hello", description="Say hello")
    assert result.output == "hello"
    assert result.metadata["exit_code"] == 0
    assert result.title == "Say hello"


async def test_no_output(ctx: ToolContext) -> None:
    result = await run(ctx, "true")
    assert result.output == "(no output)"


async def test_runs_in_working_directory_and_workdir(ctx: ToolContext) -> None:
    (ctx.directory / "sub").mkdir()
    result = await run(ctx, "pwd")
    assert result.output == str(ctx.directory)
    result = await run(ctx, "pwd", workdir="sub")
    assert result.output == str((ctx.directory / "sub").resolve())


async def test_workdir_outside_needs_permission(ctx: ToolContext) -> None:
    with pytest.raises(PermissionDenied):
        await run(ctx, "pwd", workdir="..")


async def test_missing_workdir(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        await run(ctx, "pwd", workdir="nope")


async def test_stdin_is_closed(ctx: ToolContext) -> None:
    result = await run(ctx, "cat; echo done")
    assert result.output == "done"


async def test_non_utf8_output_is_replaced(ctx: ToolContext) -> None:
    result = await run(ctx, r"printf 'ok \xff\xfe end'")
    assert result.output == "ok \ufffd\ufffd end"


async def test_killed_by_signal(ctx: ToolContext) -> None:
    result = await run(ctx, "kill -9 $$")
    assert result.metadata["exit_code"] == -9
    assert "Command was killed by SIGKILL.\nExit code: -9" in result.output


def test_how_a_signal_ending_is_worded() -> None:
    ended = {"status": "exited", "command": "x", "started": 0, "output_path": "out"}
    assert ending(BackgroundCommand(id="b1", exit_code=-15, **ended)) == "killed by SIGTERM"
    assert ending(BackgroundCommand(id="b2", exit_code=2, **ended)) == "exit 2"
    assert killed_by(-99) == "killed by signal 99"


@needs_pidfd
async def test_timeout_kills_the_whole_process_group(ctx: ToolContext, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    command = f"echo started; sleep 30 & echo $! >> {pids}; sleep 30 & echo $! >> {pids}; wait"
    start = time.monotonic()
    result = await run(ctx, command, timeout=500)
    assert time.monotonic() - start < 5
    assert result.metadata["timed_out"] is True
    assert result.output.startswith("started")
    assert "Command timed out after 500 ms" in result.output
    children = read_pids(pids)
    assert len(children) == 2
    assert all([await is_gone(pid) for pid in children])


@needs_pidfd
async def test_sigkill_after_grace_when_sigterm_is_ignored(
    ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bash_module, "KILL_GRACE_SECONDS", 0.2)
    pids = tmp_path / "pids"
    result = await run(ctx, f"trap '' TERM; sleep 30 & echo $! > {pids}; wait", timeout=300)
    assert result.metadata["timed_out"] is True
    assert all([await is_gone(pid) for pid in read_pids(pids)])


@needs_pidfd
async def test_abort_kills_and_keeps_partial_output(ctx: ToolContext, tmp_path: Path) -> None:
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    pids = tmp_path / "pids"
    command = f"echo partial output; sleep 30 & echo $! > {pids}; echo go > {fifo}; wait"
    task = asyncio.create_task(run(ctx, command))
    assert await wait_for_fifo(fifo) == "go\n"
    ctx.abort.set()
    result = await asyncio.wait_for(task, 10)
    assert result.metadata["interrupted"] is True
    assert "timed_out" not in result.metadata
    assert result.output.startswith("partial output")
    assert "Command was interrupted" in result.output
    assert all([await is_gone(pid) for pid in read_pids(pids)])


async def test_abort_already_set(ctx: ToolContext) -> None:
    ctx.abort.set()
    start = time.monotonic()
    result = await run(ctx, "sleep 30")
    assert time.monotonic() - start < 5
    assert result.metadata["interrupted"] is True


@needs_pidfd
async def test_cancelling_the_call_kills_the_group(ctx: ToolContext, tmp_path: Path) -> None:
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    pids = tmp_path / "pids"
    task = asyncio.create_task(run(ctx, f"sleep 30 & echo $! > {pids}; echo go > {fifo}; wait"))
    await wait_for_fifo(fifo)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert all([await is_gone(pid) for pid in read_pids(pids)])


async def test_background_job_holding_the_pipe_does_not_hang(
    ctx: ToolContext, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    start = time.monotonic()
    result = await run(ctx, f"sleep 30 & echo $! > {pids}; echo done")
    try:
        assert time.monotonic() - start < 5
        assert result.output == "done"
        assert result.metadata["exit_code"] == 0
    finally:
        for pid in read_pids(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def test_long_output_keeps_the_tail_and_saves_everything(ctx: ToolContext) -> None:
    result = await run(ctx, "seq 1 100000")
    assert result.metadata["truncated"] is True
    assert result.metadata["total_lines"] == 100000
    assert result.output.startswith("... 98000 lines truncated ...")
    assert "\n100000\n" in result.output
    saved = Path(result.metadata["output_path"])
    assert saved.parent == ctx.output_dir
    assert saved.read_text() == "".join(f"{i}\n" for i in range(1, 100001))
    assert "Full output saved to: " + str(saved) in result.output


async def test_exit_code_survives_truncation(ctx: ToolContext) -> None:
    ctx.truncation = TruncationConfig(max_lines=10)
    result = await run(ctx, "seq 1 100; exit 2")
    assert result.metadata["truncated"] is True
    assert result.output.endswith("Exit code: 2")


async def test_100_mb_of_output_is_truncated_saved_and_memory_bounded(ctx: ToolContext) -> None:
    tracemalloc.start()
    try:
        result = await run(ctx, r"head -c 100000000 /dev/zero | tr '\0' 'a'; echo; echo the end")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * 1024 * 1024, f"peak Python memory {peak / 1e6:.0f} MB"
    assert result.metadata["truncated"] is True
    assert result.metadata["total_bytes"] == 100_000_000 + 9
    assert result.metadata["total_lines"] == 2
    assert len(result.output.encode()) < 60 * 1024
    assert "the end" in result.output
    saved = Path(result.metadata["output_path"])
    assert saved.stat().st_size <= ctx.truncation.max_saved_bytes  # head and tail, 50 MB
    with saved.open("rb") as handle:
        assert handle.read(10) == b"a" * 10
        handle.seek(-9, os.SEEK_END)
        assert handle.read() == b"\nthe end\n"
    assert b"cut from the middle of this 95.4 MB output" in saved.read_bytes()
    assert "The tool call succeeded but the output was truncated" in result.output


def test_describe_and_schema() -> None:
    tool = BashTool()
    ctx = ToolContext("s", "m", "c", Path("/tmp"), Path("/tmp/out"))
    assert tool.describe(BashParams(command="ls -la"), ctx) == ("ls -la", "ls -la")
    schema = tool.definition()["function"]["parameters"]
    assert schema["properties"]["timeout"]["maximum"] == 600_000
    assert tool.default_permission == "ask"
