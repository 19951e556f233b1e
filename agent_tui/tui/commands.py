"""What the table's commands (command/table.py) do in the app: its slash commands, the
palette and the leader keys. Each takes the conversation and what was typed after the
command, and works through the conversation's public methods. Part of the app's first
frame: what the engine defines is imported where a command uses it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from agent_tui.command import table
from agent_tui.command.table import UP_TO, Command, compact_args
from agent_tui.custom_commands import CustomCommand, load_custom_commands
from agent_tui.tui import pin_commands, undo_commands
from agent_tui.tui.text_screen import TextScreen

if TYPE_CHECKING:
    from agent_tui.context.summary_view import SummaryEdit, SummaryInForce
    from agent_tui.tui.conversation import Conversation

SESSIONS_LISTED = 200

Action = Callable[["Conversation", str], object]
"""A command in the app: the conversation and the arguments typed ('' for none)."""


def help_text(chat: Conversation) -> str:
    keys = chat.config.keybinds
    lines = ["Commands (type / for completion, Tab completes):", ""]
    commands = chat.prompt.commands
    width = max(26, *(len(c.usage) + 2 for c in commands))
    for command in commands:
        alias = f" (alias /{', /'.join(command.aliases)})" if command.aliases else ""
        leader = f"   [{keys.leader} {getattr(keys, command.keybind)}]" if command.keybind else ""
        lines.append(f"  {command.usage:<{width}}{command.help}{alias}{leader}")
    lines += [
        "",
        "Keys:",
        "  Enter                     send (while the agent works, the message is queued)",
        "  Shift+Enter, Ctrl+J       new line",
        "  Up / Down                 previous / next message (on the first / last line)",
        "  PageUp / PageDown         scroll the conversation (the input keeps focus)",
        "  @                         attach a file or folder (a picker opens; fuzzy filter)",
        "  !command                  run a shell command; the model sees it next message",
        f"  Tab (empty prompt)        next agent: build, plan (read-only), yours  [{keys.leader} "
        f"{keys.agent_cycle}]",
        f"  Shift+Tab                 auto-accept edits on / off for this session  "
        f"[{keys.leader} {keys.permission_mode}]",
        "  p (on a tool line)        pin / unpin its result (click the line first)",
        "  u (on your message)       compact up to here (/compact --up-to: choose from a list)",
        "  f (on your message)       fork: a new session with the history up to it",
        f"  {keys.interrupt:<26}interrupt the running step or compaction",
        f"  {keys.leader} {keys.sidebar:<{24 - len(keys.leader)}}show / hide the sidebar",
        f"  {keys.palette:<26}command palette",
        "  Ctrl+C twice              quit",
        "",
        'Keys are set under "keybinds" in agent-tui.json.',
    ]
    return "\n".join(lines)


class Commands:
    """The app's commands: the table's, then the custom ones read at start."""

    def __init__(self, chat: Conversation) -> None:
        self.chat = chat
        self.custom: dict[str, CustomCommand] = {}

    async def load_custom(self) -> None:
        """Read the custom command files (once, at start); warn once about any named
        like a built-in."""
        chat = self.chat
        loaded = await asyncio.to_thread(
            load_custom_commands, chat.directory, table.builtin_names()
        )
        self.custom = loaded.commands
        chat.prompt.commands = (
            *table.offered_in(table.APP),
            *(table.custom(c.name, c.help) for c in loaded.commands.values()),
        )
        if (warning := loaded.warning()) is not None:
            chat.notify(warning, severity="warning", timeout=10)

    def run(self, command: Command, args: str = "") -> None:
        if command.action == table.CUSTOM_ACTION:
            self._run_custom(command.name, args)
        else:
            ACTIONS[command.app_action()](self.chat, args)

    def _run_custom(self, name: str, args: str) -> None:
        """Send a custom command's body, its arguments filled in."""
        command, chat = self.custom[name], self.chat
        text = command.expand(args)
        if not text:
            chat.notify(f"/{name} is empty: {command.path} has no text.", severity="warning")
            return
        typed = f"/{name} {args}".rstrip()
        chat.run_worker(chat.send(text, model=command.model, typed=typed), exit_on_error=False)


