"""The Textual app: a view of engine events plus the commands a person sends in.

The first frame comes first: this module and what it imports at the top are Textual and
the app's own light widgets; the engine is opened after that frame, its config validated
(`_start`: an `Opener`, `tui/app_opening.py` for `agent-tui`), litellm later still. What a
person types meanwhile is kept: text goes to the prompt, and a message sent, a command
or a leader key runs once the session is ready (`_when_started`).
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import App, ComposeResult, ScreenStackError
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from agent_tui.command import catalog
from agent_tui.command.core import APP, Command
from agent_tui.config.keybinds import Keybinds, configured_keys
from agent_tui.errors import AgentTuiError
from agent_tui.tui import partial_frames, strip_cycles
from agent_tui.tui import person_dialogs as person
from agent_tui.tui.command_provider import AgentCommands
from agent_tui.tui.conversation import Conversation
from agent_tui.tui.prompt_input import PromptInput
from agent_tui.tui.sidebar import Sidebar
from agent_tui.tui.status_line import StatusLine

if TYPE_CHECKING:
    from agent_tui.config.settings import Config, KeybindsConfig
    from agent_tui.session.engine import Engine
    from agent_tui.session.newest_page import Page
    from agent_tui.session.opening import Opened
    from agent_tui.tool.base import AskPermission, PermissionReply, PermissionRequest
    from agent_tui.tui.tool_line import ToolLine
    from agent_tui.tui.user_message_view import UserMessageView

strip_cycles.install()  # frames' lines are freed when drawn, not by the collector
partial_frames.install()  # a partial frame renders only the widgets and lines it shows

MIN_WIDTH, MIN_HEIGHT = 80, 24
QUIT_WINDOW = 2.0
"""Seconds in which a second Ctrl+C quits."""
PRELOAD_DELAY = 0.5
"""Seconds after the session is shown before litellm starts importing."""
LEADER_WINDOW = 2.0
"""Seconds the leader key waits for its second key."""
STARTING_HINT = "Starting… what you sent runs as soon as the session is ready"

Opener = Callable[["AskPermission"], Awaitable["Opened"]]
"""Opens the engine, asking the person through the app, with its config and the session
to show, after the first frame (`app_opening.open_workspace`)."""


def _collections_back_on() -> None:
    """After the first frame: `__main__` turned the collector off while the app
    imported; what the imports built lives as long as the app, so it is moved out of
    the collector's way first."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


