"""The conversation: a scroll view of message widgets, fed by history and engine events."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Button

from agent_tui.events import (
    CompactionUndone,
    Event,
    MessageUpdated,
    PartUpdated,
    SessionCompacted,
    SessionStatus,
    SessionUpdated,
)
from agent_tui.session.messages import history_start
from agent_tui.storage.models import (
    AssistantMessage,
    CompactionPart,
    Message,
    MessageWithParts,
    Session,
    TextPart,
    ToolPart,
    UserMessage,
)
from agent_tui.tui.assistant_message_view import AssistantMessageView
from agent_tui.tui.compaction_divider import CompactionDivider
from agent_tui.tui.tool_line import ToolLine
from agent_tui.tui.user_message_view import UserMessageView

PAGE_SIZE = 100
"""Messages mounted when a session is loaded, and per press of 'load earlier'."""


def _user_text(message: MessageWithParts) -> str:
    return "\n".join(
        p.text for p in message.parts if isinstance(p, TextPart) and not p.synthetic and p.text
    )


def _shell_tool(message: MessageWithParts) -> ToolPart | None:
    """The bash part of a person's `!command` (a user message with a tool part)."""
    return next((p for p in message.parts if isinstance(p, ToolPart)), None)


def shell_line(part: ToolPart) -> ToolLine:
    """A `!command` as a tool line, open: the person ran it to see its output."""
    line = ToolLine(part)
    line.add_class("-shell")
    line.collapsed = False
    return line


def _compaction(message: MessageWithParts) -> CompactionPart | None:
    return next((p for p in message.parts if isinstance(p, CompactionPart)), None)


