"""Claude Code beside agent-tui: launch → the newest reply of a 100-step session drawn,
`claude --continue` in a 120×36 pty, interleaved run by run with `agent-tui --continue`,
and both empty starts (launch → the input drawn).

Claude Code writes its session itself: `claude -p "Task 0."`, then `claude -p --continue
"Task N."`, against a fake Anthropic Messages API on 127.0.0.1 that streams bench_tui's
steps: the reply "## Step N" with a code block and two Read calls of small project files
(a turn's last step: its reads, then its reply, end_turn). HOME is a throwaway directory
with onboarding, trust and the API key accepted; updater, telemetry and other traffic off.
`claude -p` marks its records "sdk-cli", which `claude --continue` never offers: they are
marked "cli", as a session typed in the app is. Claude Code then draws the session's tail
(2.1.197: steps 27-99) into the scrollback, the newest reply last. Each run also prints
claude's main thread's time on a CPU, waiting for one, and asleep (files, children, network).

    .venv/bin/python bench/claude_reopen.py CLAUDE [--runs 7]   # or CLAUDE_BIN=...
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import tui_history
import tui_pty
from bench_tui import REPLY, STEPS_PER_TURN
from precompile import compile_bytecode
from pty_app import PtyApp, visible

API_KEY = "sk-ant-api03-bench-0000000000000000000000"
CLAUDE_INPUT = "❯".encode()
"""Claude Code's input line, drawn with its first whole frame."""
NO_TRAFFIC = ["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_ERROR_REPORTING"]
QUIET = dict.fromkeys(["DISABLE_AUTOUPDATER", "DISABLE_TELEMETRY", *NO_TRAFFIC], "1")
"""Claude Code's own switches: no updater, telemetry, error reports or other traffic."""


def step_answer(body: dict[str, Any], project: Path) -> tuple[list[dict[str, Any]], str]:
    """The next step's content blocks and stop reason, from the conversation so far."""
    if not any(tool.get("name") == "Read" for tool in body.get("tools") or []):
        return [{"type": "text", "text": "Bench session"}], "end_turn"  # a side request
    messages = body["messages"]
    n = json.dumps([m for m in messages if m["role"] == "assistant"]).count("## Step ")
    reads = [
        {"type": "tool_use", "id": f"toolu_{n}_{k}_{time.monotonic_ns()}", "name": "Read"}
        | {"input": {"file_path": str(project / "src" / f"m{n}_{k}.py")}}
        for k in range(2)
    ]
    text = [{"type": "text", "text": REPLY.format(n=n)}]
    if n % STEPS_PER_TURN < STEPS_PER_TURN - 1:
        return text + reads, "tool_use"
    last = next((m["content"] for m in reversed(messages) if m["role"] == "assistant"), "")
    if isinstance(last, list) and all(b.get("type") == "tool_use" for b in last):
        return text, "end_turn"  # the turn's last step: its reply after its reads
    return reads, "tool_use"


