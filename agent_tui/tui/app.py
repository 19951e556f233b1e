"""The Textual app: a view of engine events plus the commands a person sends in.

The first frame comes first: this module and what it imports at the top are Textual and
the app's own light widgets; the config is validated, the database opened and the engine
built after that frame (`_start`, with `tui/opening.py`), litellm later still. What a
person types meanwhile is kept: text goes to the prompt, and a message sent, a command
or a leader key runs once the session is ready (`_when_started`).
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import App, ComposeResult, ScreenStackError
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Footer, Static, TextArea

from agent_tui.command import table
from agent_tui.errors import AgentTuiError
from agent_tui.keybinds import Keybinds, configured_keys
from agent_tui.tui import strip_cycles
from agent_tui.tui.agent_modes import AgentModes
from agent_tui.tui.app_commands import AppCommands
from agent_tui.tui.command_provider import AgentCommands
from agent_tui.tui.pin_commands import PinCommands
from agent_tui.tui.prompt_input import PromptInput
from agent_tui.tui.sidebar import Sidebar
from agent_tui.tui.status_line import StatusLine
from agent_tui.tui.submissions import Submissions
from agent_tui.tui.undo_commands import UndoCommands
from agent_tui.tui.welcome_view import WelcomeView

if TYPE_CHECKING:
    from agent_tui.config import Config, KeybindsConfig
    from agent_tui.context.stats import SessionStats
    from agent_tui.session.engine import Engine
    from agent_tui.storage.db import Database
    from agent_tui.storage.models import Session
    from agent_tui.tool.base import PermissionReply, PermissionRequest
    from agent_tui.tui.event_pump import EventPump
    from agent_tui.tui.opening import Opened
    from agent_tui.tui.session_view import SessionView

strip_cycles.install()  # frames' lines are freed when drawn, not by the collector

MIN_WIDTH, MIN_HEIGHT = 80, 24
QUIT_WINDOW = 2.0
"""Seconds in which a second Ctrl+C quits."""
FIRST_PAGE = 60
"""Messages read and shown before the rest of a session's history is read."""
FREEZE_DELAY = 0.3
"""Seconds after a session is shown before the one full garbage collection."""
PRELOAD_DELAY = 0.5
"""Seconds after the session is shown before litellm starts importing."""
LEADER_WINDOW = 2.0
"""Seconds the leader key waits for its second key."""
FRONT_END = "the agent-tui app"
"""How another process names this one when a session is busy here."""
STARTING_HINT = "Starting… what you sent runs as soon as the session is ready"

Opener = Callable[[], Awaitable["Opened"]]
"""Opens the config, database and session after the first frame (`opening.open_workspace`)."""


