"""A manual /compact with `compaction.review`: the summary is written first and the person
applies it (as written or edited) or discards it before anything is compacted."""

from __future__ import annotations

from agent_tui.context import prepared
from agent_tui.project.agents import DEFAULT_AGENT
from agent_tui.provider.auth import check_credentials
from agent_tui.provider.limits import load_with_summariser
from agent_tui.records import PreparedSummary, UserMessage
from agent_tui.scope import SessionScope


async def write(
    scope: SessionScope, model: str, instructions: str | None = None
) -> PreparedSummary | None:
    """The summary the compaction would apply, not applied. None when it cannot be
    written in one call (a span for chunks): then compact as usual."""
    config = scope.workspace.config
    await check_credentials(config.compaction.model or model, config)
    with scope.idle("writing a summary to review"):
        info = await load_with_summariser(model, config)
        await scope.fresh()
        users = [m.info for m in await scope.history() if isinstance(m.info, UserMessage)]
        agent = max(users, key=lambda u: u.id).agent if users else DEFAULT_AGENT
        return await prepared.prepare(
            scope.ctx, scope.id, info, agent, review=True, instructions=instructions
        )


async def keep(scope: SessionScope, summary: PreparedSummary, text: str | None) -> str:
    """The reviewed summary is the one the next compaction applies (`text`: the person's
    edit; the original is kept); the agent to compact for."""
    if text is not None and text.strip() and text.strip() != summary.text.strip():
        summary.edited = text.strip()
    ctx = scope.ctx
    prepared.cancel(ctx, scope.id)  # only this one is applied
    for other in await ctx.db.prepared_summaries(scope.id, "ready"):
        if other.id != summary.id:
            await prepared.discard(ctx, other, "the person applied a reviewed one")
    await ctx.db.save_prepared(summary)
    return summary.agent or DEFAULT_AGENT


async def discard(scope: SessionScope, summary: PreparedSummary) -> None:
    await prepared.discard(scope.ctx, summary, "the person discarded it in the review")