class SessionView(VerticalScroll):
    """Follows the stream (anchored) until the person scrolls up."""

    DEFAULT_CSS = """
    SessionView { padding: 0 1; }
    SessionView .-compacted { opacity: 60%; }
    SessionView #load-earlier { width: 100%; margin: 0 0 1 0; }
    SessionView ToolLine.-shell { margin: 1 0 0 0; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.session: Session | None = None
        self._infos: dict[str, Message] = {}
        self._views: dict[str, Widget] = {}
        self._summary_of: dict[str, str] = {}
        self._earlier: list[MessageWithParts] = []
        self._summaries: dict[str, MessageWithParts] = {}
        self._busy = False

    def on_mount(self) -> None:
        self.anchor()

    # ---- loading ----------------------------------------------------------------------

    async def load(self, session: Session | None, messages: list[MessageWithParts]) -> None:
        """Show a session: the last PAGE_SIZE messages, the rest behind a button."""
        await self.remove_children()
        self.session = session
        self._infos.clear()
        self._views.clear()
        self._summary_of.clear()
        self._summaries = {
            m.info.parent_id: m
            for m in messages
            if isinstance(m.info, AssistantMessage) and m.info.summary
        }
        for summary in self._summaries.values():
            self._summary_of[summary.info.id] = summary.info.parent_id
        self._earlier = messages[:-PAGE_SIZE] if len(messages) > PAGE_SIZE else []
        widgets = self._build(messages[-PAGE_SIZE:])
        if self._earlier:
            widgets.insert(0, self._earlier_button())
        await self.mount_all(widgets)
        self._dim_compacted()
        self.scroll_end(animate=False, immediate=True)
        self.anchor()

    def _earlier_button(self) -> Button:
        count = len(self._earlier)
        return Button(f"{count} earlier messages — press to load", id="load-earlier")

    async def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id != "load-earlier":
            return
        event.stop()
        batch, self._earlier = self._earlier[-PAGE_SIZE:], self._earlier[:-PAGE_SIZE]
        widgets = self._build(batch)
        await event.button.remove()
        if self._earlier:
            widgets.insert(0, self._earlier_button())
        first = next(iter(self.children), None)
        await self.mount_all(widgets, before=first) if first else await self.mount_all(widgets)
        self._dim_compacted()

    def _build(self, messages: list[MessageWithParts]) -> list[Widget]:
        widgets: list[Widget] = []
        for message in messages:
            info = message.info
            self._infos[info.id] = info
            widget: Widget | None = None
            if isinstance(info, AssistantMessage):
                if info.summary:
                    continue
                widget = AssistantMessageView(info, message.parts)
            elif (part := _compaction(message)) is not None:
                summary = self._summaries.get(info.id)
                done = summary is not None and summary.info.finish and not summary.info.error
                undone = done and summary.info.reverted  # type: ignore[union-attr]
                text = _user_text(summary) if summary else ""
                state = "undone" if undone else "done" if done else "cancelled"
                widget = CompactionDivider(info.id, part.auto, text, state)
            elif isinstance(info, UserMessage) and (tool := _shell_tool(message)) is not None:
                widget = shell_line(tool)
            elif text := _user_text(message):
                widget = UserMessageView(text)
            if widget is not None:
                self._views[info.id] = widget
                widgets.append(widget)
        return widgets

    def _dim_compacted(self) -> None:
        boundary = history_start(self.session) if self.session else None
        for key, widget in self._views.items():
            widget.set_class(boundary is not None and key < boundary, "-compacted")

    # ---- live events ------------------------------------------------------------------

    async def apply(self, event: Event) -> None:
        if isinstance(event, PartUpdated):
            await self._show_part(event)
        elif isinstance(event, MessageUpdated):
            await self._show_message(event.info)
        elif isinstance(event, SessionStatus):
            self._busy = event.status != "idle"
            if event.status == "idle":
                await self._cancel_running_dividers()
        elif isinstance(event, SessionUpdated):
            self.session = event.session
        elif isinstance(event, SessionCompacted):
            request_id = self._summary_of.get(event.summary_message_id)
            divider = self._views.get(request_id or "")
            if isinstance(divider, CompactionDivider):
                divider.auto = event.auto
                await divider.set_state("done")
            self._dim_compacted()
        elif isinstance(event, CompactionUndone):
            request_id = self._summary_of.get(event.summary_message_id)
            divider = self._views.get(request_id or "")
            if isinstance(divider, CompactionDivider):
                await divider.set_state("undone")
            self._dim_compacted()

    async def _append(self, key: str, widget: Widget) -> None:
        self._views[key] = widget
        await self.mount(widget)

    async def _show_message(self, info: Message) -> None:
        if info.undone:  # taken back with /undo: out of the view (redo reloads the session)
            self._infos.pop(info.id, None)
            view = self._views.pop(info.id, None)
            if view is not None:
                await view.remove()
            return
        is_new = info.id not in self._infos
        self._infos[info.id] = info
        if not isinstance(info, AssistantMessage):
            return
        if info.summary:
            self._summary_of[info.id] = info.parent_id
            divider = self._views.get(info.parent_id)
            if isinstance(divider, CompactionDivider) and info.error is not None:
                await divider.set_state("cancelled")
            return
        if is_new:
            for widget in self._views.values():
                if isinstance(widget, UserMessageView) and widget.queued:
                    widget.queued = False
        view = self._views.get(info.id)
        if isinstance(view, AssistantMessageView):
            await view.show_info(info)
        elif info.error is not None:
            await self._append(info.id, AssistantMessageView(info))

    async def _show_part(self, event: PartUpdated) -> None:
        part = event.part
        info = self._infos.get(part.message_id)
        request_id = self._summary_of.get(part.message_id)
        if request_id is not None:
            divider = self._views.get(request_id)
            if isinstance(divider, CompactionDivider) and isinstance(part, TextPart):
                await divider.show_summary(part.text)
            return
        if isinstance(info, AssistantMessage):
            view = self._views.get(info.id)
            if not isinstance(view, AssistantMessageView):
                view = AssistantMessageView(info)
                await self._append(info.id, view)
            await view.show_part(part)
        elif isinstance(part, ToolPart):  # a `!command`
            view = self._views.get(part.message_id)
            if isinstance(view, ToolLine):
                view.show(part)
            else:
                await self._append(part.message_id, shell_line(part))
        elif part.message_id not in self._views:
            if isinstance(part, CompactionPart):
                await self._append(part.message_id, CompactionDivider(part.message_id, part.auto))
            elif isinstance(part, TextPart) and not part.synthetic and part.text:
                await self._append(part.message_id, UserMessageView(part.text, queued=self._busy))

    async def _cancel_running_dividers(self) -> None:
        for widget in self._views.values():
            if isinstance(widget, CompactionDivider) and widget.state == "running":
                await widget.set_state("cancelled")

    # ---- queries for tests and the app ------------------------------------------------

    def text_of_last_assistant(self) -> str:
        views = [w for w in self._views.values() if isinstance(w, AssistantMessageView)]
        return views[-1].plain_text() if views else ""

    def models_used(self) -> list[str]:
        return [info.model for info in self._infos.values() if info.model]