def compact(chat: Conversation, args: str) -> None:
    typed = compact_args(args)
    if typed.up_to == "":  # `/compact --up-to`: the person chooses where it ends
        chat.guard(lambda: _choose_up_to(chat, typed.instructions))
        return

    async def compact(saved: asyncio.Event) -> None:
        if chat.session is None:
            chat.notify("Nothing to compact yet: send a message first.", severity="warning")
            return
        session_id, model = chat.session.id, chat.model_override
        if typed.dry_run:
            plan = await chat.engine.compaction_plan(
                session_id, typed.instructions, model=model, up_to=typed.up_to
            )
            chat.app.push_screen(TextScreen("Compaction dry run", plan.message()))
            return
        # Typed while the agent works (or right after a message): after that turn, as
        # queued input; what is typed next does not wait for it.
        saved.set()
        await chat.engine.wait_idle(session_id)
        review = chat.config.compaction.review and typed.up_to is None
        if review and await _review_summary(chat, typed.instructions):
            return
        await chat.engine.compact(session_id, typed.instructions, model=model, up_to=typed.up_to)

    # After the messages typed before it are saved (its request follows them).
    chat.guard(lambda: chat.submissions.run(compact))


async def _choose_up_to(chat: Conversation, instructions: str | None) -> None:
    """The person's messages since the summary in force, newest first, to end one at."""
    from agent_tui.step.messages import history_start
    from agent_tui.storage.models import UserMessage
    from agent_tui.tui.message_entry import user_text
    from agent_tui.tui.message_picker_screen import MessagePickerScreen

    if chat.session is None:
        chat.notify("Nothing to compact yet: send a message first.", severity="warning")
        return
    session = await chat.db.get_session(chat.session.id)
    messages = await chat.db.messages(session.id, since_id=history_start(session))
    rows = [
        (m.info.id, text, m.info.created)
        for m in reversed(messages)
        if isinstance(m.info, UserMessage) and not m.info.undone and (text := user_text(m))
    ]
    if not rows:
        chat.notify("None of your messages to compact up to yet.", severity="warning")
        return

    def chosen(message_id: str | None) -> None:
        if message_id:
            compact(chat, f"{UP_TO} {message_id} {instructions or ''}")

    chat.app.push_screen(MessagePickerScreen("Compact up to", rows), chosen)


async def _review_summary(chat: Conversation, instructions: str | None) -> bool:
    """`compaction.review`: the summary is shown before it is applied. False when it
    could not be written in one call (compact as usual then)."""
    from agent_tui.tui.review_screen import ReviewScreen

    assert chat.session is not None
    chat.notify("Writing the summary for you to review…", timeout=5)
    summary = await chat.engine.summary_for_review(
        chat.session.id, instructions, model=chat.model_override
    )
    if summary is None:
        return False
    answer = await chat.app.push_screen_wait(ReviewScreen(summary.text))
    if answer.choice == "discard":
        await chat.engine.discard_reviewed(summary)
        chat.notify("Summary discarded: the conversation is as it was.")
        return True
    await chat.engine.apply_reviewed(chat.session.id, summary, answer.text)
    return True


def uncompact(chat: Conversation, _: str) -> None:
    async def uncompact() -> None:
        if chat.session is None:
            chat.notify("Nothing to undo: send a message first.", severity="warning")
            return
        done = await chat.engine.uncompact(chat.session.id, model=chat.model_override)
        chat.notify(done.message())

    chat.guard(uncompact)


def summary(chat: Conversation, _: str) -> None:
    async def show() -> None:
        from agent_tui.context.summary_view import NO_COMPACTION
        from agent_tui.tui.summary_screen import EDIT, SummaryScreen

        if chat.session is None:
            chat.app.push_screen(TextScreen("Summary", NO_COMPACTION))
            return
        session_id = chat.session.id
        view = await chat.engine.summary(session_id, model=chat.model_override)

        def chosen(choice: str | None) -> None:
            if choice == EDIT and view.summary_id is not None:
                _edit_summary(chat, session_id, view)

        chat.app.push_screen(SummaryScreen(view), chosen)

    chat.guard(show)


def _edit_summary(chat: Conversation, session_id: str, view: SummaryInForce) -> None:
    """The summary in an editor; saved through the engine, which the model reads from
    its next step on."""
    from agent_tui.tui.summary_edit_screen import SummaryEditScreen

    summary_id = view.summary_id
    assert summary_id is not None

    async def save(text: str) -> SummaryEdit:
        return await chat.engine.edit_summary(session_id, summary_id, text)

    def saved(done: SummaryEdit | None) -> None:
        if done is None:
            chat.notify("Edit cancelled: nothing saved.")
        else:
            chat.notify(done.message(), timeout=8)

    chat.app.push_screen(SummaryEditScreen(view.text, view.original, save), saved)


