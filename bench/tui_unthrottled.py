"""A reply streamed into the app (App.run_test) through the real engine and litellm from
the fake OpenAI server with no delay between chunks: as fast as the app reads them.
Keys are typed every 100 ms meanwhile; measured as bench_tui's direct-event streams are
(key until the input has it, until the end of the frame that draws it, frame times), plus
how fast the reply went through. Used by bench_tui.py; tui_pty.py measures the same in a
real terminal."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from own_project import own_project

ROOT = Path(__file__).resolve().parent.parent
KEY_INTERVAL = 0.1
SIZE = (120, 36)
ASK = "write it all"


async def unthrottled_in_app(workdir: Path, reply: str, chunk_size: int = 4) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from bench_tui import install_frame_timer
    from textual import events

    from agent_tui.config.settings import load_config
    from agent_tui.storage.db import Database
    from tests.fake_openai import FakeOpenAI, Text
    from tests.tui_helpers import GivenApp

    key_latencies: list[float] = []
    screen_latencies: list[float] = []
    pending: list[float] = []
    handled: list[float] = []

    class BenchApp(GivenApp):
        def on_text_area_changed(self, event: Any) -> None:
            super().on_text_area_changed(event)
            if pending:
                posted = pending.pop(0)
                key_latencies.append(time.perf_counter() - posted)
                handled.append(posted)

    def on_frame(end: float) -> None:
        screen_latencies.extend(end - posted for posted in handled)
        handled.clear()

    def answer(body: dict[str, Any]) -> Text:
        last = json.dumps(body["messages"][-1])
        return Text(reply, chunk_size=chunk_size) if ASK in last else Text("warm")

    frames: list[float] = []
    with FakeOpenAI() as server:
        server.responder = answer
        config_path = workdir / "agent-tui.json"
        config_path.write_text(
            json.dumps(
                {
                    "model": "openai/bench",
                    "provider": {"openai": {"api_base": server.base_url, "api_key": "x"}},
                    "models": {"openai/bench": {"limit": {"context": 200_000, "output": 8_000}}},
                }
            )
        )
        own_project(workdir)
        config = load_config()
        db = await Database.open(workdir / "data" / "bench-unthrottled.db")
        app = BenchApp(config, db, directory=workdir)
        restore = install_frame_timer(frames, on_frame)
        try:
            async with app.run_test(size=SIZE) as pilot:
                await app.loaded.wait()
                for text in ("hello", ASK):
                    before = len(server.requests)
                    app.prompt.load_text(text)
                    await pilot.press("enter")
                    while len(server.requests) == before:
                        await asyncio.sleep(0.01)
                    if text == "hello":
                        while app.chat.status != "idle" or server.active:
                            await asyncio.sleep(0.01)
                began = time.perf_counter()
                frames.clear()
                while app.chat.status != "idle":
                    await asyncio.sleep(KEY_INTERVAL)
                    if len(app.prompt.text) > 60:
                        app.prompt.clear()
                        await pilot.pause()
                        pending.clear()
                        handled.clear()
                    pending.append(time.perf_counter())
                    app.post_message(events.Key("x", "x"))
                seconds = time.perf_counter() - began
        finally:
            restore()
            await db.close()
    return {
        "chars": len(reply),
        "seconds": seconds,
        "frames": frames,
        "keys": key_latencies,
        "screen": screen_latencies,
    }
