"""The app's adapter of a command (command/core.py), the person in dialogs: what a command
says is a notice, a report opens a screen, a question is a confirmation screen, rows are
a picker, a session opened is shown. Part of the app's first frame: each screen is
imported when it opens."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING, Any

from agent_tui.command import catalog
from agent_tui.command.core import APP, Call, Command, Result, Rows, present

if TYPE_CHECKING:
    from agent_tui.records import Session
    from agent_tui.session.expansion import Expansion
    from agent_tui.tui.app import AgentApp
    from agent_tui.tui.conversation import Conversation


class AppPerson:
    view = APP
    asks = True

    def __init__(self, chat: Conversation) -> None:
        self.chat = chat

    async def say(self, text: str) -> None:
        self.chat.notify(text, timeout=8)

    async def show(self, title: str, result: Result) -> None:
        from agent_tui.context.summary_view import SummaryInForce

        if isinstance(result, SummaryInForce):
            from agent_tui.tui.summary_screen import EDIT, SummaryScreen

            if await self._wait(SummaryScreen(result)) == EDIT:
                run(self.chat, catalog.named("summary"), "--edit")
            return
        from agent_tui.tui.text_screen import TextScreen

        self.chat.app.push_screen(TextScreen(title, result.message()))

    async def confirm(self, question: str, detail: str, yes: str, flag: str) -> bool:
        from agent_tui.tui.confirm_screen import ConfirmScreen

        return bool(await self._wait(ConfirmScreen(question, detail, yes)))

    async def choose(self, rows: Rows) -> str | None:
        if not rows.rows:
            self.chat.notify(rows.empty, severity="warning")
            return None
        return await self._wait(_picker(self.chat, self.chat.side.decorate(rows)))

    async def open_session(self, session: Session | None, retype: str | None) -> None:
        chat = self.chat
        await chat.show_session(session)
        if retype is not None:  # forked before it: the words are back to edit
            chat.prompt.text = retype
            chat.prompt.move_cursor(chat.prompt.document.end)
            chat.prompt.focus()

    async def edit(self, title: str, text: str, original: str) -> str | None:
        if original == "review":
            from agent_tui.tui.review_screen import ReviewScreen

            answer = await self._wait(ReviewScreen(text))
            return None if answer.choice == "discard" else answer.text
        from agent_tui.tui.summary_edit_screen import SummaryEditScreen

        return await self._wait(SummaryEditScreen(text, original))

    async def retype(self, text: str | None) -> None:
        await self.chat.reopen()  # the turn undone or redone is drawn as it is now
        self.chat.put_back(text)

    async def send(self, text: str, model: str | None, expansion: Expansion) -> None:
        await self.chat.send(text, model=model, expansion=expansion)

    async def use_model(self, model: str) -> None:
        self.chat.choose_model(model)

    async def leave(self) -> None:
        app: AgentApp = self.chat.app  # type: ignore[assignment]
        await app.leave()  # its worktree asked about first

    async def _wait(self, screen: Any) -> Any:
        return await self.chat.app.push_screen_wait(screen)


def _picker(chat: Conversation, rows: Rows) -> Any:
    """The screen for these rows: the pins' list, the models' (a filter, any id typed),
    else rows to choose one of."""
    if rows.kind == "pins":
        from agent_tui.tui.pin_screen import PinScreen

        return PinScreen([(r.data, r.current) for r in rows.rows], partial(set_pin, chat))
    if rows.kind == "models":
        from agent_tui.tui.model_screen import ModelScreen

        current = next((r.id for r in rows.rows if r.current), "")
        return ModelScreen([r.data for r in rows.rows], current)
    from agent_tui.tui.choice_screen import RowsScreen

    return RowsScreen(rows)


async def set_pin(chat: Conversation, item_id: str, pin: bool) -> bool:
    """Pin or unpin through the command (a tool line's pin, the pin list); whether it is
    pinned afterwards."""
    result = await execute(chat, catalog.named("pin" if pin else "unpin"), item_id)
    return bool(getattr(result, "pinned", not pin))


async def execute(chat: Conversation, command: Command, typed: str = "") -> Result | None:
    """Run `command` with the arguments typed after it, and show what it gives; an error
    of the person's is a notice."""
    from agent_tui.errors import AgentTuiError

    session = chat.session.id if chat.session else None
    call = Call(chat.engine, AppPerson(chat), chat.directory, session, chat.model_override)
    try:
        result = await command.run(call, command.parse(typed))
        await present(call.person, command, result)
    except AgentTuiError as exc:
        chat.notify(str(exc), severity="error", timeout=10)
        if command.starts:  # nothing was sent (a custom command's line did not run)
            chat.restore(f"/{command.name} {typed}".rstrip())
        return None
    return result


def run(chat: Conversation, command: Command, typed: str = "") -> None:
    """A slash command, palette entry or leader key: after what was typed before it is
    saved (a /compact follows the message sent before it), in a worker of its own."""

    async def after_saved(saved: asyncio.Event) -> None:
        saved.set()  # what is typed next does not wait for it
        await execute(chat, command, typed)

    chat.run_worker(chat.submissions.run(after_saved), exit_on_error=False)


async def load_custom(chat: Conversation) -> None:
    """The custom commands join the built-ins (read once, at start); a warning about any
    named like a built-in."""
    found, warning = await asyncio.to_thread(catalog.customs, chat.directory)
    chat.prompt.commands = (*catalog.offered_in(APP), *found)
    chat.show_completions()
    if warning is not None:
        chat.notify(warning, severity="warning", timeout=10)
