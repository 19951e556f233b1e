"""How the app keeps up with a fast stream, and how fast it starts. Prints figures only.

    /work/venv/bin/python bench/bench_tui.py [--full]

1. Streams a 20,000-token Markdown reply with code blocks into the headless app
   (App.run_test at 120×40) by publishing engine events (PartUpdated with deltas) from
   a timed producer, one event per token, at 200, 1,000 and 5,000 tokens/s. Direct
   events isolate the UI's cost from the provider and the database. At 200 tokens/s
   only the first 4,000 tokens are streamed unless --full (20,000 would take 100 s).
   Reported: lag between a delta's arrival and its text being committed to the Markdown
   widget (p50/p99/max), catch-up after the last delta, frame times (one screen update:
   layout + compositor + output, p50/p99/max), and key latency while streaming (a
   character typed into the input every 100 ms: until the input has it, and until the
   end of the next screen update after that, which draws it: key to screen).
2. The same stream at 1,000 tokens/s into a session that already holds 0, 150 and 1,000
   earlier messages (a real SQLite file built through the storage API and opened with
   `show_session`): the lag should not depend on the history's length.
3. Time from launch to the first drawn frame: `agent-tui` in a pseudo-terminal, until
   the prompt's placeholder is written to the terminal (3 runs); and `agent-tui
   --continue` on a session of 1,000 steps, until its newest reply is on screen.
4. Memory: 1,000 short steps streamed into the app (turns of 10 steps, each step a
   reply and a tool call): resident memory after 10 steps and after 1,000.
5. The start and keys at full stream speed, as a person sees them in a 120×36 pty
   (`--start-only` runs only these; `report_start`, tui_pty.py, tui_unthrottled.py):
   launch → first frame and → input drawn, with `import textual.app` and `import
   litellm` alone beside; keys typed while the app starts; keys typed every 100 ms
   while a 6,000-word reply streams with no delay, and the same stream headless.
6. `--reopen [STEPS]` (only this): `agent-tui --continue` on a session of STEPS steps
   (default 100) until its newest reply is drawn, beside an empty start until the input
   is drawn, 5 interleaved runs each after a warm-up: median and min; Claude Code's
   figure on the same machine comes from bench/claude_reopen.py (tui_history.py).
7. `--echo-history [STEPS]` (only this): keys typed every 100 ms while a 6,000-word
   reply streams with no delay, in an empty session and in a session that already holds
   STEPS steps (default 200, opened with --continue): median, p99 and max echo.
8. `--side-by-side` (only this): keys typed every 100 ms while a reply streams at 1,000
   tokens/s, alone and with a second session streaming the same reply beside it, off
   screen (issue 53: neither stream stalls the other).

Goals: keeps up at 1,000 tokens/s with at most 100 ms lag whatever the history; keys
on screen within 30 ms (p50) and 100 ms (p99) while streaming at 1,000 and 5,000
tokens/s; first frame under 1 s; a 1,000-step session opens within 1.3x the time of an
empty one; memory after 1,000 steps within 1.5x of after 10; input drawn ≤ 0.6 s;
key to screen at full stream speed p50 ≤ 25 ms, max ≤ 100 ms; a 100-step session
reopened ≤ 0.66 s; echo with 200 steps of history median ≤ 25 ms, max ≤ 60 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import pty
import re
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from own_project import own_project

TOTAL_TOKENS = 20_000
SLOW_RATE_TOKENS = 4_000
RATES = (200, 1_000, 5_000)
TICK = 0.01
"""Seconds between provider chunks: each tick publishes the tokens due by then."""
KEY_INTERVAL = 0.1
SIZE = (120, 40)
HISTORY_SIZES = (0, 150, 1_000)
HISTORY_RATE = 1_000
HISTORY_TOKENS = 5_000
OPEN_STEPS = 1_000
STEPS_PER_TURN = 5
RSS_STEPS = (10, 1_000)
RSS_TURN = 10
FIRST_FRAME_RUNS = 3
FIRST_FRAME_MARKER = b"Message the"
ANSI_SEQUENCE = re.compile(rb"\x1b(\[[0-9;?<>=$]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-Za-z])")


def markdown_tokens(total: int) -> list[str]:
    """A Markdown reply (headings, prose, lists, code blocks) split into ~token pieces."""
    section = [
        "## Step {n}: refactor the loader\n\n",
        "The loader reads every file twice, which is why start-up is slow on large "
        "repositories. We cache the parsed result keyed by path and mtime, and we only "
        "invalidate entries whose file changed since the last scan. **Note:** the cache "
        "must be bounded, so we use an LRU with `maxsize=512`.\n\n",
        "- keep the public API unchanged\n- add tests for stale entries\n"
        "- measure before and after\n\n",
        "```python\nfrom functools import lru_cache\nfrom pathlib import Path\n\n\n"
        "@lru_cache(maxsize=512)\ndef load(path: Path, mtime: float) -> dict[str, str]:\n"
        '    """Parse one file; the mtime makes edits invalidate the entry."""\n'
        "    result: dict[str, str] = {}\n    for line in path.read_text().splitlines():\n"
        '        key, _, value = line.partition("=")\n'
        "        result[key.strip()] = value.strip()\n    return result\n```\n\n",
    ]
    pieces: list[str] = []
    n = 1
    while len(pieces) < total:
        text = "".join(section).replace("{n}", str(n))
        word = ""
        for ch in text:
            word += ch
            if ch in " \n" or len(word) >= 4:
                pieces.append(word)
                word = ""
        if word:
            pieces.append(word)
        n += 1
    return pieces[:total]


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def ms(value: float) -> str:
    return f"{value * 1000:7.1f} ms"


# ---- streaming ------------------------------------------------------------------------


def install_frame_timer(
    frames: list[float], on_frame: Callable[[float], None] | None = None
) -> Callable[[], None]:
    """Time every screen update (layout + compositor + output)."""
    from textual.screen import Screen

    original = Screen._on_timer_update

    def timed(self: Screen) -> None:
        start = time.perf_counter()
        original(self)
        end = time.perf_counter()
        frames.append(end - start)
        if on_frame is not None:
            on_frame(end)

    Screen._on_timer_update = timed  # type: ignore[method-assign]

    def restore() -> None:
        Screen._on_timer_update = original  # type: ignore[method-assign]

    return restore


REPLY = (
    "## Step {n}\n\nThe loader reads every file twice, which is why start-up is slow. "
    "We cache the parsed result keyed by path and mtime.\n\n- keep the API\n- add tests\n\n"
    "```python\ndef load(path):\n    return path.read_text()\n```\n"
)


async def build_session(db: Any, directory: Path, steps: int) -> str:
    """A session of `steps` finished steps (a reply and two tool calls each), a user
    message every STEPS_PER_TURN steps, written through the storage API."""
    from agent_tui.ids import message_id, part_id
    from agent_tui.records import (
        AssistantMessage,
        StepFinishPart,
        StepStartPart,
        TextPart,
        Tokens,
        ToolPart,
        ToolStateCompleted,
        ToolTime,
        UserMessage,
    )

    session = await db.create_session(str(directory), title="bench history")
    user_id = ""
    for n in range(steps):
        if n % STEPS_PER_TURN == 0:
            user = UserMessage(id=message_id(), session_id=session.id, model="openai/bench")
            user_id = user.id
            await db.upsert_message(user)
            await db.upsert_part(
                TextPart(id=part_id(), session_id=session.id, message_id=user.id, text=f"Task {n}.")
            )
        last = n % STEPS_PER_TURN == STEPS_PER_TURN - 1 or n == steps - 1
        step = AssistantMessage(
            id=message_id(),
            session_id=session.id,
            parent_id=user_id,
            model="openai/bench",
            finish="stop" if last else "tool-calls",
            completed=1,
            cost=0.01,
            tokens=Tokens(input=20_000 + n, output=500),
        )
        await db.upsert_message(step)
        ids = {"session_id": session.id, "message_id": step.id}
        await db.upsert_part(StepStartPart(id=part_id(), **ids))
        await db.upsert_part(TextPart(id=part_id(), text=REPLY.format(n=n), **ids))
        for k in range(2):
            state = ToolStateCompleted(
                input={"file_path": f"src/m{n}_{k}.py"},
                output="x = 1\n" * 40,
                title="read",
                time=ToolTime(start=1, end=2),
            )
            await db.upsert_part(
                ToolPart(id=part_id(), call_id=f"c{n}_{k}", tool="read", state=state, **ids)
            )
        await db.upsert_part(
            StepFinishPart(id=part_id(), reason="stop", tokens=Tokens(input=20_000), **ids)
        )
        if n % 200 == 0:
            await db.flush()
    await db.flush()
    return session.id


async def stream_once(
    rate: int, tokens: list[str], data_dir: Path, earlier: int = 0, beside: bool = False
) -> dict[str, Any]:
    """`beside`: another session streams the same reply at the same time, off screen
    (sessions side by side, tui/side_by_side.py)."""
    from textual import events

    from agent_tui.config.settings import Config
    from agent_tui.events import MessageUpdated, PartUpdated
    from agent_tui.ids import message_id, part_id
    from agent_tui.records import AssistantMessage, TextPart, UserMessage
    from agent_tui.storage.db import Database
    from agent_tui.tui.assistant_message_view import AssistantMessageView
    from agent_tui.tui.text_part_view import TextPartView
    from tests.tui_helpers import GivenApp

    key_latencies: list[float] = []
    screen_latencies: list[float] = []
    pending_keys: list[float] = []
    handled_keys: list[float] = []

    class BenchApp(GivenApp):
        def on_text_area_changed(self, event: Any) -> None:
            # The key has reached the input (the conversation's own handler ran first).
            if pending_keys:
                posted = pending_keys.pop(0)
                key_latencies.append(time.perf_counter() - posted)
                handled_keys.append(posted)

    def on_frame(end: float) -> None:
        screen_latencies.extend(end - posted for posted in handled_keys)
        handled_keys.clear()

    db = await Database.open(data_dir / f"bench-{rate}-{earlier}-{int(beside)}.db")
    app = BenchApp(Config(model="openai/bench"), db, directory=data_dir)
    frames: list[float] = []
    restore = install_frame_timer(frames, on_frame)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            if earlier:
                session_id = await build_session(db, data_dir, earlier * STEPS_PER_TURN // 6)
                session = await db.get_session(session_id)
            else:
                session = await app.engine.new_session(data_dir)
            await app.chat.show_session(session)
            publish = app.engine.ctx.publish
            user = UserMessage(id=message_id(), session_id=session.id, model="openai/bench")
            publish(MessageUpdated(info=user))
            publish(
                PartUpdated(
                    part=TextPart(
                        id=part_id(),
                        session_id=session.id,
                        message_id=user.id,
                        text="Refactor the loader, please.",
                    )
                )
            )
            info = AssistantMessage(
                id=message_id(), session_id=session.id, parent_id=user.id, model="openai/bench"
            )
            publish(MessageUpdated(info=info))
            part = TextPart(id=part_id(), session_id=session.id, message_id=info.id)
            other = await _other_stream(app, data_dir) if beside else None
            arrivals: list[tuple[float, int]] = []
            await pilot.pause()
            frames.clear()

            async def keys() -> None:
                while True:
                    await asyncio.sleep(KEY_INTERVAL)
                    pending_keys.append(time.perf_counter())
                    app.post_message(events.Key("x", "x"))  # typed into the input

            key_task = asyncio.create_task(keys())
            view: TextPartView | None = None
            start = time.perf_counter()
            sent = 0
            while sent < len(tokens):
                due = min(len(tokens), int((time.perf_counter() - start) * rate) + 1)
                for token in tokens[sent:due]:
                    part.text += token
                    publish(PartUpdated(part=part, delta=token))
                    arrivals.append((time.perf_counter(), len(part.text)))
                    if other is not None:
                        other.text += token
                        publish(PartUpdated(part=other, delta=token))
                sent = due
                if view is None:  # the streaming step's text, not one from the history
                    steps = [v for v in app.query(AssistantMessageView) if v.info.id == info.id]
                    found = steps[0].query(TextPartView) if steps else []
                    if found:
                        view = found.last()
                        view.commit_log = []
                await asyncio.sleep(TICK)
            last_delta = time.perf_counter()
            stream_seconds = last_delta - start
            key_task.cancel()
            info.finish = "stop"
            publish(MessageUpdated(info=info))
            assert view is not None and view.commit_log is not None
            while not view.commit_log or view.commit_log[-1][1] < len(part.text):
                await asyncio.sleep(0.005)
            catch_up = view.commit_log[-1][0] - last_delta
            frames_during = list(frames)
            await pilot.pause()
            commits = view.commit_log
    finally:
        restore()
        await db.close()
    lags = []
    j = 0
    for arrived, length in arrivals:
        while commits[j][1] < length:
            j += 1
        lags.append(max(commits[j][0] - arrived, 0.0))
    return {
        "rate": rate,
        "tokens": len(tokens),
        "achieved": len(tokens) / stream_seconds,
        "lags": lags,
        "catch_up": catch_up,
        "frames": frames_during,
        "appends": len(commits),
        "keys": key_latencies,
        "screen": screen_latencies,
        "earlier": earlier,
        "beside": beside,
    }


async def _other_stream(app: Any, data_dir: Path) -> Any:
    """A second session, working (busy) and streaming a reply while another is on screen."""
    from agent_tui.events import MessageUpdated, SessionStatus
    from agent_tui.ids import message_id, part_id
    from agent_tui.records import AssistantMessage, TextPart, UserMessage

    session = await app.engine.new_session(data_dir)
    publish = app.engine.ctx.publish
    publish(SessionStatus(session_id=session.id, status="busy"))
    user = UserMessage(id=message_id(), session_id=session.id, model="openai/bench")
    publish(MessageUpdated(info=user))
    info = AssistantMessage(
        id=message_id(), session_id=session.id, parent_id=user.id, model="openai/bench"
    )
    publish(MessageUpdated(info=info))
    return TextPart(id=part_id(), session_id=session.id, message_id=info.id)


def report_stream(result: dict[str, Any]) -> None:
    lags, frames, keys = result["lags"], result["frames"], result["keys"]
    history = f", {result['earlier']:,} earlier messages" if result["earlier"] else ""
    history += ", another session streaming beside it" if result.get("beside") else ""
    print(
        f"\n{result['rate']:>5} tokens/s  ({result['tokens']:,} tokens, producer achieved "
        f"{result['achieved']:,.0f}/s, {result['appends']} Markdown updates{history})"
    )
    print(
        f"  render lag     p50 {ms(percentile(lags, 50))}  p99 {ms(percentile(lags, 99))}"
        f"  max {ms(max(lags))}"
    )
    print(f"  catch-up after last delta {ms(result['catch_up'])}")
    print(
        f"  frame time     p50 {ms(percentile(frames, 50))}  p99 {ms(percentile(frames, 99))}"
        f"  max {ms(max(frames) if frames else float('nan'))}  ({len(frames)} frames)"
    )
    print(
        f"  key latency    p50 {ms(percentile(keys, 50))}  p99 {ms(percentile(keys, 99))}"
        f"  max {ms(max(keys) if keys else float('nan'))}  ({len(keys)} keys)"
    )
    screen = result["screen"]
    print(
        f"  key to screen  p50 {ms(percentile(screen, 50))}  p99 {ms(percentile(screen, 99))}"
        f"  max {ms(max(screen) if screen else float('nan'))}"
    )


# ---- first frame ----------------------------------------------------------------------


def first_frame_once(
    workdir: Path, marker: bytes = FIRST_FRAME_MARKER, args: tuple[str, ...] = ()
) -> float:
    """Seconds from launching `agent-tui *args` in a pty until `marker` is on screen."""
    env = {
        **os.environ,
        "AGENT_TUI_DATA_DIR": str(workdir / "data"),
        "AGENT_TUI_CONFIG_DIR": str(workdir / "user-config"),
        "TERM": "xterm-256color",
    }
    exe = Path(sys.executable).with_name("agent-tui")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(exe), *args],
        cwd=workdir,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    seen = b""
    elapsed = float("nan")
    try:
        deadline = start + 20
        while time.perf_counter() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            seen += chunk
            # Styles split the text with escape sequences: look at the text alone.
            if marker in ANSI_SEQUENCE.sub(b"", seen):
                elapsed = time.perf_counter() - start
                break
        os.write(master, b"\x03")
        time.sleep(0.1)
        os.write(master, b"\x03")
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    finally:
        os.close(master)
    return elapsed


def write_launch_config(workdir: Path) -> None:
    own_project(workdir, workdir / "user-config")
    (workdir / "agent-tui.json").write_text(
        json.dumps(
            {
                "model": "openai/bench",
                "provider": {"openai": {"api_base": "http://127.0.0.1:9/v1", "api_key": "none"}},
            }
        ),
        encoding="utf-8",
    )


def first_frame(workdir: Path) -> list[float]:
    write_launch_config(workdir)
    return [first_frame_once(workdir) for _ in range(FIRST_FRAME_RUNS)]


async def build_open_session(workdir: Path) -> None:
    from agent_tui.storage.db import Database

    db = await Database.open(workdir / "data" / "agent-tui.db")
    try:
        await build_session(db, workdir, OPEN_STEPS)
    finally:
        await db.close()


def open_times(workdir: Path) -> tuple[list[float], list[float]]:
    """Launch to the prompt (no session) and `--continue` to the newest reply shown."""
    write_launch_config(workdir)
    asyncio.run(build_open_session(workdir))
    newest = f"Step {OPEN_STEPS - 1}".encode()
    empty, full = [], []
    for _ in range(FIRST_FRAME_RUNS):  # interleaved: both see the same machine load
        empty.append(first_frame_once(workdir))
        full.append(first_frame_once(workdir, newest, ("--continue",)))
    return empty, full


# ---- memory ---------------------------------------------------------------------------


def rss_bytes() -> int:
    """Resident memory of this process now (not the peak)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


