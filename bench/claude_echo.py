"""Key echo while a long reply streams, Claude Code beside agent-tui (tui_pty.unthrottled,
an empty session), interleaved round by round in a 120×36 pty. Claude Code (`claude`, a
fresh project and HOME as in claude_reopen.py) gets tui_pty's 6,000-word reply from a fake
Anthropic API in text deltas of 4 characters with no delay (unthrottled's pace), after a
short first turn. From the request on, a Q is written every 100 ms (agent-tui's: 100 ms
after the last is drawn) until the reply's end is drawn; a key is echoed when the input
row (❯) holds that many Qs. Claude Code writes only changed cells: its output is replayed
on a small `Screen`. `--pace S`: S seconds between deltas, for both apps. 12-02, 2.1.332:
with no delay it takes the reply in 2-4 s and draws the keys typed meanwhile at its end.

    .venv/bin/python bench/claude_echo.py [CLAUDE] [--rounds 3] [--pace S]
"""

from __future__ import annotations

import argparse
import codecs
import dataclasses
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import tui_history
import tui_pty
from claude_reopen import ClaudeApp, Handler, claude_env, prepare_home
from precompile import compile_bytecode

ASK, CHUNK, END = "write it all", 4, tui_pty.END_MARK
MOVES = {"A": (-1, 0), "B": (1, 0), "C": (0, 1), "D": (0, -1)}
TOKEN = re.compile(
    r"\x1b\[([0-?]*)[ -/]*([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1bP[^\x1b]*\x1b\\"
    r"|\x1b[()*+].|\x1b[^\[\]P()*+]|[\x00-\x1f]|[^\x00-\x1f\x1b]+"
)


class Screen:
    """Just enough of a terminal to read its rows back: text, cursor moves, erases, LF."""

    def __init__(self, columns: int, rows: int) -> None:
        self.columns, self.rows, self.row, self.col, self.rest = columns, rows, 0, 0, ""
        self.grid = [[" "] * columns for _ in range(rows)]

    def feed(self, data: str) -> None:
        text, pos = self.rest + data, 0
        while pos < len(text) and (m := TOKEN.match(text, pos)):
            pos, token, final = m.end(), m.group(), m.group(2)
            if final and not m.group(1).startswith("?"):
                self.csi([int(p) if p.isdigit() else 0 for p in m.group(1).split(";")], final)
            elif token == "\r":
                self.col = 0
            elif token == "\n":
                self.linefeed()
            elif token[0] >= " ":
                for ch in token:
                    if self.col >= self.columns:
                        self.col = 0
                        self.linefeed()
                    self.grid[self.row][self.col] = ch
                    self.col += 1
        self.rest = text[pos:]

    def linefeed(self) -> None:
        if self.row == self.rows - 1:
            self.grid = [*self.grid[1:], [" "] * self.columns]
        else:
            self.row += 1

    def csi(self, p: list[int], final: str) -> None:
        n, row, col, last = max(p[0], 1), self.row, self.col, self.columns
        if final in MOVES:
            down, right = MOVES[final]
            self.row = min(max(row + down * n, 0), self.rows - 1)
            self.col = min(max(col + right * n, 0), last - 1)
        elif final == "G":
            self.col = min(n, last) - 1
        elif final in "Hf":
            self.row = min(n, self.rows) - 1
            self.col = min(max(p[1], 1), last) - 1 if len(p) > 1 else 0
        elif final == "K":
            start, end = {0: (col, last), 1: (0, col + 1)}.get(p[0], (0, last))
            self.grid[row][start:end] = [" "] * (end - start)
        elif final == "J":  # below the cursor (0), or all
            for r in range(row + 1 if p[0] == 0 else 0, self.rows):
                self.grid[r] = [" "] * last

    def lines(self) -> list[str]:
        return ["".join(row).replace("\xa0", " ").rstrip() for row in self.grid]

    def typed(self) -> int:
        """How many Qs the input row (❯ …) holds."""
        rows = [line.lstrip()[1:].strip() for line in self.lines() if line.lstrip()[:1] == "❯"]
        return max((len(r) - len(r.lstrip("Q")) for r in rows), default=0)


class Watch:
    """The app's output replayed on a Screen as it comes; keys written and their echoes."""

    def __init__(self, app: ClaudeApp) -> None:
        self.app, self.screen, self.seen, self.line = app, Screen(*app.size), 0, 0
        self.decode = codecs.getincrementaldecoder("utf-8")("replace").decode
        self.writes: list[float] = []
        self.latencies: list[float] = []
        self.end = math.nan  # when the reply's END mark was first on screen

    def step(self, until: float) -> None:
        """Replay the output that came, waiting for some until `until` (perf_counter)."""
        app = self.app
        with app._cond:
            if self.seen == len(app.chunks) and not app._closed:
                app._cond.wait(max(0.0, until - time.perf_counter()))
            chunks = app.chunks[self.seen :]
            self.seen += len(chunks)
        for at, chunk in chunks:
            self.screen.feed(self.decode(chunk))
            while len(self.latencies) < len(self.writes) and self.line < self.screen.typed():
                self.latencies.append(at - self.writes[len(self.latencies)])
                self.line += 1
            if math.isnan(self.end) and any(END in line for line in self.screen.lines()):
                self.end = at

    def until(self, text: str, timeout: float = 60.0) -> None:
        deadline = time.perf_counter() + timeout
        while not any(text in line for line in self.screen.lines()):
            if time.perf_counter() > deadline or self.app._closed:
                raise TimeoutError(f"{text!r} not drawn:\n" + "\n".join(self.screen.lines()))
            self.step(deadline)

    def key(self) -> None:
        if self.line == tui_pty.KEYS_PER_LINE:  # Ctrl+U empties the line, as tui_pty's
            self.app.type(b"\x15")
            while self.screen.typed() and not self.app._closed:
                self.step(time.perf_counter() + 0.1)
            self.line = 0
        self.writes.append(self.app.type(tui_pty.KEY))


