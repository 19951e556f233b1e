"""Time an edit waits for diagnostics (lsp/language_servers.py `check`): the server's answer for
the text before and after, with a warm `ruff server` (the venv's), on a 300-line module.

    .venv/bin/python bench/bench_lsp.py [--edits 40]

Prints the cold start (the first edit: the server starts and opens the file), then the
median and worst time a warm server adds to an edit, and for one that adds an error; then
what each edit costs with a server that misbehaves (tests/fake_lsp.py: one that never
answers, one that never publishes diagnostics, one that stops reading), against
`lsp.timeout` (goal: never more)."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_tui.config.lsp_config import LspConfig
from agent_tui.lsp.language_servers import LspServers

RUFF = str(Path(sys.executable).parent / "ruff")


def module(n: int, broken: bool = False) -> str:
    lines = [f"def f{i}(a, b):\n    return a * {i} + b\n\n" for i in range(150)]
    lines.append(f"VALUE = {n}\n" if not broken else f"VALUE = undefined_{n}\n")
    return "".join(lines)


async def main(edits: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-lsp-"))
    path = root / "mod.py"
    config = LspConfig.model_validate(
        {"python": {"command": [RUFF, "server"], "extensions": [".py"]}}
    )
    servers = LspServers(config, dict(os.environ), print)
    start = time.perf_counter()
    await servers.check(root, path, None, module(0))
    cold = time.perf_counter() - start
    clean: list[float] = []
    broken: list[float] = []
    for n in range(1, edits + 1):
        start = time.perf_counter()
        said = await servers.check(root, path, module(n - 1), module(n, broken=n % 2 == 0))
        (broken if n % 2 == 0 else clean).append(time.perf_counter() - start)
        assert ("undefined_" in said) == (n % 2 == 0), said
    await servers.close()
    shutil.rmtree(root, ignore_errors=True)
    print(f"ruff server, {len(module(0).splitlines())}-line module, {edits} edits")
    print(f"  first edit (server starts): {cold * 1000:.0f} ms")
    for name, times in (("no new error", clean), ("a new error reported", broken)):
        ms = sorted(t * 1000 for t in times)
        print(f"  warm, {name}: median {statistics.median(ms):.1f} ms, worst {ms[-1]:.1f} ms")


async def misbehaving(edits: int, timeout: float = 1.0) -> None:
    fake = Path(__file__).resolve().parent.parent / "tests" / "fake_lsp.py"
    for mode in ("silent", "mute", "deaf"):
        root = Path(tempfile.mkdtemp(prefix="bench-lsp-"))
        command = [sys.executable, str(fake), mode]
        config = LspConfig.model_validate(
            {"timeout": timeout, "python": {"command": command, "extensions": [".py"]}}
        )
        servers = LspServers(config, dict(os.environ), lambda _: None)
        times = []
        for n in range(edits):
            text = module(n) * (40 if mode == "deaf" else 1)  # past the pipe's buffer
            start = time.perf_counter()
            await servers.check(root, root / "mod.py", module(n - 1) if n else None, text)
            times.append(time.perf_counter() - start)
        await servers.close()
        shutil.rmtree(root, ignore_errors=True)
        ms = sorted(t * 1000 for t in times)
        print(
            f"server that is {mode}, lsp.timeout {timeout:g} s: {edits} edits, median "
            f"{statistics.median(ms):.0f} ms, worst {ms[-1]:.0f} ms (goal ≤ {timeout * 1000:.0f})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=40)
    count = parser.parse_args().edits
    asyncio.run(main(count))
    asyncio.run(misbehaving(min(count, 8)))
