"""The conversation: a virtual scroll view of message widgets, fed by history and events.

Every message shown has a `MessageEntry`; only a window of consecutive entries has
widgets, about what is on screen plus a margin, never more than `WINDOW_MAX` messages.
Scrolling near the window's top (or bottom) mounts the next `PAGE` messages there and
unmounts as many at the far end, keeping what is on screen where it was. A live session
grows at the bottom: while the view follows the stream the oldest widgets are unmounted,
and so are those a long reply has left far above the screen.
So mounting, layout and memory per frame do not depend on how long the session is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual._styles_cache import StylesCache
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.widget import Widget

from agent_tui.records import (
    AssistantMessage,
    Message,
    MessageWithParts,
    Session,
    TextPart,
    ToolPart,
    UserMessage,
)
from agent_tui.tui.assistant_message_view import AssistantMessageView
from agent_tui.tui.compaction_divider import CompactionDivider
from agent_tui.tui.message_entry import (
    MessageEntry,
    build_widget,
    estimated_lines,
)
from agent_tui.tui.tool_line import ToolLine
from agent_tui.tui.user_message_view import UserMessageView

if TYPE_CHECKING:  # the events' models are no part of a reopened session's first frame
    from textual._arrange import DockArrangeResult

    from agent_tui.events import Event, PartUpdated
    from agent_tui.session.newest_page import Page

WINDOW_MAX = 40
"""Messages with widgets at most; the rest are entries only."""
PAGE = 10
"""Messages mounted (and unmounted at the other end) per step of scrolling."""
MARGIN_SCREENS = 1.0
"""Mount more when the window's edge is this many screen heights from the viewport."""
OPEN_SCREENS = 1.25
"""On load, the newest messages mounted cover about this many screen heights."""
KEEP_ABOVE_MARGINS = 2
"""While following the stream, messages that ended more than this many margins above the
viewport are unmounted (twice the margin that mounts them again: no back and forth)."""
PREFETCH_DELAY = 0.1
"""Seconds after a load before the margin above is mounted: the first paint comes first."""
DEFAULT_SCREEN_LINES = 40


def _place(
    entries: list[MessageEntry], divider: MessageEntry, tail_start: str | None, lowest: int = 0
) -> bool:
    """Move `divider` (a compaction's entry) before the first message its compaction kept
    verbatim (`tail_start` and newer), when that is above it and at or after `lowest`;
    whether it moved."""
    if tail_start is None:
        return False
    index = entries.index(divider)
    target = next((i for i in range(lowest, index) if entries[i].key >= tail_start), None)
    if target is None:
        return False
    entries.insert(target, entries.pop(index))
    return True


def forget_removed_styles() -> None:
    """Let removed widgets' rendered lines go.

    Textual (the version pinned in pyproject) caches `StylesCache.get_inner_outer` with
    `functools.lru_cache` on the method, so its key holds the instance: up to 1,024 removed
    widgets' style caches (and every line they rendered) stay alive, megabytes per unmounted
    message in bench_tui (docs/performance.md). The cache only saves building two `Style`s.
    """
    StylesCache.get_inner_outer.cache_clear()


