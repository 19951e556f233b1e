"""PreCompact and PostCompact (hooks/) around a compaction, automatic or manual, and
SessionStart with source `compact` after it (Claude Code's way to put context back). A
PreCompact hook that blocks stops a manual compaction (an automatic one must go on: the
history no longer fits); what PostCompact and SessionStart hooks add is kept on the
summary and restated after it from the next request on, as pins are."""

from __future__ import annotations

from pathlib import Path

from agent_tui.engine_context import EngineContext
from agent_tui.errors import CompactionError
from agent_tui.events import Notice
from agent_tui.records import AssistantMessage, CompactionPart, Session
from agent_tui.step.messages import summary_for, summary_text


async def _payload(ctx: EngineContext, session: Session, part: CompactionPart) -> dict[str, object]:
    return {
        **await ctx.hook_payload(session.id, Path(session.directory)),
        "trigger": "auto" if part.auto else "manual",
        "custom_instructions": part.instructions or "",
    }


async def before(ctx: EngineContext, session: Session, part: CompactionPart) -> None:
    if not ctx.hooks.any_for("PreCompact"):
        return
    payload = await _payload(ctx, session, part)
    trigger = str(payload["trigger"])
    result = await ctx.hooks.fire("PreCompact", Path(session.directory), payload, subject=trigger)
    if not result.blocked:
        return
    if not part.auto:
        raise CompactionError(f"A PreCompact hook stopped the compaction: {result.reason}")
    note = "A PreCompact hook objected, but the history no longer fits: compacting anyway"
    ctx.publish(Notice(session_id=session.id, level="warning", message=f"{note} ({result.reason})"))


async def after(ctx: EngineContext, session: Session, part: CompactionPart) -> None:
    hooks = ctx.hooks
    wanted = hooks.any_for("PostCompact") or hooks.any_for("SessionStart")
    if not wanted or session.compaction_id is None:
        return
    messages = await ctx.db.messages(session.id, since_id=session.compaction_id)
    found = summary_for(messages, session.compaction_id)
    if found is None or not isinstance(found.info, AssistantMessage):
        return
    directory = Path(session.directory)
    payload = {**await _payload(ctx, session, part), "summary": summary_text(found)}
    result = await hooks.fire("PostCompact", directory, payload, subject=str(payload["trigger"]))
    start = {**await ctx.hook_payload(session.id, directory), "source": "compact"}
    env = {"CLAUDE_ENV_FILE": str(ctx.claude_env_file(session.id))}
    started = await hooks.fire(
        "SessionStart", directory, start, subject="compact", env=env, session_dir=session.id
    )
    added = [*result.context, *started.context]
    if added:
        found.info.hook_context = "\n\n".join(added)
        await ctx.db.upsert_message(found.info, flush=True)
