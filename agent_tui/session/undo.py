"""Undo and redo of whole turns: the files they changed and their place in the history.

A turn is a user message and the assistant steps answering it (`parent_id`). Each step
that ran tools recorded a patch part with the snapshot trees before and after its tools
(storage/snapshot.py). Undo restores every file the newest turn changed to its tree
before the earliest step that changed it, marks the turn's messages `undone` (hidden
from the model and the view, kept in the database) and gives its prompt back. Redo
walks forward again until a newer message is sent. Files the person changed since are
never overwritten silently: `UndoConflict` names them, and `force` goes ahead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from agent_tui.context.boundary import text_of
from agent_tui.engine_context import EngineContext
from agent_tui.errors import UsageError
from agent_tui.events import MessageUpdated
from agent_tui.records import (
    CompactionPart,
    MessageWithParts,
    PatchPart,
    Session,
    UserMessage,
)
from agent_tui.scope import SessionScope
from agent_tui.storage.snapshot import SnapshotError, Snapshots

NO_SNAPSHOTS = (
    "Undo can't restore the files this turn changed: no snapshot was taken (git is not "
    "installed, or config snapshot is false). Nothing was changed."
)


FILES_NAMED = 5
"""Files an undo's sentence names (the CLI lists them all after it)."""


class UndoConflict(UsageError):
    """Files the undo or redo would overwrite were changed by the person since."""

    def __init__(self, action: str, files: list[str]) -> None:
        self.files = files
        listed = ", ".join(files)
        super().__init__(
            f"Not {action}: you changed {listed} since; {action} would overwrite "
            f"{'it' if len(files) == 1 else 'them'}. Nothing was changed."
        )


class TurnRestored(BaseModel):
    """What `undo` or `redo` did."""

    user_message_id: str
    prompt: str
    """The turn's prompt (undo puts it back in the input)."""
    files: list[str]
    """Paths (relative to the session directory) written or deleted."""
    overwritten: list[str] = []
    """Files the person had changed that were overwritten (with `force`)."""
    undone: bool = True
    """Undo (else redo)."""

    def message(self) -> str:
        """What every view says (the app puts an undone prompt back in the input; the
        others show it after this)."""
        count = len(self.files)
        text = f"Turn {'undone' if self.undone else 'redone'}: {count} "
        text += f"file{'s' if count != 1 else ''} restored"
        named = ", ".join(self.files[:FILES_NAMED])
        more = len(self.files) - FILES_NAMED
        text += f" ({named}{f' and {more} more' if more > 0 else ''})." if self.files else "."
        if self.overwritten:
            text += f" Overwritten (changed by you since): {', '.join(self.overwritten)}."
        return text


@dataclass
class Turn:
    user: MessageWithParts
    steps: list[MessageWithParts] = field(default_factory=list)

    @property
    def undone(self) -> bool:
        return self.user.info.undone

    def trees(self) -> tuple[dict[str, str | None], dict[str, str | None]]:
        """Per changed file: the tree before the turn first changed it, and after the
        turn last changed it."""
        before: dict[str, str | None] = {}
        after: dict[str, str | None] = {}
        patches = [p for m in self.steps for p in m.parts if isinstance(p, PatchPart) and p.files]
        for patch in patches:
            for name in patch.files:
                before.setdefault(name, patch.before)
                after[name] = patch.after
        return before, after


def turns_after_boundary(messages: list[MessageWithParts], session: Session) -> list[Turn]:
    """The session's turns after its compaction boundary, oldest first (compaction
    requests and the kept tail are not turns: /uncompact takes a compaction back)."""
    boundary = session.compaction_id or ""
    turns: dict[str, Turn] = {}
    for message in messages:
        info = message.info
        if isinstance(info, UserMessage):
            if info.id > boundary and not any(isinstance(p, CompactionPart) for p in message.parts):
                turns[info.id] = Turn(message)
        elif info.parent_id in turns:
            turns[info.parent_id].steps.append(message)
    return list(turns.values())


async def _changed_by_person(snapshots: Snapshots, expected: dict[str, str | None]) -> list[str]:
    """Files in `expected` whose content now differs from the tree recorded for them."""
    if (now := await snapshots.track()) is None:
        return []
    changed: list[str] = []
    for tree in {t for t in expected.values() if t}:
        names = [n for n, t in expected.items() if t == tree]
        differ = set(await snapshots.changed_files(tree, now))
        changed += [n for n in names if n in differ]
    return sorted(changed)