class SessionView(VerticalScroll):
    """Follows the stream (anchored) until the person scrolls up."""

    DEFAULT_CSS = """
    SessionView { padding: 0 1; scrollbar-gutter: stable; }
    SessionView .-compacted { opacity: 60%; }
    SessionView ToolLine.-shell { margin: 1 0 0 0; }
    """

    def __init__(self, *, id: str | None = None, page: Page | None = None) -> None:
        """`page`: a session's newest messages, drawn in the view's first frame."""
        super().__init__(id=id)
        self._opening = page
        self.session: Session | None = None
        self._entries: list[MessageEntry] = []
        self._by_id: dict[str, MessageEntry] = {}
        self._lo = 0
        self._hi = 0
        """The window: entries[_lo:_hi] have widgets (those that show anything)."""
        self._views: dict[str, Widget] = {}
        self._summary_of: dict[str, str] = {}
        """Summary message id -> its compaction request's id."""
        self._busy = False
        self._paging = False
        self._restoring = 0
        """Scroll positions to restore after the next layout (see `_keep_in_place`)."""
        self._arranged = Size(0, 0)
        """The size its children were last arranged in (`container_size`)."""

    def arrange(self, size: Size) -> DockArrangeResult:
        self._arranged = size
        return super().arrange(size)

    @property
    def container_size(self) -> Size:
        """Textual's anchor scrolls to the bottom of the children just arranged minus this
        height, which it only sets after the whole screen is laid out: at the first layout
        the page was scrolled past its end and drawn blank, until the next layout. Until
        then it is the size just arranged in."""
        return super().container_size or self._arranged

    def compose(self):  # type: ignore[no-untyped-def]
        if self._opening is not None:
            yield from self._open(*self._opening)
            self._opening = None

    def on_mount(self) -> None:
        self.anchor()
        if self._entries:  # composed with a page: the margin above once it is drawn
            self.call_after_refresh(self.set_timer, PREFETCH_DELAY, self._request_page)

    @property
    def following(self) -> bool:
        """Anchored to the bottom and not scrolled away by the person."""
        return self.is_anchored and not self._anchor_released

    # ---- loading ----------------------------------------------------------------------

    async def load(self, session: Session | None, messages: list[MessageWithParts]) -> None:
        """Show a session: widgets for the newest screens, entries for everything.

        `messages` may be only the newest ones; `add_older` brings the rest in later.
        """
        with self.app.batch_update():  # no frame of an empty view in between
            await self.remove_children()
            await self.mount_all(self._open(session, messages))
            self.scroll_end(animate=False, immediate=True)
        self.anchor()
        self.set_timer(PREFETCH_DELAY, self._request_page)

    def _open(self, session: Session | None, messages: list[MessageWithParts]) -> list[Widget]:
        """Entries for `messages`, and the widgets of the newest screens to mount."""
        self.session = session
        self._summary_of.clear()
        self._entries, self._views = self._entries_of(messages), {}
        self._by_id = {e.key: e for e in self._entries}
        self._hi = len(self._entries)
        self._lo = self._open_start()
        return self._build(self._lo, self._hi)

    def add_older(self, messages: list[MessageWithParts]) -> None:
        """Entries for the messages older than the oldest shown (after a partial load).

        `messages` is the whole history; what is mounted stays as it is.
        """
        first = self._entries[0].key if self._entries else None
        older = [e for e in self._entries_of(messages) if first is None or e.key < first]
        older = [e for e in older if e.key not in self._by_id]
        if not older:
            return
        self._entries[:0] = older
        self._by_id.update((e.key, e) for e in older)
        self._lo += len(older)
        self._hi += len(older)
        self._request_page()

    def _entries_of(self, messages: list[MessageWithParts]) -> list[MessageEntry]:
        """An entry per message shown; a summary becomes its request's divider."""
        summaries: dict[str, MessageWithParts] = {}
        for message in messages:
            info = message.info
            if isinstance(info, AssistantMessage) and info.summary:
                summaries[info.parent_id] = message
                self._summary_of[info.id] = info.parent_id
        entries: list[MessageEntry] = []
        for message in messages:
            info = message.info
            if isinstance(info, AssistantMessage) and info.summary:
                continue
            entry = MessageEntry.of(message)
            if (summary := summaries.get(info.id)) is not None:
                summary_info = summary.info
                assert isinstance(summary_info, AssistantMessage)
                done = bool(summary_info.finish) and summary_info.error is None
                entry.divider_state = (
                    "undone" if done and summary_info.reverted else "done" if done else "cancelled"
                )
                entry.summary = summary.typed_text()
                entry.edited_summary = summary_info.edited_summary
            elif entry.compaction() is not None:
                entry.divider_state = "cancelled"
            entries.append(entry)
        for entry in [e for e in entries if e.divider_state == "done"]:  # a summary answered it
            _place(entries, entry, getattr(summaries[entry.key].info, "tail_start_id", None))
        return entries

    def _open_start(self) -> int:
        """The first entry to mount on load: the newest ones fill OPEN_SCREENS screens."""
        lines = self.size.height or DEFAULT_SCREEN_LINES
        width = self.size.width or 80
        budget = lines * OPEN_SCREENS
        start = len(self._entries)
        while start > 0 and budget > 0 and len(self._entries) - start < WINDOW_MAX:
            start -= 1
            budget -= estimated_lines(self._entries[start], width)
        return start

    def _build(self, start: int, end: int) -> list[Widget]:
        widgets: list[Widget] = []
        boundary = self._boundary()
        for entry in self._entries[start:end]:
            widget = build_widget(entry)
            if widget is not None:
                widget.set_class(boundary is not None and entry.key < boundary, "-compacted")
                self._views[entry.key] = widget
                widgets.append(widget)
        return widgets

    def _boundary(self) -> str | None:
        return self.session.history_start if self.session else None

    def _dim_compacted(self) -> None:
        boundary = self._boundary()
        for key, widget in self._views.items():
            widget.set_class(boundary is not None and key < boundary, "-compacted")

    # ---- the window -------------------------------------------------------------------

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._request_page()

    def _request_page(self) -> None:
        if not self._paging and self.is_mounted:
            self._paging = True
            self.call_later(self._page)

    async def _page(self) -> None:
        """Mount older or newer messages when the viewport nears an edge of the window."""
        try:
            margin = self.size.height * MARGIN_SCREENS
            if self._lo > 0 and self.scroll_y <= margin:
                await self._mount_older()
            elif self._hi < len(self._entries) and self.max_scroll_y - self.scroll_y <= margin:
                await self._mount_newer()
            elif self.following and (cut := self._scrolled_far_above(margin)) > self._lo:
                await self._unmount(self._lo, cut)
            else:
                return
        finally:
            self._paging = False
        self.call_after_refresh(self._request_page)  # until the margin is filled

    def _scrolled_far_above(self, margin: float) -> int:
        """The first entry of the window to keep while the view follows the stream: the
        ones before it ended more than KEEP_ABOVE_MARGINS margins above the viewport. A
        long reply streaming in leaves the messages before it behind; laid out every
        frame (the compositor arranges every mounted widget), they made each frame, and
        so each key's echo, cost more in a long session than in a new one."""
        limit = self.scroll_y - margin * KEEP_ABOVE_MARGINS
        cut = self._lo
        for index in range(self._lo, self._hi - 1):  # never the newest: it streams
            view = self._views.get(self._entries[index].key)
            if view is not None and view.virtual_region.bottom > limit:
                break
            cut = index + 1
        return cut

    def _first_view(self, start: int, end: int) -> Widget | None:
        entries = self._entries[start:end]
        return next((v for e in entries if (v := self._views.get(e.key)) is not None), None)

    async def _mount_older(self) -> None:
        start = max(0, self._lo - PAGE)
        widgets = self._build(start, self._lo)
        anchor = self._first_view(self._lo, self._hi)
        self._lo = start
        if widgets:
            if anchor is None:
                await self.mount_all(widgets)
            else:
                y = anchor.virtual_region.y
                await self.mount_all(widgets, before=anchor)
                # A key pressed while mounting moved the view: keep that move.
                self._keep_in_place(anchor, self.scroll_y - y)
        if self._hi - self._lo > WINDOW_MAX:  # far below the viewport now
            await self._unmount(self._lo + WINDOW_MAX, self._hi)

    async def _mount_newer(self) -> None:
        end = min(len(self._entries), self._hi + PAGE)
        widgets = self._build(self._hi, end)
        self._hi = end
        await self.mount_all(widgets)
        await self._trim_top()

    async def _trim_top(self) -> None:
        """Unmount the oldest widgets beyond WINDOW_MAX; what is on screen stays put."""
        excess = self._hi - self._lo - WINDOW_MAX
        if excess <= 0:
            return
        keep = self._first_view(self._lo + excess, self._hi)
        y = keep.virtual_region.y if keep is not None else 0.0
        await self._unmount(self._lo, self._lo + excess)
        if keep is not None and not self.following:
            self._keep_in_place(keep, self.scroll_y - y)

    async def _unmount(self, start: int, end: int) -> None:
        """Drop the widgets of entries[start:end] (at one end of the window)."""
        if start >= end:
            return
        views = [v for e in self._entries[start:end] if (v := self._views.pop(e.key, None))]
        if start == self._lo:
            self._lo = end
        else:
            self._hi = start
        if views:
            await self.remove_children(views)
            forget_removed_styles()

    def _keep_in_place(self, anchor: Widget, offset: float) -> None:
        """After the next layout, scroll so `anchor` is where it was on screen."""
        self._restoring += 1

        def restore() -> None:
            self._restoring -= 1
            if not anchor.is_attached:
                return
            if self.following:  # at the bottom: stay there, anchored to what streams next
                self.scroll_end(animate=False, immediate=True)
                return
            y = anchor.virtual_region.y + offset
            # Textual's immediate scroll_to releases the anchor whatever it is told.
            self.scroll_to(y=y, animate=False, immediate=True, release_anchor=False)

        self.call_after_refresh(restore)

    # Keys scroll without animation (an animation heads for an absolute offset, which
    # older messages mounted above on the way would make wrong), and after a pending
    # restore of the position (which would undo them).

    def _scroll_by_key(self, scroll: Callable[..., object]) -> None:
        if self._restoring:
            self.call_after_refresh(scroll, animate=False)
        else:
            scroll(animate=False)

    def action_scroll_home(self) -> None:
        self._scroll_by_key(self.scroll_home)

    def action_scroll_end(self) -> None:
        self._scroll_by_key(self.scroll_end)

    def action_scroll_up(self) -> None:
        self._scroll_by_key(self.scroll_up)

    def action_scroll_down(self) -> None:
        self._scroll_by_key(self.scroll_down)

    async def action_page_up(self) -> None:
        page = self.scrollable_content_region.height
        if self._lo > 0 and self.scroll_y < page and not self._paging:
            # Less than a page is mounted above: mount more first (kept in place after
            # the next layout), then scroll, so the key always moves a whole page.
            self._paging = True
            try:
                await self._mount_older()
            finally:
                self._paging = False
        self._scroll_by_key(self.scroll_page_up)

    def action_page_down(self) -> None:
        self._scroll_by_key(self.scroll_page_down)

    # ---- live events ------------------------------------------------------------------

    async def apply(self, event: Event) -> None:
        if event.type == "part.updated":
            await self._show_part(event)
        elif event.type == "message.updated":
            await self._show_message(event.info)
        elif event.type == "session.status":
            self._busy = event.status != "idle"
            if event.status == "idle":
                self._cancel_running_dividers()
                self._mark_queued(held=True)  # the turn ended before a step read them
        elif event.type == "session.updated":
            self.session = event.session
        elif event.type in ("session.compacted", "session.uncompacted"):
            state = "done" if event.type == "session.compacted" else "undone"
            request_id = self._summary_of.get(event.summary_message_id)
            entry = self._by_id.get(request_id or "")
            if entry is not None:
                if event.type == "session.compacted":
                    entry.auto = event.auto
                    # The session's new boundary came just before (SessionUpdated).
                    tail_start = self.session.tail_start_id if self.session else None
                    self._move_divider(entry, tail_start)
                self._set_divider(entry, state)
            self._dim_compacted()

    def _set_divider(self, entry: MessageEntry, state: str) -> None:
        entry.divider_state = state
        divider = self._views.get(entry.key)
        if isinstance(divider, CompactionDivider):
            if entry.auto is not None:
                divider.auto = entry.auto
            divider.set_state(state)

    async def _show_message(self, info: Message) -> None:
        entry = self._by_id.get(info.id)
        if info.undone:  # taken back with /undo: out of the view (redo reloads the session)
            if entry is not None:
                await self._drop(entry)
            return
        if isinstance(info, AssistantMessage) and info.summary:
            self._summary_of[info.id] = info.parent_id
            request = self._by_id.get(info.parent_id)
            if request is not None and info.error is not None:
                self._set_divider(request, "cancelled")
            if request is not None and request.edited_summary != info.edited_summary:
                request.edited_summary = info.edited_summary  # corrected with /summary
                divider = self._views.get(request.key)
                if isinstance(divider, CompactionDivider):
                    await divider.show_edit(info.edited_summary, request.summary)
            return
        if entry is not None:
            entry.info = info
            view = self._views.get(info.id)
            if isinstance(view, AssistantMessageView) and isinstance(info, AssistantMessage):
                view.show_info(info)
            elif isinstance(view, UserMessageView):
                view.pinned = info.pinned is not None
            elif view is None and isinstance(info, AssistantMessage) and info.error is not None:
                await self._mount_entry(entry)
            return
        if isinstance(info, AssistantMessage):  # the next step: queued messages are read
            self._mark_queued(held=False)
        entry = MessageEntry(info)
        self._entries.append(entry)
        self._by_id[entry.key] = entry
        await self._grow(entry)

    def _move_divider(self, request: MessageEntry, tail_start: str | None) -> None:
        """A compaction that kept a tail verbatim (compact up to here, or the newest steps):
        its divider goes where the boundary is, above the messages kept, within the
        window (a session opened again places it wherever it is: `_entries_of`)."""
        divider = self._views.get(request.key)
        if divider is None or not _place(self._entries, request, tail_start, lowest=self._lo):
            return  # not mounted (read from further up): placed when the session opens
        target = self._entries.index(request)
        after = self._first_view(target + 1, self._hi)
        if after is not None:
            self.move_child(divider, before=after)

    async def _grow(self, entry: MessageEntry) -> None:
        """A new entry at the bottom joins the window if the window reaches the bottom."""
        if self._hi != len(self._entries) - 1:
            return
        if not self.following and self._hi - self._lo >= WINDOW_MAX:
            return  # the person reads older messages: it mounts when they scroll down
        self._hi += 1
        await self._mount_entry(entry)
        if self.following:
            await self._trim_top()

    async def _mount_entry(self, entry: MessageEntry) -> None:
        """Mount an entry of the window that has no widget yet, in its place."""
        index = self._window_index(entry)
        if index is None or entry.key in self._views:
            return
        widget = self._build(index, index + 1)
        if not widget:
            return
        after = self._first_view(index + 1, self._hi)
        await (self.mount(widget[0], before=after) if after else self.mount(widget[0]))

    def _window_index(self, entry: MessageEntry) -> int | None:
        newest_first = range(self._hi - 1, self._lo - 1, -1)  # live entries are the newest
        return next((i for i in newest_first if self._entries[i] is entry), None)

    async def _drop(self, entry: MessageEntry) -> None:
        index = self._entries.index(entry)
        del self._entries[index]
        del self._by_id[entry.key]
        if index < self._lo:
            self._lo -= 1
        if index < self._hi:
            self._hi -= 1
        view = self._views.pop(entry.key, None)
        if view is not None:
            await view.remove()

    def _mark_queued(self, *, held: bool) -> None:
        """The queued messages are held (the turn ended unread), or read (`held` False:
        a step started, so they are no longer queued)."""
        for entry in reversed(self._entries):
            if entry.queued:
                entry.queued, entry.held = held, held
                if isinstance(view := self._views.get(entry.key), UserMessageView):
                    view.queued, view.held = held, held

    async def _show_part(self, event: PartUpdated) -> None:
        part = event.part
        request_id = self._summary_of.get(part.message_id)
        if request_id is not None:  # a summary streaming into its divider
            request = self._by_id.get(request_id)
            if request is not None and isinstance(part, TextPart):
                request.summary = part.text
                divider = self._views.get(request_id)
                if isinstance(divider, CompactionDivider):
                    await divider.show_summary(part.text)
            return
        entry = self._by_id.get(part.message_id)
        if entry is None:
            return
        first = not entry.parts
        entry.parts[part.id] = part
        if first and isinstance(entry.info, UserMessage) and (self._busy or entry.info.queued):
            # Sent while the agent works (here, or in another process: saved queued).
            entry.queued = isinstance(part, TextPart)
        view = self._views.get(part.message_id)
        if view is None:
            await self._mount_entry(entry)
        elif isinstance(view, AssistantMessageView):
            await view.show_part(part)
            if self.following:  # the anchor's scrolling calls no watcher: see what it left
                self.call_after_refresh(self._request_page)
        elif isinstance(view, ToolLine) and isinstance(part, ToolPart):
            view.show(part)

    def _cancel_running_dividers(self) -> None:
        for entry in self._entries[self._lo :]:
            if entry.divider_state == "running" and entry.compaction() is not None:
                self._set_divider(entry, "cancelled")
