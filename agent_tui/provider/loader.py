"""Import litellm lazily: it costs ~4 s and, by default, fetches a price map online."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from types import ModuleType

_lock = threading.Lock()
_module: ModuleType | None = None


def litellm() -> ModuleType:
    """The configured litellm module, imported on first use (thread-safe)."""
    global _module
    if _module is not None:
        return _module
    with _lock:
        if _module is None:
            # Use the price map shipped with litellm instead of downloading one.
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            # litellm overwrites TIKTOKEN_CACHE_DIR on first use unless this is set.
            if os.environ.get("TIKTOKEN_CACHE_DIR"):
                os.environ.setdefault("CUSTOM_TIKTOKEN_CACHE_DIR", os.environ["TIKTOKEN_CACHE_DIR"])
            import litellm as module

            module.suppress_debug_info = True
            module.telemetry = False
            module.drop_params = True
            _warm_up(module)
            _module = module
    return _module


def _warm_up(module: ModuleType) -> None:
    """Do what litellm otherwise does lazily inside the first request (~2 s): import
    the OpenAI SDK's resources (behind every OpenAI-compatible provider) and load the
    tokenizer it uses to price streamed responses (offline, from its bundled files)."""
    import importlib

    for name in ("openai.resources", "litellm.llms.openai.openai"):
        try:
            importlib.import_module(name)
        except ImportError:  # a litellm layout change must not break start-up
            continue
    with contextlib.suppress(Exception):  # only a warm-up: requests report real problems
        module.token_counter(model="gpt-4o", text="warm up")


async def load_litellm() -> ModuleType:
    """litellm without blocking the event loop (the import takes seconds)."""
    if _module is not None:
        return _module
    return await asyncio.to_thread(litellm)


def preload_in_background() -> threading.Thread:
    """Start importing litellm on a thread so the first request does not wait for it."""
    thread = threading.Thread(target=litellm, name="litellm-import", daemon=True)
    thread.start()
    return thread