async def _apply(
    ctx: EngineContext,
    session: Session,
    turn: Turn,
    *,
    undo: bool,
    force: bool,
) -> TurnRestored:
    action = "undone" if undo else "redone"
    before, after = turn.trees()
    target, expected = (before, after) if undo else (after, before)
    overwritten: list[str] = []
    if target:
        snapshots = ctx.snapshots(Path(session.directory))
        if snapshots is None or not snapshots.available or None in target.values():
            raise UsageError(NO_SNAPSHOTS)
        try:
            overwritten = await _changed_by_person(snapshots, expected)
            if overwritten and not force:
                raise UndoConflict(action, overwritten)
            for tree in {t for t in target.values() if t}:
                await snapshots.restore(tree, [n for n, t in target.items() if t == tree])
        except SnapshotError as exc:
            raise UsageError(f"The files could not be {action}: {exc}") from exc
    for message in (turn.user, *turn.steps):
        info = message.info.model_copy(update={"undone": undo})
        await ctx.db.upsert_message(info)
        ctx.publish(MessageUpdated(info=info))
    await ctx.db.flush()
    return TurnRestored(
        user_message_id=turn.user.info.id,
        prompt=text_of(turn.user),
        files=sorted(target),
        overwritten=overwritten,
        undone=undo,
    )


async def undo(scope: SessionScope, *, force: bool = False) -> TurnRestored:
    """Undo the newest turn that is not undone yet: restore the files it changed and hide
    it from the model (UndoConflict, nothing changed, when the person changed one of them
    since); the session held meanwhile."""
    with scope.idle("undoing a turn"):
        ctx, session = scope.ctx, await scope.fresh()
        messages = await ctx.db.messages(session.id, since_id=session.compaction_id)
        if not (active := [t for t in turns_after_boundary(messages, session) if not t.undone]):
            hint = " (/uncompact takes the latest compaction back)" if session.compaction_id else ""
            raise UsageError(f"Nothing to undo in this session{hint}.")
        return await _apply(ctx, session, active[-1], undo=True, force=force)


async def redo(scope: SessionScope, *, force: bool = False) -> TurnRestored:
    """Redo the turn undone last; a message sent since an undo ends what can be redone."""
    with scope.idle("redoing a turn"):
        ctx, session = scope.ctx, await scope.fresh()
        messages = await ctx.db.messages(session.id, since_id=session.compaction_id)
        turns = turns_after_boundary(messages, session)
        newest = max((t.user.info.id for t in turns if not t.undone), default="")
        if not (undone := [t for t in turns if t.undone and t.user.info.id > newest]):
            raise UsageError("Nothing to redo: no turn was undone since the last message sent.")
        return await _apply(ctx, session, undone[0], undo=False, force=force)


async def _session_changes(
    scope: SessionScope,
) -> tuple[Snapshots | None, str | None, str | None, list[str]]:
    """(snapshots, first tree, last tree, files) spanning the session's turns that are
    not undone; trees are None when there is nothing to compare."""
    ctx, session = scope.ctx, scope.session
    messages = await ctx.db.all_messages(session.id)
    patches = [
        p
        for m in messages
        if not m.info.undone
        for p in m.parts
        if isinstance(p, PatchPart) and p.files and p.before and p.after
    ]
    snapshots = ctx.snapshots(Path(session.directory))
    if not patches or snapshots is None or not snapshots.available:
        return snapshots, None, None, []
    files = sorted({name for p in patches for name in p.files})
    return snapshots, patches[0].before, patches[-1].after, files


async def numstat(scope: SessionScope) -> dict[str, tuple[int, int]]:
    """Lines added and removed per file over the session (its undone turns excluded)."""
    snapshots, first, last, files = await _session_changes(scope)
    if snapshots is None or first is None or last is None:
        return {}
    try:
        return await snapshots.numstat(first, last, files)
    except SnapshotError:
        return {}


async def diff(scope: SessionScope) -> str:
    """The session's unified diff: every file its turns changed, first tree to last ("" if
    none)."""
    snapshots, first, last, files = await _session_changes(scope)
    if snapshots is None or first is None or last is None:
        return ""
    try:
        return await snapshots.diff(first, last, files)
    except SnapshotError as exc:
        raise UsageError(f"The session's diff could not be read: {exc}") from exc