class FakeStream(Handler):
    server: FakeServer  # type: ignore[assignment]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        main = bool(body.get("tools")) and ASK in json.dumps(users[-1:])
        text = self.server.reply if main else "warm"
        usage = {"input_tokens": 20, "output_tokens": len(text) // 4}
        message = {"id": "msg_0", "type": "message", "role": "assistant", "usage": usage}
        message |= {"model": body.get("model", "claude"), "stop_sequence": None}
        if "count_tokens" in self.path or not body.get("stream"):  # no such requests seen
            content = [{"type": "text", "text": text}]
            return self.send({**message, "content": content, "stop_reason": "end_turn", **usage})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()

        def event(name: str, **payload: Any) -> None:
            data = json.dumps({"type": name, **payload})
            self.wfile.write(f"event: {name}\ndata: {data}\n\n".encode())

        event("message_start", message={**message, "content": [], "stop_reason": None})
        event("content_block_start", index=0, content_block={"type": "text", "text": ""})
        if main:
            self.server.began = time.perf_counter()
            self.server.started.set()
        for at in range(0, len(text), CHUNK):
            delta = {"type": "text_delta", "text": text[at : at + CHUNK]}
            event("content_block_delta", index=0, delta=delta)
            if main and self.server.pace:
                time.sleep(self.server.pace)
        event("content_block_stop", index=0)
        stop = {"stop_reason": "end_turn", "stop_sequence": None}
        event("message_delta", delta=stop, usage=usage)
        event("message_stop")


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, reply: str, pace: float) -> None:
        super().__init__(("127.0.0.1", 0), FakeStream)
        self.reply, self.pace, self.began, self.started = reply, pace, 0.0, threading.Event()
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()


def claude_round(exe: str, version: str, place: Path, pace: float = 0.0) -> dict[str, Any]:
    """One stream in a fresh project and HOME: the echo latencies, the stream's seconds."""
    project, home = place / "project", place / "home"
    project.mkdir(parents=True)
    server = FakeServer(tui_pty.stream_words(tui_pty.STREAM_WORDS) + f"\n\n{END}\n", pace)
    try:
        env = claude_env(home, server)  # type: ignore[arg-type]
        prepare_home(home, [project], version)
        with ClaudeApp(exe, project, [], env) as app:
            watch = Watch(app)
            watch.until("❯")  # keys typed before the input is drawn may be lost
            for keys, drawn in ((b"hello", "hello"), (b"\r", "warm"), (ASK.encode(), ASK)):
                app.type(keys)
                watch.until(drawn)
            app.type(b"\r")
            if not server.started.wait(60):
                raise TimeoutError("claude sent no request")
            began = next_key = server.began
            while math.isnan(watch.end) and time.perf_counter() - began < 300:
                if time.perf_counter() >= next_key:
                    watch.key()
                    next_key += tui_pty.STREAM_KEY_INTERVAL
                watch.step(next_key)
            deadline = time.perf_counter() + 10  # the keys typed during the stream
            while len(watch.latencies) < len(watch.writes) and time.perf_counter() < deadline:
                watch.step(deadline)
    finally:
        server.shutdown()
        server.server_close()
    return {"seconds": watch.end - began, "latencies": watch.latencies, "typed": watch.writes}


def agent_tui_round(place: Path, pace: float) -> dict[str, Any]:
    """tui_pty.unthrottled, its fake OpenAI server's text `pace` s between deltas."""
    sys.path.insert(0, str(tui_pty.ROOT))
    import tests.fake_openai as fake

    plain = fake.Text
    fake.Text = dataclasses.make_dataclass("Text", [("delay", float, pace)], bases=(plain,))
    try:
        return tui_pty.unthrottled(place)
    finally:
        fake.Text = plain


def report(n: int, name: str, found: dict[str, Any]) -> None:
    late = len(found.get("typed", found["latencies"])) - len(found["latencies"])
    print(
        f"  round {n} {name:>9}: {tui_history._echo(found['latencies'])}"
        + (f" ({late} never drawn)" if late else "")
        + f"  stream {found['seconds']:.1f} s  load {os.getloadavg()[0]:.2f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = os.environ.get("CLAUDE_BIN", "/tmp/cc2/node_modules/.bin/claude")
    parser.add_argument("claude", nargs="?", default=default)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pace", type=float, default=0.0, help="seconds between deltas")
    args = parser.parse_args()
    exe = shutil.which(args.claude) or parser.exit(2, f"no claude at {args.claude}\n")
    compile_bytecode()  # as after a first run, also where PYTHONDONTWRITEBYTECODE is set
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    place = Path(tempfile.mkdtemp(prefix="claude-echo-"))
    os.environ["AGENT_TUI_RUNTIME_DIR"] = str(place)  # agent-tui's relays: ours, stopped
    print(f"{version}: a Q every 100 ms while 6,000 words stream, {args.pace} s between deltas")
    try:
        for n in range(args.rounds):
            report(n, "claude", claude_round(exe, version.split()[0], place / f"c{n}", args.pace))
            report(n, "agent-tui", agent_tui_round(place / f"a{n}", args.pace))
    finally:
        stop = [str(Path(sys.executable).with_name("agent-tui")), "relay", "--stop"]
        subprocess.run(stop, capture_output=True, timeout=60)
        shutil.rmtree(place, ignore_errors=True)


if __name__ == "__main__":
    main()