class AgentApp(App[int]):
    """The frame around the conversation: the start, the keys, permission questions,
    and where what the person types goes (a message, a `!command`, a command)."""

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
    engine: Engine
    """Both exist once the app has started (`loaded`); before that only what the first
    frame needs is here, and anything that needs them waits (`when_started`)."""

    def __init__(
        self,
        opener: Opener,
        *,
        first_page: Page | None = None,
        continuing: bool = False,
        model: str | None = None,
        directory: Path | None = None,
        directory_label: str | None = None,
        driver_class: type | None = None,
    ) -> None:
        """`opener` opens the engine after the first frame (`agent-tui`:
        `app_opening.open_workspace`); `first_page`: the newest page of the session it
        opens, read before the engine's modules are imported (`app_opening.first_page`),
        drawn in the first frame;
        `continuing`: it opens an existing session, so no welcome view is drawn before it;
        `model`: the one --model named."""
        keys: KeybindsConfig | Keybinds = configured_keys()
        self.COMMAND_PALETTE_BINDING = keys.palette
        super().__init__(driver_class=driver_class)
        self.keys = keys
        self._opener = opener
        self.chat = Conversation(
            directory=directory or Path.cwd(),
            directory_label=directory_label,
            model=model,
            continuing=continuing,
            first_page=first_page,
            id="main",
        )
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
        # Priority: it must reach the app whatever has the focus, while a turn runs. Not
        # in the footer: /help and the docs name it.
        self._bindings.bind(keys.background, "background", "Background", show=False, priority=True)

    # ---- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield self.chat
        # The "terminal too small" notice is mounted the first time it is (`_check_size`).
        yield Footer()

    @property
    def prompt(self) -> PromptInput:
        return self.chat.prompt

    @property
    def sidebar(self) -> Sidebar:
        return self.chat.sidebar

    @property
    def status_line(self) -> StatusLine:
        return self.chat.status_line

    def on_mount(self) -> None:
        # Focused now, not later: keys typed before the first frame are already queued
        # behind this message and go to the prompt.
        self.screen.set_focus(self.prompt)
        chat = self.chat
        self.prompt.show_agent(chat.agent_name)
        self._check_size(self.size.width, self.size.height)
        if not chat.continuing:
            label = chat.directory_label or str(chat.directory)
            chat.welcome.show_starting(self.keys, label, chat.model_override or _configured_model())
        self.call_after_refresh(_collections_back_on)
        # A start that fails other than by a person's error is a bug: shown, not hidden.
        self.call_after_refresh(self.run_worker, self._start())

    async def _start(self) -> None:
        """After the first frame: the engine's modules (on a thread), the engine with its
        config and the session; then what was typed meanwhile runs."""
        from agent_tui.tui.app_opening import import_engine

        try:
            await asyncio.to_thread(import_engine)
            opened = await self._opener(self.ask_permission)
        except AgentTuiError as exc:  # a bad config, a broken database, no such session
            self.startup_error = exc
            self.exit(exc.exit_code)
            return
        self.engine, self.config = opened.engine, opened.config
        self.keys = opened.config.keybinds
        await self.chat.start(opened.engine, opened.config)
        await self.chat.show_session(opened.session)
        await person.load_custom(self.chat)
        # litellm costs seconds to import on a thread that competes with the UI for the
        # GIL: start it once the session has been painted, not during it.
        self.set_timer(PRELOAD_DELAY, self._preload)
        self.loaded.set()
        waiting, self._waiting = self._waiting, []
        for run in waiting:
            run()
        if waiting:
            self.status_line.set_hint(None)
        # a notice if commands cannot be sandboxed
        await self.engine.workspace(self.chat.directory).announce_sandbox()
        self.ask_project_trust()

    def ask_project_trust(self) -> None:
        """A project whose own config or `.agent-tui/` waits for trust: asked (/trust),
        listing what it would add; no keeps the safe part (session/hook_points.py). One
        refused for good (an editor's "Reject always") is not, until its files change."""
        workspace = self.engine.workspace(self.chat.directory)
        if workspace.asks_trust and not workspace.trust_refused:
            person.run(self.chat, catalog.named("trust"))

    def when_started(self, run: Callable[..., object], *args: Any) -> bool:
        """False once the app has started; before, `run(*args)` is kept to run then, in
        the order things were typed, and True is returned."""
        if self.loaded.is_set():
            return False
        self._waiting.append(partial(run, *args))
        self.status_line.set_hint(STARTING_HINT)
        return True

    def _preload(self) -> None:
        from agent_tui import procs
        from agent_tui.provider import remote
        from agent_tui.provider.loader import preload_in_background
        from agent_tui.tui.highlighting import HIGHLIGHTING

        procs.reap_in_background()  # what a killed agent-tui left running (procs.py)
        if remote.current() is None:  # no provider process: litellm imports here
            preload_in_background()
        HIGHLIGHTING.start(partial(self.call_from_thread, self._rehighlight))
        self.run_worker(self._ask_window, exit_on_error=False)  # made when it runs

    def _rehighlight(self) -> None:
        """Draw again the code drawn plain before its lexer was built (`highlighting.py`)."""
        from agent_tui.tui.text_part_view import TextPartView

        for screen in self.screen_stack:
            for view in screen.query(TextPartView):
                view.rehighlight()

    def on_unmount(self) -> None:
        from agent_tui.tui.highlighting import HIGHLIGHTING

        HIGHLIGHTING.stop()  # its thread redraws in this app no more

    async def _ask_window(self) -> None:
        """A local server's window, asked after the first frame: the welcome view and
        the sidebar show it once it is known."""
        from agent_tui.provider.windows import discover_window

        config = self.engine.workspace(self.chat.directory).config
        if await discover_window(self.chat.current_model, config) is not None:
            self.chat.refresh_sidebar()

    def on_resize(self, event: events.Resize) -> None:
        self._check_size(event.size.width, event.size.height)

    def _check_size(self, width: int, height: int) -> None:
        too_small = width < MIN_WIDTH or height < MIN_HEIGHT
        self.set_class(too_small, "-too-small")
        if too_small and not self.query("#too-small"):
            notice = f"Terminal too small: agent-tui needs {MIN_WIDTH}×{MIN_HEIGHT}."
            self.screen.mount(
                Static(notice, id="too-small", markup=False), before=self.query_one(Footer)
            )

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.chat.key_typed()  # drawn before the stream's next batch
        await super().on_event(event)

    # ---- permissions ------------------------------------------------------------------

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
        """Asked in a dialog once the request's session is on screen: a session working
        beside it waits for the person to open it (tui/side_by_side.py)."""
        from agent_tui.tui.permission_screen import PermissionScreen

        async def on_screen() -> PermissionReply:
            answer: asyncio.Future[PermissionReply] = asyncio.get_running_loop().create_future()

            def done(reply: PermissionReply | None) -> None:
                if not answer.done():
                    answer.set_result(reply or "deny")

            self.push_screen(PermissionScreen(request), callback=done)
            return await answer

        return await self.chat.side.ask(request, on_screen)

    def action_next_waiting(self) -> None:
        """Open the session that has waited longest for the person (a question, a plan)."""
        session_id = self.chat.side.board.next_waiting()
        if session_id is None:
            self.notify("No other session is waiting for you.", timeout=4)
        else:
            self.run_worker(self._open_session(session_id), exit_on_error=False)

    def action_background(self) -> None:
        """Send the shown session's running bash command to the background: its call
        returns to the model at once and the same process goes on (tool/bash.py)."""
        session = self.chat.session if self.loaded.is_set() else None
        if session is None or not self.engine.live(session.id).background.send_foreground():
            self.notify("No command is running to send to the background.", timeout=4)
        else:
            self.notify("Sent to the background: /bashes lists it.", timeout=4)

    # ---- the prompt -------------------------------------------------------------------

    def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        text = event.text
        if not text.strip() or self.when_started(self.on_prompt_input_submitted, event):
            return
        name, args = catalog.parse(text) or (None, "")
        command = catalog.find(name, self.prompt.commands) if name is not None else None
        if name is not None and command is None:
            self.chat.restore(text)
            self.notify(f"Unknown command /{name}: /help lists them.", severity="warning")
            return
        # The prompt cleared itself on Enter: keys typed meanwhile start the next message.
        self.prompt.remember(text)
        if command is not None:
            self.run_command(command, args)
        elif text.lstrip().startswith("!"):  # the person's own shell command
            self.run_worker(self.chat.shell(text.lstrip()[1:].strip()), exit_on_error=False)
        else:
            self.run_worker(self.chat.send(text), exit_on_error=False)

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
        if self.when_started(self._open_picker, token):
            return
        from agent_tui.tui.file_picker_screen import FilePickerScreen

        session = self.chat.session
        root = Path(session.directory) if session is not None else self.chat.directory
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

    # ---- keys -------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # In a dialog, its own list or text gets PageUp/PageDown.
        return not (action == "scroll_view" and isinstance(self.screen, ModalScreen))

    async def action_scroll_view(self, direction: int) -> None:
        if not self.loaded.is_set():
            return  # nothing to scroll yet
        if direction < 0:
            await self.chat.view.action_page_up()
        else:
            self.chat.view.action_page_down()

    def action_interrupt(self) -> None:
        if not self.loaded.is_set():
            return  # nothing runs yet
        session = self.chat.session
        if session is not None and self.engine.abort(session.id):
            self.status_line.set_hint("Interrupting…")
            self.set_timer(1.0, lambda: self.status_line.set_hint(None))

    def action_quit_twice(self) -> None:
        now = time.monotonic()
        if now - self._ctrl_c_at < QUIT_WINDOW:
            self.run_worker(self.leave(), exclusive=True, group="leave")
            return
        self._ctrl_c_at = now
        self.notify("Press Ctrl+C again to quit.", timeout=QUIT_WINDOW)

    async def leave(self) -> None:
        """Quit. The shown session's worktree goes when it holds no change; one that
        does is kept or removed as the person says (session/worktree_sessions.py)."""
        from agent_tui.tui.worktree_screen import REMOVE, WorktreeScreen

        session = self.chat.session if self.loaded.is_set() else None
        try:
            kept = session and await self.engine.worktrees.leave(session.id)
            if session and kept and await self.push_screen_wait(WorktreeScreen(kept)) == REMOVE:
                await self.engine.worktrees.remove(session.id)
        except AgentTuiError as exc:  # git refused: the worktree stays, and we still go
            self.notify(str(exc), severity="error")
        self.exit(0)

    def action_leader(self) -> None:
        self._leader_at = time.monotonic()
        self.prompt.leader_active = True
        keys = self.keys
        self.status_line.set_hint(
            f"{keys.leader}: {keys.compact} compact · {keys.new_session} new session · "
            f"{keys.sessions} sessions · {keys.model} model · {keys.sidebar} sidebar · "
            f"{keys.uncompact} uncompact · {keys.undo} undo · {keys.redo} redo · {keys.pin} pin · "
            f"{keys.agent_cycle} agent · {keys.permission_mode} auto-accept edits · "
            f"{keys.next_waiting} next waiting"
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
        if not self.when_started(self.on_prompt_input_agent_cycle, event):
            self.chat.cycle_agent()

    def on_prompt_input_permission_mode_cycle(self, event: PromptInput.PermissionModeCycle) -> None:
        if not self.when_started(self.on_prompt_input_permission_mode_cycle, event):
            self.chat.cycle_permission_mode()

    def on_key(self, event: events.Key) -> None:
        if self.prompt.leader_active and time.monotonic() - self._leader_at < LEADER_WINDOW:
            self.prompt.leader_active = False
            event.stop()
            self.run_leader(event.key)

    def run_leader(self, key: str) -> None:
        self.status_line.set_hint(None)
        if time.monotonic() - self._leader_at >= LEADER_WINDOW:
            return
        if not self.when_started(self._run_leader_action, key):
            self._run_leader_action(key)

    def _run_leader_action(self, key: str) -> None:
        keys = self.config.keybinds
        for command in catalog.offered_in(APP):
            if command.keybind and getattr(keys, command.keybind) == key:
                person.run(self.chat, command)
                return
        actions = {
            keys.sidebar: self.action_toggle_sidebar,
            keys.next_waiting: self.action_next_waiting,
            keys.agent_cycle: self.chat.cycle_agent,
            keys.permission_mode: self.chat.cycle_permission_mode,
        }
        if (action := actions.get(key)) is not None:
            action()

    def run_command(self, command: Command, args: str = "") -> None:
        """A slash command or palette entry; one typed before the start runs after it."""
        if not self.when_started(self.run_command, command, args):
            person.run(self.chat, command, args)

    def on_tool_line_open_session(self, event: ToolLine.OpenSession) -> None:
        event.stop()
        if self.chat.session is None or self.chat.session.id != event.session_id:
            self.run_worker(self._open_session(event.session_id), exit_on_error=False)

    async def _open_session(self, session_id: str) -> None:
        await self.chat.show_session(await self.engine.queries.session(session_id))

    def on_user_message_view_here(self, event: UserMessageView.Here) -> None:
        event.stop()
        up_to = event.command == "compact"
        args = f"--up-to {event.message_id}" if up_to else event.message_id
        self.run_command(catalog.named(event.command), args)
        self.prompt.focus()

    def on_tool_line_toggle_pin(self, event: ToolLine.TogglePin) -> None:
        event.stop()
        if self.chat.session is not None:
            pin = person.set_pin(self.chat, event.part.id, event.part.pinned is None)
            self.run_worker(pin, exit_on_error=False)

    def action_toggle_sidebar(self) -> None:
        self.sidebar.display = not self.sidebar.display


def _configured_model() -> str | None:
    """The model the config files name, unvalidated (the first frame's welcome)."""
    from agent_tui.config.layers import raw_value

    try:
        model = raw_value("model")
    except AgentTuiError:
        return None  # reported when the config is validated
    return model if isinstance(model, str) else None
