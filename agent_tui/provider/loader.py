"""Import litellm lazily: it costs seconds of CPU (docs/performance.md) and, by default,
fetches a price map online.

The first request also costs: litellm imports the OpenAI SDK's resources, and (with
`tools=`) its MCP gateway check imports the whole mcp SDK (skipped by
`_skip_mcp_handler` in provider/stream.py). `_warm_up` does the first on the import
thread so it overlaps the engine's start instead of delaying the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import threading
from types import ModuleType
from typing import Any

_lock = threading.Lock()
_module: ModuleType | None = None


def litellm() -> Any:
    """The configured litellm module, imported on first use (thread-safe). Blocks for
    seconds while it imports: on an event loop, await `load_litellm` instead. With a
    provider process running, the engine asks that (provider/api.py) and this process
    never imports litellm."""
    global _module
    if _module is not None:
        return _module
    with _lock:
        if _module is None:
            # Use the price map shipped with litellm instead of downloading one.
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            # In its default DEV mode litellm loads the first `.env` above its own files
            # (above the working directory under a debugger or coverage): a file a
            # repository ships could set OPENAI_API_BASE and receive the person's key.
            # Keys come from the person's environment and config only.
            os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
            # litellm overwrites TIKTOKEN_CACHE_DIR on first use unless this is set.
            if os.environ.get("TIKTOKEN_CACHE_DIR"):
                os.environ.setdefault("CUSTOM_TIKTOKEN_CACHE_DIR", os.environ["TIKTOKEN_CACHE_DIR"])
            # The import builds objects by the million that live as long as the process;
            # the collections it set off walked them again and again (docs/performance.md).
            # None while importing; then they leave the collector's way.
            collecting = gc.isenabled()
            gc.disable()
            try:
                import litellm as module

                module.suppress_debug_info = True
                module.telemetry = False
                module.drop_params = True
                _warm_up(module)
            finally:
                gc.freeze()
                if collecting:
                    gc.enable()
            _module = module
    return _module


FIRST_REQUEST_IMPORTS = (
    "openai.resources",
    "litellm.llms.openai.openai",
    # completion() checks messages for file ids through the proxy's types.
    "litellm.proxy.openai_files_endpoints.common_utils",
)
"""What litellm imports inside its first request rather than at its import."""


def _warm_up(module: ModuleType) -> None:
    """Do what litellm otherwise does lazily inside the first request: import
    FIRST_REQUEST_IMPORTS (the OpenAI SDK's resources, behind every OpenAI-compatible
    provider, and the rest). Its tokenizer (loaded when it prices a streamed
    response's prompt, after the request has left) is loaded by `warm_tokenizer` on the
    preload thread, without holding up the request."""
    import importlib

    for name in FIRST_REQUEST_IMPORTS:
        with contextlib.suppress(ImportError):  # a litellm layout change must not break start-up
            importlib.import_module(name)


def warm_tokenizer(module: ModuleType) -> None:
    with contextlib.suppress(Exception):  # only a warm-up: requests report real problems
        module.token_counter(model="gpt-4o", text="warm up")


def _import_and_warm() -> None:
    """The app's preload thread: litellm first (what the first request waits for), then
    the tokenizer, so its load never stalls the app's event loop. Then what they built
    is moved out of the collector's way (`gc.freeze`): litellm's modules live as long as
    the process, and a full collection that walks them holds the GIL long enough for a stall
    of the app's screen in the middle of a streamed reply."""
    warm_tokenizer(litellm())
    gc.freeze()


def imported() -> Any:
    """litellm if this process has imported it, else None (never waits)."""
    return _module


async def load_litellm() -> Any:
    """litellm without blocking the event loop (the import takes seconds)."""
    if _module is not None:
        return _module
    return await asyncio.to_thread(litellm)


_preload: threading.Thread | None = None


def preload_in_background(*, tokenizer: bool = True) -> threading.Thread:
    """Start importing litellm on a thread so the first request does not wait for it.

    Called as early as possible (cli.main, before the engine's modules are imported);
    later calls return the same thread. `tokenizer=False` (headless `run`): the tokenizer
    is left to litellm's first response, after the request has left, because loading it
    on this thread competes for the GIL with the request being built (it would leave later)."""
    global _preload
    with _lock:
        if _preload is None:
            target = _import_and_warm if tokenizer else litellm
            _preload = threading.Thread(target=target, name="litellm-import", daemon=True)
            _preload.start()
    return _preload