def _collections_back_on() -> None:
    """After the first frame: `__main__` turned the collector off while the app
    imported; what the imports built lives as long as the app, so it is moved out of
    the collector's way first."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _collect_and_freeze() -> None:
    gc.collect()
    gc.freeze()


class AgentApp(AppCommands, UndoCommands, PinCommands, AgentModes, App[int]):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    TITLE = "agent-tui"
    COMMANDS = {AgentCommands}
    BINDINGS = [
        Binding("ctrl+c", "quit_twice", "Quit (twice)", priority=True),
        # The input keeps focus; these scroll the conversation from it.
        Binding("pageup", "scroll_view(-1)", "Scroll up", show=False, priority=True),
        Binding("pagedown", "scroll_view(1)", "Scroll down", show=False, priority=True),
    ]

    config: Config
    db: Database
    engine: Engine
    """The three exist once the app has started (`loaded`); before that only what the
    first frame needs is here, and anything that needs them waits (`_when_started`)."""
    view: SessionView
    stats: SessionStats
    session_model: str

    def __init__(
        self,
        config: Config | None = None,
        db: Database | None = None,
        session: Session | None = None,
        *,
        opener: Opener | None = None,
        continuing: bool = False,
        model: str | None = None,
        model_titles: bool = True,
        directory: Path | None = None,
        directory_label: str | None = None,
        driver_class: type | None = None,
    ) -> None:
        """Either `config` and `db` (and the session to show), or an `opener` that makes
        them after the first frame (`agent-tui`: `opening.open_workspace`); `continuing`:
        it opens an existing session, so no welcome view is drawn before it."""
        if opener is None:
            if config is None or db is None:
                raise TypeError("AgentApp needs config and db, or an opener")
            opener = self._given
        keys: KeybindsConfig | Keybinds = config.keybinds if config else configured_keys()
        self.COMMAND_PALETTE_BINDING = keys.palette
        super().__init__(driver_class=driver_class)
        self.keys = keys
        if config is not None and db is not None:
            self.config, self.db = config, db
        self.session = session
        self._opener = opener
        self._continuing = continuing or session is not None
        self._model_titles = model_titles
        self.model_override = model
        self.directory = directory or Path.cwd()
        self.directory_label = directory_label
        self.pump: EventPump | None = None
        self.submissions = Submissions()
        """Messages, `!commands` and `/compact` reach the session in the order typed."""
        self.status = "idle"
        self.startup_error: AgentTuiError | None = None
        """Why the app could not start (shown by `launch` once the terminal is back)."""
        self._ctrl_c_at = 0.0
        self._leader_at = 0.0
        self.loaded = asyncio.Event()
        self._waiting: list[Callable[[], object]] = []
        """What was sent, run or pressed before `loaded`, in order."""
        self.bind(keys.interrupt, "interrupt", description="Interrupt")
        # Priority: the prompt's own ctrl+x (cut) must not swallow the leader.
        self._bindings.bind(keys.leader, "leader", "Leader", priority=True)

    # ---- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="chat"):
                # Opening a session: no welcome view to draw before its messages.
                welcome = WelcomeView(id="welcome")
                welcome.display = not self._continuing
                yield welcome
                # The SessionView is mounted here once the engine is imported (_start).
                yield StatusLine(id="status")
                yield Static("", id="completions", markup=False)
                yield PromptInput(id="prompt")
            yield Sidebar(id="sidebar")
        yield Static(
            f"Terminal too small: agent-tui needs {MIN_WIDTH}×{MIN_HEIGHT}.",
            id="too-small",
            markup=False,
        )
        yield Footer()

    @property
    def prompt(self) -> PromptInput:
        return self.query_one("#prompt", PromptInput)

    @property
    def sidebar(self) -> Sidebar:
        return self.query_one("#sidebar", Sidebar)

    @property
    def status_line(self) -> StatusLine:
        return self.query_one("#status", StatusLine)

    def on_mount(self) -> None:
        # Focused now, not later: keys typed before the first frame are already queued
        # behind this message and go to the prompt.
        self.screen.set_focus(self.prompt)
        self.prompt.show_agent(self.agent_name)
        self._check_size(self.size.width, self.size.height)
        if not self._continuing:
            label = self.directory_label or str(self.directory)
            self.query_one("#welcome", WelcomeView).show_starting(
                self.keys, label, self.model_override or _configured_model()
            )
        self.call_after_refresh(_collections_back_on)
        # The first frame, recorded for the next launch here (tui/instant_frame.py);
        # not one with keys typed at launch in it: the next launch would show them.
        first_frame_drawn = getattr(self._driver, "first_frame_drawn", None)
        if first_frame_drawn is not None:
            self.call_after_refresh(lambda: first_frame_drawn(keep=not self.prompt.text))
        # A start that fails other than by a person's error is a bug: shown, not hidden.
        self.call_after_refresh(self.run_worker, self._start())

    async def _start(self) -> None:
        """After the first frame: the engine's modules (on a thread), the config, the
        database and the session; then what was typed meanwhile runs."""
        from agent_tui.tui.opening import import_engine

        try:
            await asyncio.to_thread(import_engine)
            opened = await self._opener()
        except AgentTuiError as exc:  # a bad config, a broken database, no such session
            self.startup_error = exc
            self.exit(exc.exit_code)
            return
        await self._make_engine(opened.config, opened.db)
        self.load_agents()
        await self.show_session(opened.session)
        await self.load_custom_commands()
        # litellm costs seconds to import on a thread that competes with the UI for the
        # GIL: start it once the session has been painted, not during it.
        self.set_timer(PRELOAD_DELAY, self._preload)
        self.loaded.set()
        waiting, self._waiting = self._waiting, []
        for run in waiting:
            run()
        if waiting:
            self.status_line.set_hint(None)
        await self.engine.announce_sandbox()  # a notice if commands cannot be sandboxed

    async def _make_engine(self, config: Config, db: Database) -> None:
        from agent_tui.context.stats import SessionStats
        from agent_tui.engine_context import EngineContext
        from agent_tui.session.engine import Engine
        from agent_tui.tui.event_pump import EventPump
        from agent_tui.tui.session_view import SessionView

        self.config, self.db = config, db
        self.keys = config.keybinds
        self.session_model = self.model_override or config.model
        self.stats = SessionStats()
        context = EngineContext(db=db, config=config, ask=self.ask_permission, front_end=FRONT_END)
        self.engine = Engine(context, model_titles=self._model_titles)
        self.pump = EventPump(self)
        self.pump.attach(self.engine.ctx.bus)
        self.view = SessionView(id="view")
        self.view.display = self._continuing
        await self.query_one("#chat").mount(self.view, before="#status")

    async def _given(self) -> Opened:
        """The opener of an app made with its config and database (tests, benchmarks):
        the session set on it by then."""
        from agent_tui.tui.opening import Opened

        return Opened(self.config, self.db, self.session)

    def _when_started(self, run: Callable[..., object], *args: Any) -> bool:
        """False once the app has started; before, `run(*args)` is kept to run then, in
        the order things were typed, and True is returned."""
        if self.loaded.is_set():
            return False
        self._waiting.append(partial(run, *args))
        self.status_line.set_hint(STARTING_HINT)
        return True

    def _preload(self) -> None:
        from agent_tui.provider import remote
        from agent_tui.provider.loader import preload_in_background
        from agent_tui.tui.markdown_render import warm_highlighting

        if remote.current() is None:  # no provider process: litellm imports here
            preload_in_background()
        threading.Thread(target=warm_highlighting, name="warm-highlighting", daemon=True).start()
        self.run_worker(self._ask_window(), exit_on_error=False)

    async def _ask_window(self) -> None:
        """A local server's window, asked after the first frame: the welcome view and
        the sidebar show it once it is known."""
        if await self.engine.model_window(self.current_model) is not None:
            self._refresh_sidebar()

    def on_unmount(self) -> None:
        if self.pump is not None:
            self.pump.detach()

    def on_resize(self, event: events.Resize) -> None:
        self._check_size(event.size.width, event.size.height)

    def _check_size(self, width: int, height: int) -> None:
        self.set_class(width < MIN_WIDTH or height < MIN_HEIGHT, "-too-small")

    # ---- sessions ---------------------------------------------------------------------

    async def show_session(self, session: Session | None) -> None:
        """Load a session (or a blank new one) into the view and the sidebar.

        The newest page is read and painted first; the whole history (for the cost,
        the files touched and the entries above) is read after that frame.
        """
        from agent_tui.context.stats import SessionStats

        self.session = session
        page, complete = (
            await self.db.recent_messages(session.id, FIRST_PAGE) if session else ([], True)
        )
        page = [m for m in page if not m.info.undone]  # taken back with /undo
        self.stats = SessionStats.of(page)
        await self.view.load(session, page)
        self.agent_of(page)
        self.show_welcome(not page)
        self._refresh_sidebar()
        self.status_line.set_status(
            "busy" if session and self.engine.is_busy(session.id) else "idle"
        )
        if session is not None:
            await self.view.wait_for_refresh()  # the newest page is on screen first
            if self.session is not session:
                return  # another session was opened meanwhile
            await self._show_history(session, complete)
        else:
            self.sidebar.show_todos([])
        self.run_worker(self.refresh_changes(), exit_on_error=False)
        # Mounted history is long-lived: keep it out of the collector's way (after the
        # first paint: a full collection holds the GIL the screen writer needs).
        self.set_timer(FREEZE_DELAY, _collect_and_freeze)

    async def _show_history(self, session: Session, complete: bool) -> None:
        """What needs the whole history: stats, the model, and the entries above."""
        from agent_tui.context.stats import SessionStats

        if not complete:  # read first: the model's history read below is then cached
            messages = await self.db.all_messages(session.id)
            messages = [m for m in messages if not m.info.undone]
            if self.session is not session:
                return
            self.stats = SessionStats.of(messages)
            self.view.add_older(messages)
        if self.model_override is None:
            self.session_model = await self.engine.session_model(session.id)
        self._refresh_sidebar()
        self.sidebar.show_todos(await self.db.get_todos(session.id))

    async def ensure_session(self) -> Session:
        if self.session is None:
            session = await self.engine.new_session(self.directory)
            if self.session is None:  # not made meanwhile by another worker
                self.session = session
                self.apply_permission_mode()
                self._refresh_sidebar()
        return self.session

    def _refresh_sidebar(self) -> None:
        session = self.session
        directory = session.directory if session else str(self.directory)
        title = session.title if session and session.title else "New session"
        self.sidebar.show_session(title, self.directory_label or directory, self.agent_model)
        welcome = self.query_one("#welcome", WelcomeView)
        if welcome.display:
            welcome.show(self.config, self.current_model, self.directory_label or directory)
        self.sidebar.show_stats(self.stats, directory)

    def show_welcome(self, shown: bool) -> None:
        """The welcome view stands in for the conversation while it has no message."""
        self.query_one("#welcome", WelcomeView).display = shown
        self.view.display = not shown

    @property
    def current_model(self) -> str:
        return self.model_override or self.session_model

    # ---- engine events ----------------------------------------------------------------

    async def on_event_pump_batch(self, _: EventPump.Batch) -> None:
        from agent_tui.tui.app_events import apply_event

        pump = self.pump
        assert pump is not None
        if pump.deferred():
            return  # a key was just typed: its frame first
        start = time.perf_counter()
        for event in pump.take():
            try:
                await apply_event(self, event)
            except Exception as exc:  # a view bug must not take the app down
                self.log.error(f"failed to show {event.type}: {exc!r}")
                self.notify(f"Display error: {exc}", severity="error")
        # How long the batch took to apply and draw spaces the next ones (keys first).
        self.screen.call_after_refresh(lambda: pump.drawn(time.perf_counter() - start))

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and self.pump is not None:
            self.pump.hold()  # the key is drawn before the stream's next batch
        await super().on_event(event)

    # ---- permissions ------------------------------------------------------------------

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
        from agent_tui.tui.permission_screen import PermissionScreen

        answer: asyncio.Future[PermissionReply] = asyncio.get_running_loop().create_future()

        def done(reply: PermissionReply | None) -> None:
            if not answer.done():
                answer.set_result(reply or "deny")

        self.push_screen(PermissionScreen(request), callback=done)
        return await answer

    # ---- the prompt -------------------------------------------------------------------

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area is not self.prompt:
            return
        found = self.prompt.completions()
        hint = "   ".join(f"{c.usage} — {c.help}" for c in found[:3])
        completions = self.query_one("#completions", Static)
        if hint != completions.content:
            # Only when it changes: an update lays the whole screen out again, and a
            # key typed while a long reply streams would wait for that (bench_tui).
            completions.update(hint)
        completions.set_class(bool(found), "-shown")

    def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        text = event.text
        if not text.strip() or self._when_started(self.on_prompt_input_submitted, event):
            return
        # The prompt cleared itself on Enter: keys typed meanwhile start the next message.
        if text.lstrip().startswith("!"):  # the person's own shell command
            self.prompt.remember(text)
            self.run_worker(self._shell(text.lstrip()[1:].strip()), exit_on_error=False)
            return
        parsed = table.parse(text)
        if parsed is not None:
            name, args = parsed
            command = table.find(name, self.prompt.commands)
            if command is None:
                self._restore(text)
                self.notify(f"Unknown command /{name}: /help lists them.", severity="warning")
                return
            self.prompt.remember(text)
            self.run_command(command, args)
            return
        self.prompt.remember(text)
        self.run_worker(self._send(text), exit_on_error=False)

    async def _send(self, text: str, *, model: str | None = None, typed: str = "") -> None:
        """Send `text`; `model` overrides for this message (a custom command's), `typed`
        is what goes back in the prompt on failure when it differs from `text`."""
        model = model or self.model_override
        agent = self.agent_name

        async def send(saved: asyncio.Event) -> None:
            session = await self.ensure_session()
            await self.engine.prompt(session.id, text, model=model, agent=agent, saved=saved)

        try:
            await self.submissions.run(send)
        except AgentTuiError as exc:
            self._restore(typed or text)
            message = getattr(exc, "summary", None) or str(exc)  # the long form is on screen
            self.notify(message, title="Not sent", severity="error", timeout=10)
        except Exception as exc:
            self._restore(typed or text)
            self.notify(f"{type(exc).__name__}: {exc}", title="Not sent", severity="error")

    async def _shell(self, command: str) -> None:
        async def shell(saved: asyncio.Event) -> None:
            session = await self.ensure_session()
            await self.engine.run_shell(session.id, command, saved)

        try:
            await self.submissions.run(shell)
        except AgentTuiError as exc:
            self._restore(f"!{command}")
            self.notify(str(exc), title="Not run", severity="error", timeout=10)

    # ---- @file mentions -----------------------------------------------------------------

    def on_prompt_input_mention_started(self, event: PromptInput.MentionStarted) -> None:
        """Open the picker for the `@` just typed, unless its word was sent, erased or
        finished first (fast typing, a script driving the terminal): a late picker
        would take the next keys. Checked after the keys already on their way to the
        prompt (its queue, then the app's), so they land in the prompt; what was typed
        after the `@` is the picker's first filter."""
        self.prompt.call_later(self.call_later, self._open_picker, event.token)

    def _open_picker(self, token: int) -> None:
        mention = self.prompt.mention_word(token)
        if mention is None or isinstance(self.screen, ModalScreen):
            return
        if self._when_started(self._open_picker, token):
            return
        from agent_tui.tui.file_picker_screen import FilePickerScreen

        root = Path(self.session.directory) if self.session else self.directory
        picker = FilePickerScreen(root, query=mention[0])
        self.push_screen(picker, callback=partial(self._insert_mention, token))

    def _insert_mention(self, token: int, path: str | None) -> None:
        """The path (and a space) replaces what was typed after the `@`."""
        from agent_tui.tui.file_picker_screen import SEND

        self.prompt.focus()
        if path == SEND:
            self.prompt.submit()
            return
        mention = self.prompt.mention_word(token)
        if path and mention is not None:
            _, start, end = mention
            self.prompt.replace(f"{path} ", start, end)
        elif path:
            self.prompt.insert(f"{path} ")

    def _restore(self, text: str) -> None:
        """Put a failed message back so nothing typed is lost."""
        current = self.prompt.text
        self.prompt.load_text(text if not current.strip() else f"{text}\n{current}")
        self.prompt.move_cursor(self.prompt.document.end)

    # ---- keys -------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # In a dialog, its own list or text gets PageUp/PageDown.
        return not (action == "scroll_view" and isinstance(self.screen, ModalScreen))

    async def action_scroll_view(self, direction: int) -> None:
        if not self.loaded.is_set():
            return  # nothing to scroll yet
        if direction < 0:
            await self.view.action_page_up()
        else:
            self.view.action_page_down()

    def action_interrupt(self) -> None:
        if not self.loaded.is_set():
            return  # nothing runs yet
        if self.session is not None and self.engine.abort(self.session.id):
            self.status_line.set_hint("Interrupting…")
            self.set_timer(1.0, lambda: self.status_line.set_hint(None))

    def action_quit_twice(self) -> None:
        now = time.monotonic()
        if now - self._ctrl_c_at < QUIT_WINDOW:
            self.exit(0)
            return
        self._ctrl_c_at = now
        self.notify("Press Ctrl+C again to quit.", timeout=QUIT_WINDOW)

    def action_leader(self) -> None:
        self._leader_at = time.monotonic()
        self.prompt.leader_active = True
        keys = self.keys
        self.status_line.set_hint(
            f"{keys.leader}: {keys.compact} compact · {keys.new_session} new session · "
            f"{keys.sessions} sessions · {keys.model} model · {keys.sidebar} sidebar · "
            f"{keys.uncompact} uncompact · {keys.undo} undo · {keys.redo} redo · {keys.pin} pin · "
            f"{keys.agent_cycle} agent · {keys.permission_mode} auto-accept edits"
        )
        self.set_timer(LEADER_WINDOW, self._leader_timeout)

    def _leader_timeout(self) -> None:
        if time.monotonic() - self._leader_at < LEADER_WINDOW - 0.01:
            return
        try:
            self.prompt.leader_active = False
        except (NoMatches, ScreenStackError):
            return  # the app closed within the window: its screen is gone
        self.status_line.set_hint(None)

    def on_prompt_input_leader_key(self, event: PromptInput.LeaderKey) -> None:
        self.run_leader(event.key)

    def on_prompt_input_agent_cycle(self, event: PromptInput.AgentCycle) -> None:
        if not self._when_started(self.on_prompt_input_agent_cycle, event):
            self.action_cycle_agent()

    def on_prompt_input_permission_mode_cycle(self, event: PromptInput.PermissionModeCycle) -> None:
        if not self._when_started(self.on_prompt_input_permission_mode_cycle, event):
            self.action_cycle_permission_mode()

    def on_key(self, event: events.Key) -> None:
        if self.prompt.leader_active and time.monotonic() - self._leader_at < LEADER_WINDOW:
            self.prompt.leader_active = False
            event.stop()
            self.run_leader(event.key)

    def run_leader(self, key: str) -> None:
        self.status_line.set_hint(None)
        if time.monotonic() - self._leader_at >= LEADER_WINDOW:
            return
        if self._when_started(self._run_leader_action, key):
            return
        self._run_leader_action(key)

    def _run_leader_action(self, key: str) -> None:
        keys = self.config.keybinds
        actions = {
            keys.compact: self.action_compact,
            keys.new_session: self.action_new_session,
            keys.sessions: self.action_sessions,
            keys.model: self.action_choose_model,
            keys.sidebar: self.action_toggle_sidebar,
            keys.uncompact: self.action_uncompact,
            keys.undo: self.action_undo,
            keys.redo: self.action_redo,
            keys.pin: self.action_pin,
            keys.agent_cycle: self.action_cycle_agent,
            keys.permission_mode: self.action_cycle_permission_mode,
        }
        action = actions.get(key)
        if action is not None:
            action()

    def run_command(self, command: table.Command, args: str) -> None:
        """A slash command or palette entry; one typed before the start runs after it."""
        if not self._when_started(self.run_command, command, args):
            super().run_command(command, args)

    def action_toggle_sidebar(self) -> None:
        self.sidebar.display = not self.sidebar.display


def _configured_model() -> str | None:
    """The model the config files name, unvalidated (the first frame's welcome)."""
    from agent_tui.config_files import raw_value

    try:
        model = raw_value("model")
    except AgentTuiError:
        return None  # reported when the config is validated
    return model if isinstance(model, str) else None
