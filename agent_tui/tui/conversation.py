"""The conversation with one session: its messages, the prompt, the status line and the
sidebar, and what a person steers in it (the session shown, the agent and model the
next message goes to, the permission mode, a plan waiting for an answer).

Commands (`tui/person_dialogs.py`), keys and engine events (`tui/conversation_events.py`)
talk to it through its public methods. Part of the app's first frame: the engine's
modules are imported where they are used, once the app has started (`start`).
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import TYPE_CHECKING

from textual import events
from textual.containers import Horizontal, Vertical
from textual.widgets import Static, TextArea

from agent_tui.errors import AgentTuiError
from agent_tui.tui.background_board import BackgroundBoard
from agent_tui.tui.prompt_input import PromptInput
from agent_tui.tui.side_by_side import SideBySide
from agent_tui.tui.sidebar import Sidebar
from agent_tui.tui.status_line import StatusLine
from agent_tui.tui.submissions import Submissions
from agent_tui.tui.welcome_view import WelcomeView

if TYPE_CHECKING:
    from pathlib import Path

    from agent_tui.config.settings import Config
    from agent_tui.context.stats import SessionStats
    from agent_tui.project.agents import AgentCatalog
    from agent_tui.records import MessageWithParts, Session
    from agent_tui.session.engine import Engine
    from agent_tui.session.expansion import Expansion
    from agent_tui.session.newest_page import Page
    from agent_tui.step.plan import PlanChoice
    from agent_tui.tool.registry import PermissionMode
    from agent_tui.tui.event_pump import EventPump
    from agent_tui.tui.plan_screen import PlanAnswer
    from agent_tui.tui.session_view import SessionView

FIRST_PAGE = 60
"""Messages read and shown before the rest of a session's history is read."""
FREEZE_DELAY = 0.3
"""Seconds after a session is shown before the one full garbage collection."""
BUILD_AGENT = "build"
"""`agents.BUILD`, the agent the first frame names (tests/test_startup.py checks it)."""
MODE_SWITCH = "with Tab on an empty prompt"
"""How a person switches agents here (prompt_input.PromptInput.AgentCycle)."""


def _collect_and_freeze() -> None:
    gc.collect()
    gc.freeze()