class Handler(BaseHTTPRequestHandler):
    server: FakeAnthropic

    def log_message(self, *args: Any) -> None:
        pass

    def send(self, body: Any, kind: str = "application/json", status: int = 200) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.end_headers()
        self.wfile.write(body.encode() if isinstance(body, str) else json.dumps(body).encode())

    def do_GET(self) -> None:
        self.server.seen.append(f"{self.command} {self.path}")
        self.send({"type": "error", "error": {"type": "not_found_error"}}, status=404)

    do_HEAD = do_GET

    def do_POST(self) -> None:
        self.server.seen.append(f"POST {self.path}")
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if "count_tokens" in self.path:
            return self.send({"input_tokens": 20_000})
        content, stop = step_answer(body, self.server.project)
        usage = {"input_tokens": 20_000, "output_tokens": 500}
        usage |= {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        message = {"id": f"msg_{time.monotonic_ns()}", "type": "message", "role": "assistant"}
        message |= {"model": body.get("model", "claude"), "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            return self.send({**message, "content": content, "stop_reason": stop})
        events: list[str] = []

        def event(name: str, **payload: Any) -> None:
            events.append(f"event: {name}\ndata: {json.dumps({'type': name, **payload})}\n\n")

        event("message_start", message={**message, "content": [], "stop_reason": None})
        for index, block in enumerate(content):
            if block["type"] == "text":
                event("content_block_start", index=index, content_block={**block, "text": ""})
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                event("content_block_start", index=index, content_block={**block, "input": {}})
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            event("content_block_delta", index=index, delta=delta)
            event("content_block_stop", index=index)
        event("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage=usage)
        event("message_stop")
        self.send("".join(events), "text/event-stream")  # HTTP/1.0: ends at close


class FakeAnthropic(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, project: Path) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.project = project
        self.seen: list[str] = []
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()


class ClaudeApp(PtyApp):
    """`claude ARGS` in the pty (PtyApp launches agent-tui), with only `env` besides PATH."""

    def __init__(self, exe: str, workdir: Path, args: list[str], env: dict[str, str]) -> None:
        super().__init__(workdir, args, env=env)
        self.exe = exe

    def command(self) -> tuple[list[str], dict[str, str]]:
        return [self.exe, *self.args], self.env

    def drawn_at(self, text: bytes, timeout: float = 60.0) -> float:
        """When `text` was first on screen (NaN: never). Claude Code moves the cursor
        (CSI n G) instead of writing spaces: each move counts as one."""
        deadline = time.perf_counter() + timeout
        window, seen = b"", 0
        with self._cond:
            while True:
                for at, chunk in self.chunks[seen:]:
                    window = window[-4096:] + chunk
                    seen += 1
                    if text in visible(re.sub(rb"\x1b\[\d*G", b" ", window)):
                        return at
                left = deadline - time.perf_counter()
                if left <= 0 or self._closed:
                    return float("nan")
                self._cond.wait(left)

    def sched(self) -> tuple[float, float]:
        """Seconds claude's main thread has run on a CPU and waited for one (runnable);
        the rest since launch it slept (files, children, network, timers)."""
        ran, queued = Path(f"/proc/{self.proc.pid}/schedstat").read_text().split()[:2]
        return int(ran) / 1e9, int(queued) / 1e9


def claude_env(home: Path, server: FakeAnthropic) -> dict[str, str]:
    base = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL") if k in os.environ}
    url = f"http://127.0.0.1:{server.server_address[1]}"
    own = {"HOME": str(home), "TERM": "xterm-256color", "SHELL": "/bin/bash"}
    return base | QUIET | own | {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": API_KEY}


def prepare_home(home: Path, projects: list[Path], version: str) -> None:
    """Onboarding done, theme chosen, the projects trusted, the API key approved."""
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    seen = {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
    config = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "autoUpdates": False,
        "lastReleaseNotesSeen": version,
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        "projects": {
            str(project): {**seen, "projectOnboardingSeenCount": 4, "allowedTools": []}
            for project in projects
        },
    }
    (home / ".claude.json").write_text(json.dumps(config), encoding="utf-8")


def make_session(exe: str, project: Path, env: dict[str, str], steps: int) -> Path:
    """`claude -p` turns of STEPS_PER_TURN steps until `steps`; the session's JSONL."""
    (project / "src").mkdir(parents=True, exist_ok=True)
    for n in range(steps):
        for k in range(2):
            (project / "src" / f"m{n}_{k}.py").write_text("x = 1\n" * 40)
    for first in range(0, steps, STEPS_PER_TURN):
        again = ["--continue"] if first else []
        done = subprocess.run(
            [exe, "-p", *again, f"Task {first}."],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
        )
        if done.returncode != 0 or f"Step {first + STEPS_PER_TURN - 1}" not in done.stdout:
            sys.exit(f"claude -p turn {first} failed: {done.stdout[-500:]} {done.stderr[-500:]}")
    (session,) = Path(env["HOME"], ".claude", "projects").glob("*/*.jsonl")
    # `claude -p` marks its records "sdk-cli", which `claude --continue` skips: as typed
    text = session.read_text(encoding="utf-8")
    session.write_text(text.replace('"entrypoint":"sdk-cli"', '"entrypoint":"cli"'), "utf-8")
    return session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("claude", nargs="?", default=os.environ.get("CLAUDE_BIN"))
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--steps", type=int, default=tui_history.REOPEN_STEPS)
    parser.add_argument("--keep", action="store_true", help="leave the temporary directory")
    args = parser.parse_args()
    exe = args.claude and shutil.which(args.claude)
    if not exe:
        parser.exit(2, "claude_reopen: no claude found: give its path (argument or CLAUDE_BIN)\n")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    compile_bytecode()  # as after a first run, also where PYTHONDONTWRITEBYTECODE is set
    place = Path(tempfile.mkdtemp(prefix="claude-reopen-"))
    project, home, bare = place / "project", place / "home", place / "empty"
    project.mkdir()
    bare.mkdir()
    server = FakeAnthropic(project)
    try:
        env = claude_env(home, server)
        prepare_home(home, [project, bare], version.split()[0])
        session = make_session(exe, project, env, args.steps)
        kinds = [json.loads(line).get("type") for line in session.read_text().splitlines()]
        print(f"Claude Code {version}: {session.name}, {len(kinds)} records", end="")
        print(f" ({kinds.count('user')} user, {kinds.count('assistant')} assistant)", flush=True)
        marker = f"Step {args.steps - 1}".encode()
        full, empty = place / "agent-tui-full", place / "agent-tui-empty"
        own = tui_pty.project(full, history=args.steps)
        empty_env = tui_pty.project(empty)
        before = len(server.seen)
        claude, drawn, started, claude_started = [], [], [], []
        print(f"runs ({tui_pty.load()}); claude's main thread: ran / runnable / asleep")
        for run in range(args.runs + 1):  # the first of each warms the caches
            with ClaudeApp(exe, project, ["--continue"], env) as app:
                claude.append(app.drawn_at(marker) - app.start)
                ran, queued = app.sched()
            drawn.append(tui_history.reopen_once(full, own, marker))
            started.append(tui_history.empty_once(empty, empty_env))
            with ClaudeApp(exe, bare, [], env) as app:
                claude_started.append(app.drawn_at(CLAUDE_INPUT) - app.start)
            asleep = claude[-1] - ran - queued
            print(f"  run {run}: claude {claude[-1] * 1000:.0f} ms", end="")
            print(f" ({ran:.1f} / {queued:.1f}", end="")
            print(f" / {asleep:.1f} s)  agent-tui {drawn[-1] * 1000:.0f} ms", end="")
            print(f"  empty {started[-1] * 1000:.0f} ms", end="")
            print(f"  claude empty {claude_started[-1] * 1000:.0f} ms", flush=True)
        print(f"\nreopen, {args.steps} steps (120×36 pty, {args.runs} runs after one warm-up,")
        print(f"  {tui_pty.load()}):")
        print(f"  claude --continue, newest reply drawn: {tui_history._times(claude[1:])}")
        print(f"  agent-tui --continue, newest reply drawn: {tui_history._times(drawn[1:])}")
        print(f"  agent-tui, empty start, input drawn:   {tui_history._times(started[1:])}")
        print(f"  claude, empty start, input drawn:      {tui_history._times(claude_started[1:])}")
        print(f"  requests to the fake API while reopening: {server.seen[before:] or 'none'}")
    finally:
        server.shutdown()
        server.server_close()
        if not args.keep:
            shutil.rmtree(place, ignore_errors=True)
        else:
            print(f"kept {place}")


if __name__ == "__main__":
    main()
