"""Snapshot cost per step: a working tree of 10,000 files (100 folders, a .gitignore'd
build folder). Prints the first snapshot (the shadow repository is created and every
file hashed once), then the median of a step's snapshot with nothing changed and with a
few files changed (goal: under 150 ms), and the cost of restoring them.

    .venv/bin/python bench/bench_snapshot.py [--files 10000] [--runs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_tui.storage.snapshot import Snapshots


def make_tree(root: Path, files: int) -> None:
    for index in range(files):
        folder = root / f"pkg{index % 100:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{index:05d}.py").write_text(f"# module {index}\n" + "x = 1\n" * 40)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    for index in range(1000):
        (root / "build" / f"out{index}.o").write_bytes(b"\0" * 256)


async def timed(coro: object) -> tuple[float, object]:
    start = time.perf_counter()
    result = await coro  # type: ignore[misc]
    return (time.perf_counter() - start) * 1000, result


async def main(files: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work, data = Path(tmp) / "work", Path(tmp) / "data"
        work.mkdir()
        make_tree(work, files)
        snapshots = Snapshots(work, data)
        if not snapshots.available:
            print("git is not installed: snapshots (and undo of files) are unavailable")
            return
        first_ms, first = await timed(snapshots.track())
        print(f"files in the tree:              {files:,} (+1,000 ignored)")
        print(f"first snapshot (cold):          {first_ms:8.1f} ms")
        unchanged = [(await timed(snapshots.track()))[0] for _ in range(runs)]
        print(f"step snapshot, nothing changed: {statistics.median(unchanged):8.1f} ms (median)")
        changed: list[float] = []
        tree = first
        for run in range(runs):
            for index in range(5):
                path = work / f"pkg{index:03d}" / f"mod{index:05d}.py"
                path.write_text(f"# changed in run {run}\n")
            ms, tree = await timed(snapshots.track())
            changed.append(ms)
        print(f"step snapshot, 5 files changed: {statistics.median(changed):8.1f} ms (median)")
        names = await snapshots.changed_files(str(first), str(tree))
        restore_ms, _ = await timed(snapshots.restore(str(first), names))
        print(f"restore {len(names)} files (undo):         {restore_ms:8.1f} ms")
        print("goal: a step's snapshot under 150 ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.files, args.runs))
