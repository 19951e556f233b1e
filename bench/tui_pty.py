"""The app as a person sees it, in a pseudo-terminal (`pty_app.PtyApp`): launch to the
first frame and to the input drawn, keys typed while it starts (before the first frame
too), and keys typed while a reply streams from the fake OpenAI server as fast as the
connection takes it. Used by bench_tui.py."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from own_project import own_project
from pty_app import PtyApp, visible

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = b"Message the"
KEY = b"Q"
"""Typed to measure echo: the prompt then shows KEY * n, which no reply contains."""
KEYS_PER_LINE = 60
"""Keys typed into one prompt line (it wraps further on at 120 columns with the sidebar)."""
START_KEY_INTERVAL = 0.05
START_TYPING = 8.0
"""Seconds of typing from the input's first drawing: the start's work after the first
frame, litellm's import (5-7 s here) included."""
STREAM_KEY_INTERVAL = 0.1
STREAM_WORDS = 6_000
EARLY_TEXT = b"typed before the first frame"
ALT_SCREEN = b"\x1b[?1049h"


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def spread(values: list[float]) -> str:
    """p50 / p95 / max in ms."""
    if not values:
        return "no samples"
    return (
        f"p50 {percentile(values, 50) * 1000:.0f} ms  p95 {percentile(values, 95) * 1000:.0f} ms"
        f"  max {max(values) * 1000:.0f} ms  (n={len(values)})"
    )


def load() -> str:
    return "load " + " ".join(Path("/proc/loadavg").read_text().split()[:3])


def import_alone(module: str, runs: int = 3) -> list[float]:
    """`python -c "import MODULE"` from launch to the import's end (os._exit: no teardown)."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", f"import {module}, os; os._exit(0)"], check=True, env=env
        )
        samples.append(time.perf_counter() - start)
    return samples


async def build_history(workdir: Path, steps: int) -> None:
    """One session of `steps` finished steps in the project's database (bench_tui's
    shape: a reply with a code block and two read calls per step)."""
    from bench_tui import build_session

    from agent_tui.storage.db import Database

    (workdir / "data").mkdir(parents=True, exist_ok=True)
    db = await Database.open(workdir / "data" / "agent-tui.db")
    try:
        await build_session(db, workdir, steps)
    finally:
        await db.close()


def project(
    workdir: Path, base_url: str = "http://127.0.0.1:9/v1", *, history: int = 0
) -> dict[str, str]:
    """A project configured for `base_url` (with a session of `history` steps, if any);
    the environment the app runs in."""
    workdir.mkdir(parents=True, exist_ok=True)
    if history:
        asyncio.run(build_history(workdir, history))
    config = {
        "model": "openai/bench",
        "provider": {"openai": {"api_base": base_url, "api_key": "none"}},
        "models": {"openai/bench": {"limit": {"context": 200_000, "output": 8_000}}},
        "sandbox": {"enabled": False},
    }
    (workdir / "agent-tui.json").write_text(json.dumps(config), encoding="utf-8")
    own_project(workdir, workdir / "user-config")
    return {
        "AGENT_TUI_DATA_DIR": str(workdir / "data"),
        "AGENT_TUI_CONFIG_DIR": str(workdir / "user-config"),
        "PYTHONPATH": str(ROOT),
    }


def first_visible(app: PtyApp, timeout: float = 20.0) -> float:
    """When the first frame arrived: the first chunk with text besides escape sequences."""
    deadline = time.perf_counter() + timeout
    index = 0
    while time.perf_counter() < deadline:
        chunks = app.chunks[index:]
        for at, chunk in chunks:
            if visible(chunk).strip():
                return at
        index += len(chunks)
        time.sleep(0.005)
    return float("nan")


def launch_once(workdir: Path, env: dict[str, str]) -> tuple[float, float]:
    """Seconds from launch to the first frame, and to the prompt's placeholder drawn."""
    with PtyApp(workdir, env=env) as app:
        drawn = app.wait_for(PLACEHOLDER)
        frame = first_visible(app)
        return frame - app.start, drawn - app.start


def echo(app: PtyApp, typed: int, timeout: float = 60.0) -> float:
    """Type one KEY (the prompt then holds `typed` of them); seconds until it is drawn."""
    mark = app.mark
    at = app.type(KEY)
    return app.wait_for(KEY * typed, since=mark, timeout=timeout) - at


def clear_prompt(app: PtyApp) -> None:
    """Ctrl+U empties the line (TextArea's delete-to-line-start); wait until drawn."""
    mark = app.mark
    app.type(b"\x15")
    app.wait_for(PLACEHOLDER, since=mark, timeout=10)


def early_keys(workdir: Path, env: dict[str, str]) -> float:
    """Keys typed at launch, before anything is drawn: when they are in the prompt (NaN:
    lost), i.e. when the app itself is up. Only what comes after the screen switch
    counts (the terminal's echo is off from launch: nothing comes before)."""
    with PtyApp(workdir, env=env) as app:
        app.type(EARLY_TEXT)
        app.wait_for(ALT_SCREEN, raw=True)
        deadline = time.perf_counter() + 15
        while time.perf_counter() < deadline:
            with app._cond:
                chunks = list(app.chunks)
            seen = b""
            for at, chunk in chunks:  # only what comes after the switch to the screen
                seen += chunk
                if EARLY_TEXT in visible(seen.partition(ALT_SCREEN)[2]):
                    return at - app.start
            time.sleep(0.01)
        return float("nan")


