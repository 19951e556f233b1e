"""pydantic looks for plugins (its `pydantic` entry point group) when a process builds
its first model: it imports `importlib.metadata` and reads the metadata of every
installed distribution (litellm brings many), on the way to the app's first frame.
agent-tui uses no pydantic plugin: importing this module, before any model is built,
gives pydantic a plugin loader that finds none (unless pydantic has loaded its own).
Imported by the modules whose models a process builds first: usage.py (records.py
imports it) and config/settings.py."""

from __future__ import annotations

import sys
import types


def _no_plugins() -> tuple[()]:
    return ()


if "pydantic.plugin._loader" not in sys.modules:
    _loader = types.ModuleType("pydantic.plugin._loader")
    _loader.get_plugins = _no_plugins  # type: ignore[attr-defined]  # all pydantic asks of it
    sys.modules[_loader.__name__] = _loader