async def memory_growth(data_dir: Path) -> dict[int, int]:
    """RSS after RSS_STEPS[0] and RSS_STEPS[-1] streamed steps (after a collection)."""
    import gc

    from agent_tui.config.settings import Config
    from agent_tui.events import MessageUpdated, PartUpdated, SessionStatus
    from agent_tui.ids import message_id, part_id
    from agent_tui.records import (
        AssistantMessage,
        TextPart,
        ToolPart,
        ToolStateCompleted,
        ToolTime,
        UserMessage,
    )
    from agent_tui.storage.db import Database
    from tests.tui_helpers import GivenApp

    db = await Database.open(data_dir / "bench-memory.db")
    app = GivenApp(Config(model="openai/bench"), db, directory=data_dir)
    found: dict[int, int] = {}
    pieces = markdown_tokens(120)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            session = await app.engine.new_session(data_dir)
            await app.chat.show_session(session)
            publish = app.engine.ctx.publish
            user_id = ""
            for n in range(1, RSS_STEPS[-1] + 1):
                if n % RSS_TURN == 1:
                    publish(SessionStatus(session_id=session.id, status="busy"))
                    user = UserMessage(id=message_id(), session_id=session.id)
                    user_id = user.id
                    publish(MessageUpdated(info=user))
                    text = TextPart(
                        id=part_id(), session_id=session.id, message_id=user.id, text=f"Task {n}"
                    )
                    publish(PartUpdated(part=text))
                info = AssistantMessage(id=message_id(), session_id=session.id, parent_id=user_id)
                publish(MessageUpdated(info=info))
                part = TextPart(id=part_id(), session_id=session.id, message_id=info.id)
                for i in range(0, len(pieces), 20):
                    delta = "".join(pieces[i : i + 20])
                    part = part.model_copy(update={"text": part.text + delta})
                    publish(PartUpdated(part=part, delta=delta))
                    await pilot.pause()
                state = ToolStateCompleted(
                    input={"file_path": f"src/{n}.py"},
                    output="x = 1\n" * 40,
                    title="read",
                    time=ToolTime(start=1, end=2),
                )
                tool = ToolPart(
                    id=part_id(),
                    session_id=session.id,
                    message_id=info.id,
                    call_id=f"c{n}",
                    tool="read",
                    state=state,
                )
                publish(PartUpdated(part=tool))
                publish(MessageUpdated(info=info.model_copy(update={"finish": "stop"})))
                if n % RSS_TURN == 0:
                    publish(SessionStatus(session_id=session.id, status="idle"))
                await pilot.pause()
                if n in RSS_STEPS:
                    await pilot.pause()
                    gc.collect()
                    found[n] = rss_bytes()
    finally:
        await db.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="20,000 tokens at 200/s too")
    parser.add_argument("--rates", type=int, nargs="*", default=list(RATES))
    parser.add_argument("--skip-history", action="store_true", help="no 0/150/1,000 runs")
    parser.add_argument(
        "--start-only", action="store_true", help="only the pty sections (5): start and keys"
    )
    parser.add_argument(
        "--reopen",
        type=int,
        nargs="?",
        const=100,
        metavar="STEPS",
        help="only (6): --continue on a session of STEPS steps (100) beside an empty start",
    )
    parser.add_argument(
        "--side-by-side",
        action="store_true",
        help="only: keys while a reply streams at 1,000 tokens/s, alone and with a second "
        "session streaming the same beside it (off screen)",
    )
    parser.add_argument(
        "--echo-history",
        type=int,
        nargs="?",
        const=200,
        metavar="STEPS",
        help="only (7): key echo at full stream speed with STEPS steps of history (200)",
    )
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from precompile import compile_bytecode

    compile_bytecode()
    if args.reopen is not None or args.echo_history is not None:
        report_history(args.reopen, args.echo_history)
        return
    if args.start_only:
        report_start()
        return
    tokens = markdown_tokens(TOTAL_TOKENS)
    if args.side_by_side:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["AGENT_TUI_DATA_DIR"] = str(Path(tmp) / "data")
            asyncio.run(stream_once(1000, tokens[:2000], Path(tmp) / "warm"))  # imports
            for beside in (False, True, False, True):
                report_stream(asyncio.run(stream_once(1000, tokens, Path(tmp), beside=beside)))
        return
    print(
        f"Reply: {len(tokens):,} tokens, {sum(map(len, tokens)):,} characters, "
        f"{''.join(tokens).count('```') // 2} code blocks; terminal {SIZE[0]}×{SIZE[1]}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        os.environ["AGENT_TUI_DATA_DIR"] = str(workdir / "data")
        for rate in args.rates:
            count = len(tokens) if (rate > 200 or args.full) else SLOW_RATE_TOKENS
            result = asyncio.run(stream_once(rate, tokens[:count], workdir))
            report_stream(result)
        if not args.skip_history:
            for earlier in HISTORY_SIZES:
                result = asyncio.run(
                    stream_once(HISTORY_RATE, tokens[:HISTORY_TOKENS], workdir, earlier)
                )
                report_stream(result)
        print("\nlaunch to first frame (agent-tui in a 100×30 pty, 3 runs):")
        times = first_frame(workdir)
        print("  " + "  ".join(ms(t) for t in times) + f"   median {ms(statistics.median(times))}")
        opening = Path(tmp) / "open"
        (opening / "data").mkdir(parents=True)
        empty, full = open_times(opening)
        ratio = statistics.median(full) / statistics.median(empty)
        print(f"\nopen (pty, {FIRST_FRAME_RUNS} runs each, medians):")
        print(f"  empty session, prompt drawn       {ms(statistics.median(empty))}")
        print(f"  {OPEN_STEPS:,}-step session, newest reply drawn  {ms(statistics.median(full))}")
        print(f"  ratio {ratio:.2f}x  (runs: {' '.join(ms(t) for t in full)})")
        memory = asyncio.run(memory_growth(workdir))
        low, high = RSS_STEPS[0], RSS_STEPS[-1]
        print(f"\nmemory after {low:,} steps {memory[low] / 1e6:6.1f} MB, after {high:,}")
        print(f"  {memory[high] / 1e6:6.1f} MB: {memory[high] / memory[low]:.2f}x")
    report_start()


def report_history(reopen: int | None, echo_steps: int | None) -> None:
    """6 and 7: what a long session costs in a pty (tui_history.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import tui_history

    with tempfile.TemporaryDirectory() as tmp:
        if reopen is not None:
            tui_history.report_reopen(Path(tmp) / "reopen", reopen)
        if echo_steps is not None:
            tui_history.report_echo_history(Path(tmp) / "echo", echo_steps)


def report_start() -> None:
    """5. The app as a person sees it in a 120×36 pty: launch → first frame and → input
    drawn, keys typed while it starts, keys while an unthrottled reply streams; and the
    same unthrottled stream in the headless app (frame times)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import tui_pty
    from tui_unthrottled import unthrottled_in_app

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        tui_pty.report_launch(FIRST_FRAME_RUNS + 2, workdir / "launch")
        tui_pty.report_start_keys(workdir / "keys")
        tui_pty.report_unthrottled(workdir / "stream")
        os.environ["AGENT_TUI_DATA_DIR"] = str(workdir / "app" / "data")
        (workdir / "app").mkdir()
        reply = tui_pty.stream_words(tui_pty.STREAM_WORDS)
        os.chdir(workdir / "app")
        found = asyncio.run(unthrottled_in_app(workdir / "app", reply))
        rate = found["chars"] / 4 / found["seconds"]
        print(f"\nunthrottled stream in the headless app ({tui_pty.load()}):")
        print(f"  streamed in {found['seconds']:.1f} s (~{rate:,.0f} tokens/s)")
        print(f"  key until the input has it: {tui_pty.spread(found['keys'])}")
        print(f"  key to screen:              {tui_pty.spread(found['screen'])}")
        print(f"  frame times:                {tui_pty.spread(found['frames'])}")


if __name__ == "__main__":
    main()
