"""When a summary's preparation starts: early enough that it is whole at the threshold.

A summary takes the summariser's time; meanwhile the agent's steps fill the window at the
session's pace. So a step starts the preparation once the tokens left before the
threshold are fewer than the steps the summariser's time spans, plus
`compaction.prepare_margin` steps, times the tokens a step adds. Everything is measured
from what is stored already: the steps' times and tokens are the session's messages
(which every later `run --continue` reads), the summariser's time is each prepared
summary's `seconds` (and a summary a compaction waited for); a new session starts from
the newest times of the same summariser in the database; one never measured there is
taken as slow as the bounds allow (a summary ready early costs less than one late).

`compaction.prepare_at` bounds it from above (it is also the start while the session's
pace is unknown; a summary begun later covers no more, `prepared._tail_kept`), and
`compaction.prepare_earliest` from below (a summary begun earlier would cover little).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise

from pydantic import BaseModel, ConfigDict, Field

from agent_tui.budget.overflow import prompt_and_output, threshold_tokens
from agent_tui.config.settings import CompactionConfig
from agent_tui.context.compaction_plan import summariser
from agent_tui.engine_context import EngineContext
from agent_tui.provider.limits import ModelInfo
from agent_tui.records import AssistantMessage, MessageWithParts, PreparedSummary

PACE_STEPS = 10
"""The newest step intervals the pace is measured over: recent enough to follow a change
of work (reading files, then running tests), enough to even out one large output."""
PACE_MIN_STEPS = 2
"""Fewer measured intervals say nothing yet: the start stays at `prepare_at`."""
SUMMARISER_TIMES = 3
"""The newest summariser times weighed; the longest counts (a summary's time grows with
its span, and a preparation ready too early costs less than one late)."""


class Pace(BaseModel):
    """How fast the session's steps fill the window, measured over its newest steps."""

    model_config = ConfigDict(frozen=True)

    seconds: float = Field(gt=0)
    """Seconds from one step's end to the next's (its tools and its model call)."""
    tokens: float = Field(ge=0)
    """Tokens each step adds to the prompt."""


class Measured(BaseModel):
    """What a preparation's start is computed from."""

    model_config = ConfigDict(frozen=True)

    threshold: int = Field(ge=0)
    """Tokens at which automatic compaction fires."""
    summariser: float | None = None
    """Seconds the summariser takes (None: never measured)."""
    pace: Pace | None = None
    """The session's pace (None: too few steps yet)."""


def start_share(measured: Measured, config: CompactionConfig) -> float:
    """The share of the threshold past which a finished step starts preparing (0: never)."""
    latest = config.prepare_at
    if latest <= 0 or measured.threshold <= 0:
        return 0.0
    if measured.pace is None:
        return latest
    if measured.summariser is None:  # never measured: as slow as the bounds allow
        return min(latest, config.prepare_earliest)
    lead = lead_tokens(measured.summariser, measured.pace, config.prepare_margin)
    share = 1 - lead / measured.threshold
    return min(latest, max(config.prepare_earliest, share))


def lead_tokens(summariser: float, pace: Pace, margin: float) -> float:
    """Tokens the steps add while the summariser writes, plus `margin` steps."""
    return (summariser / pace.seconds + margin) * pace.tokens


def pace_of(steps: Iterable[AssistantMessage]) -> Pace | None:
    """The mean interval and growth of the newest PACE_STEPS pairs of consecutive steps
    in one turn (the time between turns is the person's, or a process starting). A pair
    whose prompt shrank (a prune or a compaction between them) says nothing of the pace."""
    finished = [s for s in steps if not s.summary and s.finish and s.completed and s.error is None]
    seconds: list[float] = []
    tokens: list[int] = []
    for before, after in pairwise(sorted(finished, key=lambda s: s.id)):
        assert before.completed is not None and after.completed is not None
        grown = prompt_and_output(after.tokens) - prompt_and_output(before.tokens)
        if before.parent_id != after.parent_id or grown < 0:
            continue
        seconds.append((after.completed - before.completed) / 1000)
        tokens.append(grown)
    seconds, tokens = seconds[-PACE_STEPS:], tokens[-PACE_STEPS:]
    if len(seconds) < PACE_MIN_STEPS or sum(seconds) <= 0:
        return None
    return Pace(seconds=sum(seconds) / len(seconds), tokens=sum(tokens) / len(tokens))


def summariser_seconds(
    rows: Iterable[PreparedSummary], summaries: Iterable[AssistantMessage], writer: str
) -> float | None:
    """The longest of the newest SUMMARISER_TIMES times of summariser `writer`: prepared
    summaries (`rows`, whatever became of them) and summaries a compaction waited for (a
    summary message that applied a prepared one took no time of its own)."""
    rows = list(rows)
    applied = {p.used_by for p in rows if p.used_by}
    times = [(p.created, p.seconds) for p in rows if p.model == writer and p.seconds > 0]
    for summary in summaries:
        if summary.model != writer or not summary.summary or summary.error is not None:
            continue
        done = summary.completed
        if done is not None and done > summary.created and summary.parent_id not in applied:
            times.append((done, (done - summary.created) / 1000))
    newest = sorted(times)[-SUMMARISER_TIMES:]
    return max((seconds for _, seconds in newest), default=None)


async def wanted(
    ctx: EngineContext, step: AssistantMessage, model: ModelInfo, history: list[MessageWithParts]
) -> bool:
    """Whether the step just finished (after `history`) starts preparing a summary: it is
    past the start the session's measures give. Nothing is read before the earliest
    start, nor while the session's summary is being prepared."""
    config = ctx.config.compaction
    threshold = threshold_tokens(model.limit, config)
    if not config.auto or config.prepare_at <= 0 or threshold == 0 or step.summary:
        return False
    used = prompt_and_output(step.tokens)
    early = used < min(config.prepare_earliest, config.prepare_at) * threshold
    if early or ctx.live(step.session_id).is_preparing:
        return False
    if used >= config.prepare_at * threshold:
        return True
    measured = await measure(ctx, step, model, history, threshold)
    return used >= start_share(measured, config) * threshold


async def measure(
    ctx: EngineContext,
    step: AssistantMessage,
    model: ModelInfo,
    history: list[MessageWithParts],
    threshold: int,
) -> Measured:
    """The session's pace over `history` and `step`, and its summariser's time; a
    session that never summarised takes the summariser's newest times elsewhere."""
    steps = {m.info.id: m.info for m in history if isinstance(m.info, AssistantMessage)}
    steps[step.id] = step
    writer = summariser(ctx, model).id
    rows = await ctx.db.prepared_summaries(step.session_id)
    seconds = summariser_seconds(rows, steps.values(), writer)
    if seconds is None:
        elsewhere = await ctx.db.prepared_by(writer, SUMMARISER_TIMES)
        seconds = summariser_seconds(elsewhere, (), writer)
    return Measured(threshold=threshold, summariser=seconds, pace=pace_of(steps.values()))
