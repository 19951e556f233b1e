"""What the slash commands, leader keys and palette do (mixed into AgentApp). Part of the
app's first frame: what the engine defines is imported where a command uses it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agent_tui.command import table
from agent_tui.command.table import DRY_RUN, Command, after_flag
from agent_tui.custom_commands import CustomCommand, load_custom_commands
from agent_tui.errors import AgentTuiError
from agent_tui.tui.text_screen import TextScreen

if TYPE_CHECKING:
    from agent_tui.context.summary_view import SummaryEdit, SummaryInForce
    from agent_tui.tui.app import AgentApp
    from agent_tui.tui.tool_line import ToolLine

SESSIONS_LISTED = 200


def help_text(app: AgentApp) -> str:
    keys = app.config.keybinds
    lines = ["Commands (type / for completion, Tab completes):", ""]
    width = max(26, *(len(c.usage) + 2 for c in app.slash_command_list))
    for command in app.slash_command_list:
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
        f"  {keys.interrupt:<26}interrupt the running step or compaction",
        f"  {keys.leader} {keys.sidebar:<{24 - len(keys.leader)}}show / hide the sidebar",
        f"  {keys.palette:<26}command palette",
        "  Ctrl+C twice              quit",
        "",
        'Keys are set under "keybinds" in agent-tui.json.',
    ]
    return "\n".join(lines)


class AppCommands:
    """Command implementations; `self` is the AgentApp."""

    custom_commands: dict[str, CustomCommand] = {}
    """Custom slash commands by name (custom_commands.py), loaded at start."""

    @property
    def slash_command_list(self: AgentApp) -> tuple[Command, ...]:
        """Built-in commands, then the custom ones (for /help and the palette)."""
        return self.prompt.commands

    async def load_custom_commands(self: AgentApp) -> None:
        """Read the custom command files (once, at start); warn once about any named
        like a built-in."""
        loaded = await asyncio.to_thread(
            load_custom_commands, self.directory, table.builtin_names()
        )
        self.custom_commands = loaded.commands
        self.prompt.commands = (
            *table.offered_in(table.APP),
            *(table.custom(c.name, c.help) for c in loaded.commands.values()),
        )
        if (warning := loaded.warning()) is not None:
            self.notify(warning, severity="warning", timeout=10)

    def run_custom_command(self: AgentApp, name: str, args: str) -> None:
        """Send a custom command's body, its arguments filled in."""
        command = self.custom_commands[name]
        typed = f"/{name} {args}".rstrip()
        text = command.expand(args)
        if not text:
            self.notify(f"/{name} is empty: {command.path} has no text.", severity="warning")
            return
        self.run_worker(self._send(text, model=command.model, typed=typed), exit_on_error=False)

    def run_command(self: AgentApp, command: Command, args: str) -> None:
        if command.action == table.CUSTOM_ACTION:
            self.run_custom_command(command.name, args)
            return
        method: Callable[..., Any] = getattr(self, f"action_{command.app_action()}")
        result = method(args or None) if command.takes_args else method()
        if isinstance(result, Awaitable):
            self.run_worker(result, exit_on_error=False)

    def _guard(self: AgentApp, work: Callable[[], Awaitable[Any]]) -> None:
        async def guarded() -> None:
            try:
                await work()
            except AgentTuiError as exc:
                self.notify(str(exc), severity="error", timeout=10)

        self.run_worker(guarded(), exit_on_error=False)

    def action_compact(self: AgentApp, instructions: str | None = None) -> None:
        async def compact(saved: asyncio.Event) -> None:
            if self.session is None:
                self.notify("Nothing to compact yet: send a message first.", severity="warning")
                return
            extra = after_flag((instructions or "").strip(), DRY_RUN)
            if extra is not None:
                plan = await self.engine.compaction_plan(
                    self.session.id, extra or None, model=self.model_override
                )
                self.push_screen(TextScreen("Compaction dry run", plan.message()))
                return
            # Typed while the agent works (or right after a message): after that turn, as
            # queued input; what is typed next does not wait for it.
            saved.set()
            await self.engine.wait_idle(self.session.id)
            if self.engine.ctx.config.compaction.review and await self._review_summary(
                instructions
            ):
                return
            await self.engine.compact(self.session.id, instructions, model=self.model_override)

        # After the messages typed before it are saved (its request follows them).
        self._guard(lambda: self.submissions.run(compact))

    async def _review_summary(self: AgentApp, instructions: str | None) -> bool:
        """`compaction.review`: the summary is shown before it is applied. False when it
        could not be written in one call (compact as usual then)."""
        from agent_tui.tui.review_screen import ReviewScreen

        assert self.session is not None
        self.notify("Writing the summary for you to review…", timeout=5)
        summary = await self.engine.summary_for_review(
            self.session.id, instructions, model=self.model_override
        )
        if summary is None:
            return False
        answer = await self.push_screen_wait(ReviewScreen(summary.text))
        if answer.choice == "discard":
            await self.engine.discard_reviewed(summary)
            self.notify("Summary discarded: the conversation is as it was.")
            return True
        await self.engine.apply_reviewed(self.session.id, summary, answer.text)
        return True

    def action_uncompact(self: AgentApp) -> None:
        async def uncompact() -> None:
            if self.session is None:
                self.notify("Nothing to undo: send a message first.", severity="warning")
                return
            done = await self.engine.uncompact(self.session.id, model=self.model_override)
            self.notify(done.message())

        self._guard(uncompact)

    def action_summary(self: AgentApp) -> None:
        async def show() -> None:
            from agent_tui.context.summary_view import NO_COMPACTION
            from agent_tui.tui.summary_screen import EDIT, SummaryScreen

            if self.session is None:
                self.push_screen(TextScreen("Summary", NO_COMPACTION))
                return
            session_id = self.session.id
            view = await self.engine.summary(session_id, model=self.model_override)

            def chosen(choice: str | None) -> None:
                if choice == EDIT and view.summary_id is not None:
                    self.edit_summary(session_id, view)

            self.push_screen(SummaryScreen(view), chosen)

        self._guard(show)

    def edit_summary(self: AgentApp, session_id: str, view: SummaryInForce) -> None:
        """The summary in an editor; saved through the engine, which the model reads
        from its next step on."""
        from agent_tui.tui.summary_edit_screen import SummaryEditScreen

        summary_id = view.summary_id
        assert summary_id is not None

        async def save(text: str) -> SummaryEdit:
            return await self.engine.edit_summary(session_id, summary_id, text)

        def saved(done: SummaryEdit | None) -> None:
            if done is None:
                self.notify("Edit cancelled: nothing saved.")
            else:
                self.notify(done.message(), timeout=8)

        self.push_screen(SummaryEditScreen(view.text, view.original, save), saved)

    def action_new_session(self: AgentApp) -> None:
        self._guard(lambda: self.show_session(None))

    def action_sessions(self: AgentApp) -> None:
        async def pick() -> None:
            from agent_tui.context.usage import context_usage
            from agent_tui.storage.sessions import session_tree
            from agent_tui.tui.sessions_screen import SessionRow, SessionsScreen

            roots = await self.db.list_sessions(limit=SESSIONS_LISTED, roots_only=True)
            sessions = roots + await self.db.descendants(s.id for s in roots)
            summaries = await self.db.session_summaries([s.id for s in sessions])
            current = self.session.id if self.session else None
            rows = [
                SessionRow(
                    s,
                    context_usage(summaries[s.id].last_assistant, summaries[s.id].cost),
                    s.id == current,
                    depth,
                )
                for s, depth in session_tree(sessions)  # subagents under their parent
            ]
            self.push_screen(SessionsScreen(rows), callback=self._switch_to)

        self._guard(pick)

    def on_tool_line_open_session(self: AgentApp, event: ToolLine.OpenSession) -> None:
        event.stop()
        self._switch_to(event.session_id)

    def _switch_to(self: AgentApp, session_id: str | None) -> None:
        if session_id is None or (self.session and self.session.id == session_id):
            return

        async def switch() -> None:
            await self.show_session(await self.db.get_session(session_id))

        self._guard(switch)

    def action_choose_model(self: AgentApp) -> None:
        def chosen(model: str | None) -> None:
            if model:
                self.model_override = model
                self._refresh_sidebar()
                self.notify(f"Next prompts use {model}.")

        async def pick() -> None:
            from agent_tui.provider.defaults import model_catalog
            from agent_tui.tui.model_screen import ModelScreen

            # The configured models, then those of the providers with keys (litellm's map,
            # read as JSON the first time: off the event loop).
            used = [self.current_model, *self.view.models_used()]
            rows = await asyncio.to_thread(model_catalog, self.config, used)
            self.push_screen(ModelScreen(rows, self.current_model), chosen)

        self._guard(pick)

    def action_context(self: AgentApp) -> None:
        async def show() -> None:
            if self.session is None:
                self.notify("The context is empty: no message sent yet.")
                return
            report = await self.engine.context_report(self.session.id, model=self.current_model)
            self.push_screen(TextScreen("Context", report))

        self._guard(show)

    def action_mcp(self: AgentApp) -> None:
        self.push_screen(TextScreen("MCP servers", self.engine.mcp.render()))

    def action_export(self: AgentApp) -> None:
        async def export() -> None:
            if self.session is None:
                self.notify("Nothing to export yet.", severity="warning")
                return
            data = await self.db.export_session(self.session.id)
            path = self.directory / f"agent-tui-{self.session.id}.json"
            await asyncio.to_thread(path.write_text, data.model_dump_json(indent=2), "utf-8")
            self.notify(f"Exported to {path}")

        self._guard(export)

    def action_help(self: AgentApp) -> None:
        self.push_screen(TextScreen("Help", help_text(self)))
