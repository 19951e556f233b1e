"""What a long session costs a person in a pseudo-terminal (`pty_app.PtyApp`, 120×36):
reopening it (`agent-tui --continue` until its newest reply is drawn, beside an empty
start until the input is drawn), and keys typed while a reply streams with no delay
in a session that already holds many steps, beside the same in an empty session.
Used by bench_tui.py (`--reopen`, `--echo-history`)."""

from __future__ import annotations

import statistics
from pathlib import Path

import tui_pty
from pty_app import PtyApp

REOPEN_STEPS = 100
REOPEN_RUNS = 5
ECHO_HISTORY_STEPS = 200


def reopen_once(workdir: Path, env: dict[str, str], marker: bytes) -> float:
    """Seconds from `agent-tui --continue` until `marker` is on screen."""
    with PtyApp(workdir, ["--continue"], env=env) as app:
        return app.wait_for(marker) - app.start


def empty_once(workdir: Path, env: dict[str, str]) -> float:
    """Seconds from `agent-tui` until the input is drawn."""
    with PtyApp(workdir, env=env) as app:
        return app.wait_for(tui_pty.PLACEHOLDER) - app.start


def _times(values: list[float]) -> str:
    return (
        f"median {statistics.median(values) * 1000:.0f} ms  min {min(values) * 1000:.0f} ms"
        f"  (runs: {' '.join(f'{v * 1000:.0f}' for v in values)})"
    )


def report_reopen(workdir: Path, steps: int = REOPEN_STEPS, runs: int = REOPEN_RUNS) -> None:
    """Launch → the newest reply of a `steps`-step session drawn, beside the empty start;
    interleaved, so both see the same load. The first launch of each warms the caches."""
    full_dir, empty_dir = workdir / "full", workdir / "empty"
    full_env = tui_pty.project(full_dir, history=steps)
    empty_env = tui_pty.project(empty_dir)
    newest = f"Step {steps - 1}".encode()
    reopen_once(full_dir, full_env, newest)  # warm-ups
    empty_once(empty_dir, empty_env)
    drawn, empty = [], []
    for _ in range(runs):
        drawn.append(reopen_once(full_dir, full_env, newest))
        empty.append(empty_once(empty_dir, empty_env))
    print(f"\nreopen (120×36 pty, {runs} runs each after one warm-up, {tui_pty.load()}):")
    print(f"  agent-tui --continue, {steps}-step session, newest reply drawn: {_times(drawn)}")
    print(f"  agent-tui, empty start, input drawn: {_times(empty)}")
    print(
        "  Claude Code beside it, the same minutes: bench/claude_reopen.py CLAUDE"
        " (goal: agent-tui ≤ Claude Code)"
    )


def _echo(values: list[float]) -> str:
    if not values:
        return "no samples"
    return (
        f"median {statistics.median(values) * 1000:.0f} ms"
        f"  p99 {tui_pty.percentile(values, 99) * 1000:.0f} ms"
        f"  max {max(values) * 1000:.0f} ms  (n={len(values)})"
    )


def report_echo_history(workdir: Path, steps: int = ECHO_HISTORY_STEPS) -> None:
    """Keys every 100 ms while a 6,000-word reply streams with no delay: in an empty
    session, and in a session of `steps` earlier steps opened with --continue."""
    print(f"\nkey echo at full stream speed (120×36 pty, {tui_pty.load()}):")
    for earlier in (0, steps):
        place = workdir / f"history-{earlier}"
        found = tui_pty.unthrottled(place, history=earlier)
        rate = found["chars"] / 4 / found["seconds"]
        label = f"{earlier} earlier steps" if earlier else "empty session"
        print(
            f"  {label:>18}: {_echo(found['latencies'])}"
            f"  (stream {found['seconds']:.1f} s, ~{rate:,.0f} tokens/s)"
        )
    print("  goal: median ≤ 25 ms and max ≤ 60 ms with history, as in an empty session")
