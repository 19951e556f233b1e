"""The right-hand panel: session, agent, model, context use, cost, compactions, todos,
background commands, changed files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.timer import Timer
from textual.widgets import Label, ProgressBar, Static

from agent_tui.ids import now_ms
from agent_tui.tool.background_lines import MARK, shorten, state

if TYPE_CHECKING:  # part of the first frame: nothing of the engine's until it is drawn
    from agent_tui.context.stats import SessionStats
    from agent_tui.context.window_usage import ContextUsage
    from agent_tui.events import BackgroundCommand
    from agent_tui.records import TodoItem

WARNING_SHARE = 0.8
"""The bar turns to warning at this share of the auto-compaction threshold."""
MAX_FILES_SHOWN = 12
MAX_BACKGROUND_SHOWN = 6
"""Background commands listed (the newest); /bashes lists them all."""
BACKGROUND_CHARS = 27
"""A command or its last line is cut to this width in the sidebar."""
TICK_SECONDS = 1.0
"""How often running times are redrawn while a command runs."""
SECTIONS = {
    "sessions": ("Sessions", "agent"),
    "todos": ("Todo", "background"),
    "background": ("Background", None),
}
"""The sections shown only when they have something: heading, and the section they are
drawn above when it is there (else the files' heading)."""
TODO_MARK = {"pending": "○", "in_progress": "◐", "completed": "●", "cancelled": "✕"}


def context_level(usage: ContextUsage) -> str:
    """'ok', 'warning' or 'error' for the context bar's colour."""
    if not usage.threshold or usage.tokens < usage.threshold * WARNING_SHARE:
        return "ok"
    return "error" if usage.tokens >= usage.threshold else "warning"


def context_text(usage: ContextUsage) -> str:
    if not usage.limit and not usage.tokens:
        return "0 tokens\nno step yet"
    if not usage.limit:
        return f"{usage.tokens:,} tokens\nwindow unknown"
    return f"{usage.tokens:,} / {usage.limit:,} tokens\n{usage.percent or 0:.1f}% used"


def cost_text(usage: ContextUsage) -> str:
    """'Cost $0.1234', with the last step's prompt-cache hit share when there was one."""
    text = f"Cost ${usage.cost:.4f}"
    if usage.cache_share is not None and (usage.cache_read or usage.cache_write):
        text += f" · cache {usage.cache_share:.0f}%"
    return text


def short_path(name: str, directory: str) -> str:
    try:
        return os.path.relpath(name, directory) if Path(name).is_absolute() else name
    except ValueError:
        return name


class Sidebar(VerticalScroll):
    DEFAULT_CSS = """
    Sidebar {
        width: 32;
        dock: right;
        border-left: vkey $panel;
        padding: 0 1;
        background: $surface;
    }
    Sidebar > .heading { color: $text-muted; text-style: bold; margin-top: 1; }
    Sidebar > #sidebar-title { text-style: bold; }
    Sidebar ProgressBar Bar { width: 1fr; }
    Sidebar ProgressBar Bar > .bar--bar { color: $success; }
    Sidebar ProgressBar.-warning Bar > .bar--bar { color: $warning; }
    Sidebar ProgressBar.-error Bar > .bar--bar { color: $error; }
    Sidebar #sidebar-files { color: $text-muted; }
    Sidebar #sidebar-agent { text-style: bold; }
    Sidebar #sidebar-agent.-plan { color: $warning; }
    Sidebar > .-todos { display: none; }
    Sidebar.-has-todos > .-todos { display: block; }
    Sidebar > .-sessions { display: none; }
    Sidebar.-has-sessions > .-sessions { display: block; }
    Sidebar > .-background { display: none; }
    Sidebar.-has-background > .-background { display: block; }
    """

    _background: list[BackgroundCommand] = []
    _tick: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static("New session", id="sidebar-title", markup=False)
        yield Static("", id="sidebar-directory", markup=False)
        # Sessions (side by side), Todo and Background: mounted once they have something
        # to show (`_section`); a first frame mounts, styles and lays out none of them.
        yield Label("Agent", classes="heading", id="sidebar-agent-heading")
        yield Static("build", id="sidebar-agent", markup=False)
        yield Label("Model", classes="heading")
        yield Static("", id="sidebar-model", markup=False)
        yield Label("Context", classes="heading")
        yield Static("", id="sidebar-context", markup=False)
        yield ProgressBar(total=100, show_eta=False, show_percentage=False, id="sidebar-bar")
        yield Static("", id="sidebar-cost", markup=False)
        yield Static("", id="sidebar-compactions", markup=False)
        yield Label("Files changed", classes="heading", id="sidebar-files-heading")
        yield Static("none yet", id="sidebar-files", markup=False)

    def show_session(self, title: str, directory: str, model: str) -> None:
        self.query_one("#sidebar-title", Static).update(title or "New session")
        self.query_one("#sidebar-directory", Static).update(directory)
        self.query_one("#sidebar-model", Static).update(model)

    def show_agent(self, name: str, description: str = "") -> None:
        """The agent the next message goes to, and what it is for."""
        agent = self.query_one("#sidebar-agent", Static)
        agent.update(f"{name}\n{description}" if description else name)
        agent.set_class(name == "plan", "-plan")

    def show_stats(self, stats: SessionStats, directory: str, auto: float = 1.0) -> None:
        """`auto`: the share of usable where automatic compaction fires (0: it is off)."""
        usage = stats.usage()
        self.query_one("#sidebar-context", Static).update(context_text(usage))
        bar = self.query_one("#sidebar-bar", ProgressBar)
        bar.update(progress=min(usage.percent or 0, 100))
        level = context_level(usage)
        bar.set_class(level == "warning", "-warning")
        bar.set_class(level == "error", "-error")
        self.query_one("#sidebar-cost", Static).update(cost_text(usage))
        count = stats.compactions
        when = f"auto at {auto:.0%}" if auto else "auto off"
        self.query_one("#sidebar-compactions", Static).update(
            f"{count} compaction{'s' if count != 1 else ''} · {when}"
        )
        files = list(dict.fromkeys(short_path(f, directory) for f in stats.files))
        if stats.changes:  # snapshots know every change, bash included, with line counts
            files = [f"{name} +{a} −{r}" for name, (a, r) in sorted(stats.changes.items())]
        text = "\n".join(files[-MAX_FILES_SHOWN:]) or "none yet"
        if len(files) > MAX_FILES_SHOWN:
            text = f"… {len(files) - MAX_FILES_SHOWN} more\n" + text
        self.query_one("#sidebar-files", Static).update(text)

    def show_sessions(self, strip: str) -> None:
        """The sessions working side by side here and their states (tui/side_by_side.py);
        hidden while there is only the one on screen."""
        self._section("sessions", strip)

    def show_todos(self, items: list[TodoItem]) -> None:
        """The session's todo list; the section is hidden while the list is empty."""
        self._section("todos", "\n".join(f"{TODO_MARK[i.status]} {i.content}" for i in items))

    def show_background(self, commands: list[BackgroundCommand]) -> None:
        """The shown session's background commands: each one's command, running time (or
        how it ended) and last line; hidden while it has none."""
        self._background = commands
        self._draw_background()
        running = any(c.status == "running" for c in commands)
        if running and self._tick is None:
            self._tick = self.set_interval(TICK_SECONDS, self._draw_background)
        elif not running and self._tick is not None:
            self._tick.stop()
            self._tick = None

    def _draw_background(self) -> None:
        now, lines = now_ms(), []
        for info in self._background[-MAX_BACKGROUND_SHOWN:]:
            lines.append(f"{MARK[info.status]} {shorten(info.command, BACKGROUND_CHARS)}")
            lines.append(f"  {state(info, now)}")
            if info.last_line.strip():
                lines.append(f"  {shorten(info.last_line, BACKGROUND_CHARS)}")
        if len(self._background) > MAX_BACKGROUND_SHOWN:
            lines.append(f"… {len(self._background) - MAX_BACKGROUND_SHOWN} more: /bashes")
        self._section("background", "\n".join(lines))

    def _section(self, name: str, text: str) -> None:
        """Section `name` shows `text`, hidden while it is empty (the `-has-NAME` class);
        mounted with its heading, in its place, the first time it has some."""
        self.set_class(bool(text), f"-has-{name}")
        found = self.query(f"#sidebar-{name}")
        if found:
            found.first(Static).update(text)
            return
        if not text:
            return
        body = Static(text, id=f"sidebar-{name}", classes=f"-{name}", markup=False)
        after = SECTIONS[name][1]
        following = self.query(f"#sidebar-{after}-heading") if after else None
        before = following.first() if following else self.query_one("#sidebar-files-heading")
        heading = Label(SECTIONS[name][0], classes=f"heading -{name}", id=f"sidebar-{name}-heading")
        self.mount(heading, body, before=before)