def fork(chat: Conversation, message_id: str) -> None:
    async def fork() -> None:
        if chat.session is None:
            chat.notify("Nothing to fork yet: send a message first.", severity="warning")
            return
        forked = await chat.engine.fork(chat.session.id, message_id.strip() or None)
        await chat.show_session(forked.session)
        note = f"Forked into a new session ({forked.session.id}); /sessions lists both."
        if forked.retype is not None:  # forked before it: the words are back to edit
            chat.prompt.text = forked.retype
            chat.prompt.move_cursor(chat.prompt.document.end)
            chat.prompt.focus()
            note = f"Forked before your message ({forked.session.id}): it is in the input."
        chat.notify(note)

    chat.guard(fork)


def new_session(chat: Conversation, _: str = "") -> None:
    chat.guard(lambda: chat.show_session(None))


def sessions(chat: Conversation, _: str) -> None:
    async def pick() -> None:
        from agent_tui.context.usage import context_usage
        from agent_tui.storage.sessions import session_tree
        from agent_tui.tui.sessions_screen import SessionRow, SessionsScreen

        roots = await chat.db.list_sessions(limit=SESSIONS_LISTED, roots_only=True)
        listed = roots + await chat.db.descendants(s.id for s in roots)
        summaries = await chat.db.session_summaries([s.id for s in listed])
        current = chat.session.id if chat.session else None
        rows = []
        for s, depth in session_tree(listed):  # subagents under their parent
            usage = context_usage(summaries[s.id].last_assistant, summaries[s.id].cost)
            rows.append(SessionRow(s, usage, s.id == current, depth))
        chat.app.push_screen(SessionsScreen(rows), callback=lambda chosen: switch_to(chat, chosen))

    chat.guard(pick)


def switch_to(chat: Conversation, session_id: str | None) -> None:
    """Show another session (a chosen one, a subagent's from its tool line)."""
    if session_id is None or (chat.session and chat.session.id == session_id):
        return

    async def switch() -> None:
        await chat.show_session(await chat.db.get_session(session_id))

    chat.guard(switch)


def choose_model(chat: Conversation, _: str) -> None:
    def chosen(model: str | None) -> None:
        if model:
            chat.choose_model(model)
            chat.notify(f"Next prompts use {model}.")

    async def pick() -> None:
        from agent_tui.provider.defaults import model_catalog
        from agent_tui.tui.model_screen import ModelScreen

        # The configured models, then those of the providers with keys (litellm's map,
        # read as JSON the first time: off the event loop).
        used = [chat.current_model, *chat.view.models_used()]
        rows = await asyncio.to_thread(model_catalog, chat.config, used)
        chat.app.push_screen(ModelScreen(rows, chat.current_model), chosen)

    chat.guard(pick)


def context(chat: Conversation, _: str) -> None:
    async def show() -> None:
        if chat.session is None:
            chat.notify("The context is empty: no message sent yet.")
            return
        report = await chat.engine.context_report(chat.session.id, model=chat.current_model)
        chat.app.push_screen(TextScreen("Context", report))

    chat.guard(show)


def trust(chat: Conversation, _: str) -> None:
    """The project's trust: asked when something of its config waits, else shown."""
    from agent_tui.workspace.describe import trust_lines

    if not chat.app.ask_project_trust():
        workspace = chat.engine.project(chat.directory).workspace
        chat.app.push_screen(TextScreen("Project trust", "\n".join(trust_lines(workspace))))


def mcp(chat: Conversation, _: str) -> None:
    chat.app.push_screen(TextScreen("MCP servers", chat.engine.mcp.render()))


def export(chat: Conversation, _: str) -> None:
    async def export() -> None:
        if chat.session is None:
            chat.notify("Nothing to export yet.", severity="warning")
            return
        data = await chat.db.export_session(chat.session.id)
        path = chat.directory / f"agent-tui-{chat.session.id}.json"
        await asyncio.to_thread(path.write_text, data.model_dump_json(indent=2), "utf-8")
        chat.notify(f"Exported to {path}")

    chat.guard(export)


def show_help(chat: Conversation, _: str) -> None:
    chat.app.push_screen(TextScreen("Help", help_text(chat)))


def quit_app(chat: Conversation, _: str) -> None:
    chat.app.exit()


ACTIONS: dict[str, Action] = {
    "compact": compact,
    "uncompact": uncompact,
    "summary": summary,
    "undo": undo_commands.undo,
    "redo": undo_commands.redo,
    "pin": pin_commands.pin,
    "unpin": pin_commands.unpin,
    "diff": undo_commands.diff,
    "context": context,
    "sessions": sessions,
    "fork": fork,
    "new_session": new_session,
    "choose_model": choose_model,
    "mcp": mcp,
    "trust": trust,
    "export": export,
    "help": show_help,
    "quit": quit_app,
}
"""Each app action of the table (`Command.app_action`) and what it does."""
