"""The `@` file picker in a big repository: 50,000 files (plus a gitignored build folder
and node_modules that must not be walked). Prints the time to build the index (once per
picker opening, on a thread) and the filter latency per keystroke (goal: under 100 ms).

    .venv/bin/python bench/bench_picker.py [--files 50000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_tui.session.mentions import FileIndex

WORDS = ["core", "api", "widgets", "utils", "models", "views", "auth", "billing", "search"]
TYPED = ["src/widgets/utils_1", "bilmod", "zzz-nothing", "x"]
"""Queries typed one character at a time (a path, a fuzzy one, a miss, one letter)."""


def build_tree(root: Path, files: int) -> None:
    (root / ".gitignore").write_text("build/\n*.log\n")
    per_folder = 50
    for i in range(files):
        a, b = WORDS[i % len(WORDS)], WORDS[(i // len(WORDS)) % len(WORDS)]
        folder = root / "src" / a / b / f"pkg{i // per_folder % 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{b}_{i}.py").touch()
    for ignored in ("build", "node_modules"):
        folder = root / ignored / "deep"
        folder.mkdir(parents=True)
        for i in range(2000):
            (folder / f"junk{i}.js").touch()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        build_tree(root, args.files)
        print(f"tree: {args.files:,} files made in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        index = FileIndex.build(root)
        print(
            f"index: {len(index.paths):,} files in {(time.perf_counter() - started) * 1000:.0f} ms"
        )
        latencies: list[float] = []
        for query in TYPED:
            index = FileIndex(index.paths)  # a fresh picker: no narrowing from earlier typing
            for end in range(1, len(query) + 1):
                started = time.perf_counter()
                index.filter(query[:end])
                latencies.append((time.perf_counter() - started) * 1000)
            best = index.filter(query)[:1]
            print(f"  {query!r}: {len(query)} keystrokes, best match {best}")
        worst = max(latencies)
        print(
            f"per keystroke: median {statistics.median(latencies):.1f} ms, "
            f"p95 {sorted(latencies)[int(len(latencies) * 0.95)]:.1f} ms, "
            f"max {worst:.1f} ms (goal < 100 ms)"
        )


if __name__ == "__main__":
    main()