class Conversation(Horizontal):
    """One session at a time; `start` gives it the engine once the app has one."""

    config: Config
    engine: Engine
    view: SessionView
    stats: SessionStats
    session_model: str
    agent_catalog: AgentCatalog | None = None

    def __init__(
        self,
        *,
        directory: Path,
        directory_label: str | None,
        model: str | None,
        continuing: bool,
        first_page: Page | None = None,
        id: str | None = None,
    ) -> None:
        """`first_page`: the newest page of the session opening, read from storage before
        the engine is there (`app_opening.first_page`), drawn in the first frame."""
        super().__init__(id=id)
        self.directory = directory
        self.directory_label = directory_label
        self.model_override = model
        """A model chosen for the next messages (`--model`, /model), else None."""
        self.continuing = continuing
        self.side = SideBySide(self._show_sessions)
        """The sessions working here besides the one on screen (tui/side_by_side.py)."""
        self.background = BackgroundBoard()
        """Each session's background commands, as the sidebar shows the shown one's."""
        self._session: Session | None = None
        self.agent_name = BUILD_AGENT
        """The primary agent the next message goes to (Tab cycles)."""
        self.permission_mode: PermissionMode = "ask"
        """ask, or auto-edits for the shown session (Shift+Tab); never saved."""
        self.pump: EventPump | None = None
        self.submissions = Submissions()
        """Messages, `!commands` and `/compact` reach the session in the order typed."""
        self._plans: dict[str, str] = {}
        """A plan each session proposed, until the person answers it on its screen."""
        self._undo_prompt: str | None = None
        self._first_page = first_page
        """What the first frame drew, until `show_session` has the engine's read."""
        self._completions: Static | None = None
        """The command hints under the prompt, once first shown."""

    def compose(self):  # type: ignore[no-untyped-def]
        with Vertical(id="chat"):
            # Opening a session: no welcome view before its messages (mounted if a new
            # session is shown later: `show_session`).
            if not self.continuing:
                yield WelcomeView(id="welcome")
            if self._first_page is not None:
                from agent_tui.tui.session_view import SessionView

                self.view = SessionView(id="view", page=self._first_page)
                yield self.view
            # Otherwise the SessionView is mounted here once the engine is imported (start).
            yield StatusLine(id="status")
            # The command hints (#completions) are mounted when first shown.
            yield PromptInput(id="prompt")
        yield Sidebar(id="sidebar")

    @property
    def session(self) -> Session | None:
        """The session on screen (None: a new one, not saved until its first message)."""
        return self._session

    @session.setter
    def session(self, session: Session | None) -> None:
        self._session = session
        self.side.show(session.id if session is not None else None)

    def _show_sessions(self) -> None:
        if self.is_mounted:
            self.sidebar.show_sessions(self.side.strip())

    @property
    def prompt(self) -> PromptInput:
        return self.query_one("#prompt", PromptInput)

    def on_key(self, event: events.Key) -> None:
        """A printable key goes to the prompt whatever has focus (a clicked message, a
        tool line): typing never runs a command. A message's actions are a menu
        (ctrl+o, or Enter on a message of yours)."""
        prompt = self.prompt
        if self.app.focused is prompt or not event.is_printable or not event.character:
            return
        event.stop()
        event.prevent_default()  # before the focused widget's bindings see it
        prompt.focus()
        prompt.insert(event.character)

    @property
    def sidebar(self) -> Sidebar:
        return self.query_one("#sidebar", Sidebar)

    @property
    def status_line(self) -> StatusLine:
        return self.query_one("#status", StatusLine)

    @property
    def welcome(self) -> WelcomeView:
        return self.query_one("#welcome", WelcomeView)

    async def start(self, engine: Engine, config: Config) -> None:
        """The engine exists: the view of messages is mounted and its events shown."""
        from agent_tui.context.stats import SessionStats
        from agent_tui.tui.event_pump import EventPump
        from agent_tui.tui.notifier import Notifier

        self.engine, self.config = engine, config
        engine.name_mode_switch(MODE_SWITCH)
        app = self.app
        write = None if app.is_headless else getattr(app._driver, "write", None)
        warn = lambda text: self.notify(text, severity="warning")  # noqa: E731
        self.side.notifier = Notifier(config.notify_terminal, config.notify, write, warn)
        self.session_model = self.model_override or config.model
        self.stats = SessionStats()
        self.pump = EventPump(self)
        self.pump.attach(engine.subscribe)
        await self._mount_view()
        self.agent_catalog = engine.workspace(self.directory).agent_catalog()
        self.show_agent()

    async def _mount_view(self) -> None:
        from agent_tui.tui.session_view import SessionView

        if not hasattr(self, "view"):  # mounted once: by the first page, or here
            self.view = SessionView(id="view")
            self.view.display = self.continuing
            await self.query_one("#chat").mount(self.view, before="#status")

    def on_mount(self) -> None:
        if self._first_page is not None:  # drawn in the first frame, beside its title
            session = self._first_page[0]
            label = self.directory_label or session.directory
            self.sidebar.show_session(session.title, label, self.model_override or "")

    def on_unmount(self) -> None:
        if self.pump is not None:
            self.pump.detach()

    # ---- the session shown ------------------------------------------------------------

    async def show_session(self, session: Session | None) -> None:
        """Load a session (or a blank new one) into the view and the sidebar.

        The newest page is read and painted first; the whole history (for the cost,
        the files touched and the entries above) is read after that frame.
        """
        from agent_tui.context.stats import SessionStats

        self.session = session
        page, complete = (
            await self.engine.queries.recent_messages(session.id, FIRST_PAGE)
            if session
            else ([], True)
        )
        page = [m for m in page if not m.info.undone]  # taken back with /undo
        self.stats = SessionStats.of(page)
        first, self._first_page = self._first_page, None
        if first != (session, page):
            await self.view.load(session, page)
        self.agent_of(page)
        if not page and not self.query("#welcome"):
            await self.query_one("#chat").mount(WelcomeView(id="welcome"), before=0)
        self.show_welcome(not page)
        self.refresh_sidebar()
        self.sidebar.show_background(self.background.of(session.id if session else None))
        busy = session is not None and self.engine.is_busy(session.id)
        self.status_line.set_status("busy" if busy else "idle")
        if not busy:
            self._show_pending_plan()  # proposed while another session was on screen
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
            messages = await self.engine.queries.messages(session.id)
            messages = [m for m in messages if not m.info.undone]
            if self.session is not session:
                return
            self.stats = SessionStats.of(messages)
            self.view.add_older(messages)
        if self.model_override is None:
            self.session_model = await (await self.engine.scope(session.id)).model()
        self.refresh_sidebar()
        self.sidebar.show_todos(await self.engine.queries.todos(session.id))

    async def reopen(self) -> None:
        """The shown session read again (after undo or redo changed its history)."""
        if self.session is not None:
            await self.show_session(await self.engine.queries.session(self.session.id))

    async def ensure_session(self) -> Session:
        if self.session is None:
            session = await self.engine.new_session(self.directory)
            if self.session is None:  # not made meanwhile by another worker
                self.session = session
                self.apply_permission_mode()
                self.refresh_sidebar()
        return self.session

    def refresh_sidebar(self) -> None:
        session = self.session
        directory = session.directory if session else str(self.directory)
        title = session.title if session and session.title else "New session"
        label = directory if session and session.worktree else self.directory_label or directory
        self.sidebar.show_session(title, label, self.agent_model)  # a worktree: its own path
        welcome = self.query("#welcome")
        if welcome and welcome.first().display:
            self.welcome.show(self.config, self.current_model, label)
        compaction = self.config.compaction
        auto = compaction.threshold if compaction.auto else 0
        self.sidebar.show_stats(self.stats, directory, auto)

    async def refresh_changes(self) -> None:
        """The sidebar's files with +/- line counts, from the session's snapshots."""
        from agent_tui.session.undo import numstat

        if self.session is None:
            return
        self.stats.changes = await numstat(await self.engine.scope(self.session.id))
        self.refresh_sidebar()

    def show_welcome(self, shown: bool) -> None:
        """The welcome view stands in for the conversation while it has no message."""
        if welcome := self.query("#welcome"):
            welcome.first().display = shown
        self.view.display = not shown

    @property
    def status(self) -> str:
        return self.status_line.status

    def set_status(self, status: str, message: str | None = None) -> None:
        self.status_line.set_status(status, message)
        if status == "idle":
            self.run_worker(self.refresh_changes(), exit_on_error=False)
            self._show_pending_plan()
            if self.session is not None:  # the turn's end is on screen: waiting for you
                self.engine.idle.await_person(self.session.id)

    @property
    def current_model(self) -> str:
        return self.model_override or self.session_model

    def choose_model(self, model: str) -> None:
        self.model_override = model
        self.refresh_sidebar()

    # ---- what the person sends ----------------------------------------------------------

    async def send(
        self, text: str, *, model: str | None = None, expansion: Expansion | None = None
    ) -> None:
        """Send `text`; `model` overrides for this message (a custom command's), and
        `expansion` is the custom command typed, which goes back in the prompt on failure."""
        model = model or self.model_override
        agent = self.agent_name
        typed = expansion.typed if expansion is not None else ""

        async def send(saved: asyncio.Event) -> None:
            session = await self.ensure_session()
            await self.engine.prompt(
                session.id,
                text,
                model=model,
                agent=agent,
                saved=saved,
                fresh=True,
                expansion=expansion,
            )

        try:
            await self.submissions.run(send)
        except AgentTuiError as exc:
            self.restore(typed or text)
            if getattr(exc, "session_dropped", False):  # its first prompt was refused
                self.session = None
            message = getattr(exc, "summary", None) or str(exc)  # the long form is on screen
            self.notify(message, title="Not sent", severity="error", timeout=10)
        except Exception as exc:
            self.restore(typed or text)
            self.notify(f"{type(exc).__name__}: {exc}", title="Not sent", severity="error")

    async def shell(self, command: str) -> None:
        async def shell(saved: asyncio.Event) -> None:
            session = await self.ensure_session()
            from agent_tui.session.sending import run_shell

            await run_shell(await self.engine.scope(session.id), command, saved)

        try:
            await self.submissions.run(shell)
        except AgentTuiError as exc:
            self.restore(f"!{command}")
            self.notify(str(exc), title="Not run", severity="error", timeout=10)

    def restore(self, text: str) -> None:
        """Put a failed message back so nothing typed is lost."""
        current = self.prompt.text
        self.prompt.load_text(text if not current.strip() else f"{text}\n{current}")
        self.prompt.move_cursor(self.prompt.document.end)

    def put_back(self, prompt: str | None) -> None:
        """Undo: the turn's prompt in the input (what the person typed is kept); redo:
        the prompt an undo put there goes away again."""
        current = self.prompt.text
        if current.strip() and current != self._undo_prompt:
            if prompt:
                self.restore(prompt)
            self._undo_prompt = None
            return
        self.prompt.load_text(prompt or "")
        self.prompt.move_cursor(self.prompt.document.end)
        self._undo_prompt = prompt

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area is self.prompt:
            self.show_completions()
            if self.session is not None:
                self.engine.idle.stop(self.session.id)  # they are not away

    def show_completions(self) -> None:
        """The commands what is typed completes to, with their arguments, under the
        prompt; again when the custom commands arrive (`/ru` typed before they did)."""
        found = self.prompt.completions()
        hint = "   ".join(f"{c.usage} — {c.help}" for c in found[:3])
        completions = self._completions
        if completions is None:  # not by a query: every typed key comes here
            if not found:
                return  # nothing to hint, nothing hinted yet
            completions = self._completions = Static("", id="completions", markup=False)
            self.query_one("#chat").mount(completions, before=self.prompt)
        if hint != completions.content:
            # Only when it changes: an update lays the whole screen out again, and a
            # key typed while a long reply streams would wait for that (bench_tui).
            completions.update(hint)
        completions.set_class(bool(found), "-shown")

    # ---- engine events ----------------------------------------------------------------

    async def on_event_pump_batch(self, _: EventPump.Batch) -> None:
        from agent_tui.tui.conversation_events import apply_event

        pump = self.pump
        assert pump is not None
        if pump.deferred():
            return  # a key was just typed: its frame first
        begun = time.perf_counter()
        for event in pump.take():
            try:
                await apply_event(self, event)
            except Exception as exc:  # a view bug must not take the app down
                self.log.error(f"failed to show {event.type}: {exc!r}")
                self.notify(f"Display error: {exc}", severity="error")
        # How long the batch took to apply and draw spaces the next ones (keys first);
        # after the refresh this one brings (none when the app is closing meanwhile).
        self.call_after_refresh(lambda: pump.drawn(time.perf_counter() - begun))

    def key_typed(self) -> None:
        """A key is drawn before the stream's next batch."""
        if self.pump is not None:
            self.pump.hold()

    # ---- agents and the permission mode -----------------------------------------------

    def show_agent(self) -> None:
        agent = self.agent_catalog.get(self.agent_name) if self.agent_catalog else None
        self.prompt.show_agent(self.agent_name)
        # The default needs no explanation; any other agent says what it is for.
        described = agent is not None and agent.name != BUILD_AGENT
        self.sidebar.show_agent(self.agent_name, agent.description if described else "")
        self.refresh_sidebar()  # the model may be the agent's own

    @property
    def agent_model(self) -> str:
        """The model the next message uses: a chosen one, else the agent's, else the
        session's."""
        agent = self.agent_catalog.get(self.agent_name) if self.agent_catalog else None
        if self.model_override is None and agent is not None and agent.model:
            return agent.model
        return self.current_model

    def agent_of(self, messages: list[MessageWithParts]) -> None:
        """A session opens with the agent of its newest message (if still primary)."""
        from agent_tui.records import UserMessage

        last = next((m.info for m in reversed(messages) if isinstance(m.info, UserMessage)), None)
        agent = self.agent_catalog.get(last.agent) if self.agent_catalog and last else None
        if agent is not None and agent.primary and not agent.hidden:
            self.agent_name = agent.name
        self.show_agent()
        self.apply_permission_mode()

    def cycle_agent(self) -> None:
        if self.agent_catalog is None:
            return
        names = [a.name for a in self.agent_catalog.primary()]
        index = names.index(self.agent_name) if self.agent_name in names else -1
        self.switch_agent(names[(index + 1) % len(names)])

    def switch_agent(self, name: str) -> None:
        self.agent_name = name
        self.show_agent()

    def cycle_permission_mode(self) -> None:
        from agent_tui.tool.registry import PERMISSION_MODES

        index = PERMISSION_MODES.index(self.permission_mode)
        self.permission_mode = PERMISSION_MODES[(index + 1) % len(PERMISSION_MODES)]
        self.apply_permission_mode()

    def apply_permission_mode(self) -> None:
        if self.session is not None:
            live = self.engine.live(self.session.id)
            live.permission_mode = self.permission_mode
        self.status_line.set_mode(self.permission_mode)

    # ---- the plan ---------------------------------------------------------------------

    def propose_plan(self, session_id: str, plan: str) -> None:
        """The engine's PlanProposed: shown once its session is idle on screen."""
        self._plans[session_id] = plan

    def _show_pending_plan(self) -> None:
        session = self.session
        if session is None or (plan := self._plans.pop(session.id, None)) is None:
            return
        from agent_tui.tui.plan_screen import PlanScreen

        def answered(answer: PlanAnswer | None) -> None:
            self.side.answered(session.id, "plan")
            self.prompt.focus()
            choice = "keep" if answer is None else answer.choice
            if choice == "keep":
                self.notify("Still planning: tell the plan agent what to look at next.")
            note = answer.note if answer is not None else ""
            self.run_worker(self._answer_plan(plan, choice, note), exit_on_error=False)

        self.app.push_screen(PlanScreen(plan), callback=answered)

    async def _answer_plan(self, plan: str, choice: PlanChoice, note: str) -> None:
        model = self.model_override

        async def answer(saved: asyncio.Event) -> None:
            session = await self.ensure_session()
            await self.engine.answer_plan(session.id, plan, choice, note, model=model, saved=saved)

        try:
            await self.submissions.run(answer)
        except AgentTuiError as exc:
            self.notify(str(exc), title="Not sent", severity="error", timeout=10)
