"""The app's keys: their defaults (config/'s `KeybindsConfig` declares them with these)
and the configured ones read without pydantic, so the app's first frame binds them
before the config is validated (a leaf: only the plain JSON of `layers.raw_value`)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from agent_tui.config.layers import raw_value


@dataclass(frozen=True)
class Keybinds:
    leader: str = "ctrl+x"
    compact: str = "c"
    new_session: str = "n"
    sessions: str = "l"
    model: str = "m"
    sidebar: str = "b"
    uncompact: str = "z"
    undo: str = "u"
    redo: str = "r"
    pin: str = "p"
    agent_cycle: str = "a"
    permission_mode: str = "e"
    next_waiting: str = "w"
    interrupt: str = "escape"
    background: str = "ctrl+b"
    palette: str = "ctrl+p"


DEFAULT_KEYS = Keybinds()


def configured_keys() -> Keybinds:
    """`keybinds` of the config files over the defaults. A value of the wrong type is left
    at its default here: validating the whole config (after the first frame) reports it."""
    raw = raw_value("keybinds")
    if not isinstance(raw, dict):
        return DEFAULT_KEYS
    names = {f.name for f in fields(Keybinds)}
    return Keybinds(**{k: v for k, v in raw.items() if k in names and isinstance(v, str)})
