"""The empty session: model, directory, window and the keys that matter, or, with no model
provider set up, what to set. The app shows it while the session has no messages.

Part of the app's first frame: the config is not validated yet then (`starting` shows
what is known without it), so the provider's helpers are imported when first shown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from agent_tui.config.keybinds import Keybinds

if TYPE_CHECKING:
    from agent_tui.config.settings import Config, KeybindsConfig


def _grid(rows: list[tuple[str, Text | str]], key_style: str = "bold") -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style=key_style, no_wrap=True)
    grid.add_column()
    for key, value in rows:
        grid.add_row(key, value)
    return grid


def key_rows(keys: KeybindsConfig | Keybinds) -> list[tuple[str, str]]:
    """The keys as /help names them (command/reports.py `help_text`)."""
    return [
        ("Enter", "send"),
        ("Shift+Enter", "new line (also Ctrl+J)"),
        ("@", "attach a file or folder"),
        ("!command", "run a shell command"),
        ("/compact", f"summarise the session now ({keys.leader} {keys.compact})"),
        ("/model", f"choose the model ({keys.leader} {keys.model})"),
        ("Tab", f"switch agent: build / plan, read-only ({keys.leader} {keys.agent_cycle})"),
        ("Shift+Tab", f"auto-accept edits on/off ({keys.leader} {keys.permission_mode})"),
        ("/help", "all commands and keys"),
        (keys.palette, "command palette"),
        (keys.interrupt, "interrupt the agent"),
        ("Ctrl+C twice", "quit (or /quit)"),
    ]


def setup_block() -> Group:
    """What to set when no provider is: the same choices as `defaults.setup_text`."""
    from agent_tui.provider.defaults import CONFIG_EXAMPLE, LOCAL_SERVERS, PROVIDERS

    variables = "  ".join(" or ".join(p.env) for p in PROVIDERS)
    servers = ", ".join(f"{s.label} on port {s.port}" for s in LOCAL_SERVERS)
    steps = _grid(
        [
            (
                "1.",
                Text.assemble("Set an API key, e.g. ", ("export OPENAI_API_KEY=sk-...", "bold")),
            ),
            ("", Text(variables, style="cyan")),
            ("2.", f"Or start a local server: {servers} (ollama serve)."),
            ("3.", 'Or set "model" and "provider" in agent-tui.json:'),
            ("", Text(CONFIG_EXAMPLE, style="cyan")),
        ],
        key_style="dim",
    )
    return Group(
        Text("No model provider is set up", style="bold yellow"),
        Text("The first message would fail. Do one of these, then start agent-tui again:"),
        steps,
    )


def _info(model: Text, directory: str, window: str) -> Table:
    return _grid([("Model", model), ("Directory", directory), ("Window", window)])


def starting(keys: Keybinds, directory: str, model: str | None) -> RenderableType:
    """The first frame's welcome: what is known before the config is validated (the
    model named in the files or on the command line, if any); `welcome` follows."""
    return Group(
        _info(Text(model or "…", style="bold"), directory, "…"), Text(""), _grid(key_rows(keys))
    )


def welcome(config: Config, model: str, directory: str) -> RenderableType:
    from agent_tui.provider.defaults import context_window, credentials_source

    source = credentials_source(config, model)
    window = context_window(model, config)
    model_line = Text(model, style="bold")
    if source is None:
        model_line.append("  no key for it: see below", style="yellow")
    elif source:
        model_line.append(f"  {source}", style="dim")
    info = _info(model_line, directory, f"{window:,} tokens" if window else "unknown")
    setup = [setup_block(), Text("")] if source is None else []
    return Group(info, Text(""), *setup, _grid(key_rows(config.keybinds)))


class WelcomeView(VerticalScroll):
    """Shown instead of the (empty) conversation until its first message."""

    DEFAULT_CSS = """
    WelcomeView { height: 1fr; padding: 1 2; }
    WelcomeView > Static { width: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="welcome-body")

    def show_starting(self, keys: Keybinds, directory: str, model: str | None) -> None:
        self.query_one("#welcome-body", Static).update(starting(keys, directory, model))

    def show(self, config: Config, model: str, directory: str) -> None:
        self.query_one("#welcome-body", Static).update(welcome(config, model, directory))
