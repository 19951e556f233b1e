"""pydantic looks for plugins (its `pydantic` entry point group) in the metadata of every
installed distribution when a process builds its first model: a scan of every
`*.dist-info` in the environment (litellm brings many), on the way to the app's first
frame. agent-tui uses no pydantic plugin, so importing this module tells pydantic there
are none, unless it looked already. Imported, before any model is defined, by the modules
whose models a process builds first: usage.py (records.py imports it) and
config/settings.py."""

from __future__ import annotations

from pydantic.plugin import _loader

if _loader._plugins is None:
    _loader._plugins = {}