def start_keys(workdir: Path, env: dict[str, str]) -> list[tuple[float, float]]:
    """Keys typed from the first frame on, through the rest of the start (config,
    database, engine, litellm's import): (seconds since launch, key to screen)."""
    with PtyApp(workdir, env=env) as app:
        app.wait_for(PLACEHOLDER)
        latencies: list[tuple[float, float]] = []
        start = time.perf_counter()
        typed = 0
        while time.perf_counter() - start < START_TYPING:
            if typed == KEYS_PER_LINE:
                clear_prompt(app)
                typed = 0
            typed += 1
            at = time.perf_counter() - app.start
            latencies.append((at, echo(app, typed)))
            time.sleep(START_KEY_INTERVAL)
    return latencies


def stream_words(count: int) -> str:
    """A Markdown reply of about `count` words (prose, lists, code)."""
    from bench_tui import markdown_tokens

    text = ""
    pieces = markdown_tokens(count * 3)
    for piece in pieces:
        text += piece
        if len(text.split()) >= count:
            break
    return text


END_MARK = "END-OF-REPLY"


def unthrottled(workdir: Path, chunk_size: int = 4, history: int = 0) -> dict[str, Any]:
    """A STREAM_WORDS-word reply streamed by the fake server with no delay between its
    chunks (as fast as the app reads them); a key typed every STREAM_KEY_INTERVAL s.
    `history`: into a session of that many earlier steps, opened with --continue."""
    sys.path.insert(0, str(ROOT))
    from tests.fake_openai import FakeOpenAI, Text

    reply = stream_words(STREAM_WORDS) + f"\n\n{END_MARK}\n"
    ask = "write it all"

    def answer(body: dict[str, Any]) -> Text:
        last = json.dumps(body["messages"][-1])
        return Text(reply, chunk_size=chunk_size) if ask in last else Text("warm")

    with FakeOpenAI() as server:
        server.responder = answer
        env = project(workdir, server.base_url, history=history)
        with PtyApp(workdir, ["--continue"] if history else [], env=env) as app:
            app.wait_for(PLACEHOLDER)
            # A first short turn: litellm's import and the first request's own imports
            # are over before the measured stream starts.
            app.type(b"hello\r")
            app.wait_for(b"warm", timeout=60)
            server.wait_idle(timeout=30)
            count = len(server.requests)
            app.type(ask.encode() + b"\r")
            server.wait_for_requests(count + 1, timeout=60)
            began = time.perf_counter()
            mark = app.mark
            latencies: list[float] = []
            typed = 0
            end = END_MARK.encode()
            scanned = mark
            while not app.seen(end, since=scanned) and time.perf_counter() - began < 300:
                scanned = max(mark, app.mark - 2)  # what was looked at, but its tail
                if typed == KEYS_PER_LINE:
                    clear_prompt(app)
                    typed = 0
                typed += 1
                latencies.append(echo(app, typed))
                time.sleep(STREAM_KEY_INTERVAL)
            done = app.wait_for(end, since=mark, timeout=300)
    return {
        "words": len(reply.split()),
        "chars": len(reply),
        "chunks": -(-len(reply) // chunk_size),
        "seconds": done - began,
        "latencies": latencies,
    }


def report_launch(runs: int, workdir: Path) -> None:
    """Launch → first frame and → input drawn (the first launch in a place warms the
    caches and is left out)."""
    env = project(workdir)
    textual = import_alone("textual.app")
    litellm = import_alone("litellm")
    print(f"\nlaunch (agent-tui in a 120×36 pty, {runs} runs after one warm-up, {load()}):")
    launch_once(workdir, env)
    frames, drawn = [], []
    for _ in range(runs):
        frame, input_drawn = launch_once(workdir, env)
        frames.append(frame)
        drawn.append(input_drawn)
    print(
        f"  first frame      {' '.join(f'{t * 1000:.0f}' for t in frames)} ms"
        f"   median {statistics.median(frames) * 1000:.0f} ms"
    )
    print(
        f"  input drawn      {' '.join(f'{t * 1000:.0f}' for t in drawn)} ms"
        f"   median {statistics.median(drawn) * 1000:.0f} ms  (goal 600 ms)"
    )
    print(
        f"  beside: import textual.app alone median {statistics.median(textual) * 1000:.0f} ms,"
        f" import litellm alone median {statistics.median(litellm) * 1000:.0f} ms"
    )


def report_start_keys(workdir: Path) -> None:
    env = project(workdir)
    kept = early_keys(workdir, env)
    lat = start_keys(workdir, env)
    print(f"\nkeys while the app starts ({load()}):")
    shown = f"in the prompt at {kept * 1000:.0f} ms" if kept == kept else "lost"
    print(f"  typed at launch, before any frame: {shown} (the app is up)")
    for lo, hi in ((0.0, 1.0), (1.0, 2.0), (2.0, 4.0), (4.0, 6.0), (6.0, 99.0)):
        part = [d for at, d in lat if lo <= at < hi]
        if part:
            print(
                f"  key to screen, typed {lo:.0f}-{min(hi, 99):.0f} s after launch: {spread(part)}"
            )
    print(f"  all: {spread([d for _, d in lat])}")


def report_unthrottled(workdir: Path) -> None:
    found = unthrottled(workdir)
    rate = found["chars"] / 4 / found["seconds"]
    print(
        f"\nunthrottled stream ({found['words']:,} words, {found['chunks']:,} chunks of 4 "
        f"characters, no delay; {load()}):"
    )
    print(f"  streamed in {found['seconds']:.1f} s (~{rate:,.0f} tokens/s as the app read it)")
    print(f"  key to screen (pty): {spread(found['latencies'])}  (goal p50 25 ms, max 100 ms)")
