"""How long asking a local server for its window takes (provider/windows.py).

Every question (llama.cpp /props, Ollama /api/show + /api/ps, LM Studio, vLLM) is asked
at once with a short timeout; the answer is cached for the process. Measured against the
fake local servers of tests/fake_local.py, a closed port, and a listener that accepts the
connection but never answers (the worst case: bounded by the timeout).

    .venv/bin/python bench/bench_windows.py
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_tui.provider import windows
from agent_tui.provider.windows import Target
from tests.fake_local import FakeLocal

RUNS = 20


async def timed(target: Target) -> tuple[float, windows.ServerWindow | None]:
    start = time.perf_counter()
    found = await windows.probe(target)
    return time.perf_counter() - start, found


async def measure(label: str, target: Target, runs: int = RUNS) -> None:
    times = []
    found = None
    for _ in range(runs):
        elapsed, found = await timed(target)
        times.append(elapsed * 1000)
    answer = f"{found.context:,} ({found.source})" if found else "no answer"
    print(
        f"{label:<38} median {statistics.median(times):7.1f} ms   max {max(times):7.1f} ms   "
        f"-> {answer}"
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def main() -> None:
    print(f"window probe, {RUNS} runs each (timeout {windows.PROBE_TIMEOUT} s per question)")
    for kind in ("llama.cpp", "ollama", "lmstudio", "vllm", "llama-cpp-python"):
        with FakeLocal(kind, n_ctx=8192) as server:  # type: ignore[arg-type]
            base = server.root_url if kind == "ollama" else server.base_url
            target = Target("openai/local-model", "local-model", base, False)
            await measure(f"fake {kind}", target)
    port = closed_port()
    await measure("closed port", Target("openai/m", "m", f"http://127.0.0.1:{port}/v1", False))
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # accepts (the kernel does), never answers
    port = silent.getsockname()[1]
    never = Target("openai/m", "m", f"http://127.0.0.1:{port}/v1", False)
    await measure("accepts, never answers", never, runs=3)
    silent.close()
    # The cache: a second question for the same model costs nothing.
    with FakeLocal("llama.cpp", n_ctx=8192) as server:
        from agent_tui.config.settings import Config, ProviderConfig

        config = Config(
            model="openai/local-model",
            provider={"openai": ProviderConfig(api_base=server.base_url)},
        )
        await windows.discover_window("openai/local-model", config)
        start = time.perf_counter()
        for _ in range(1000):
            await windows.discover_window("openai/local-model", config)
        per = (time.perf_counter() - start) / 1000 * 1e6
        print(f"{'cached answer (per step)':<38} {per:7.1f} µs")


if __name__ == "__main__":
    asyncio.run(main())
