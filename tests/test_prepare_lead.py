"""When a summary's preparation starts (context/prepare_lead.py): the lead computed from
the summariser's measured time and the session's seconds and tokens per step."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_tui.config.settings import CompactionConfig, Config, ModelLimit
from agent_tui.context.prepare_lead import (
    PACE_STEPS,
    Measured,
    Pace,
    pace_of,
    start_share,
    summariser_seconds,
    wanted,
)
from agent_tui.engine_context import EngineContext
from agent_tui.provider.limits import ModelInfo, Prices
from agent_tui.records import (
    AssistantMessage,
    MessageWithParts,
    PreparedSummary,
    Tokens,
)
from agent_tui.storage.db import Database

THRESHOLD = 52_000  # bench_prepared.py's: a 60k window, 8k of output
WRITER = "anthropic/claude-sonnet-4-5"
DEFAULT = CompactionConfig()


def share(summariser: float | None, seconds: float, tokens: float, **config: float) -> float:
    pace = Pace(seconds=seconds, tokens=tokens)
    measured = Measured(threshold=THRESHOLD, summariser=summariser, pace=pace)
    return start_share(measured, CompactionConfig(**config))


def test_before_the_pace_is_measured_the_start_is_prepare_at() -> None:
    assert start_share(Measured(threshold=THRESHOLD), DEFAULT) == 0.8
    assert start_share(Measured(threshold=THRESHOLD, summariser=15.0), DEFAULT) == 0.8
    assert start_share(Measured(threshold=THRESHOLD), CompactionConfig(prepare_at=0.7)) == 0.7


def test_a_summariser_never_measured_starts_the_first_preparation_at_prepare_earliest() -> None:
    """The first compaction a database sees with a summariser: its time is unknown, so it
    is taken as slow as the bounds allow, however fast the steps are."""
    for pace in (Pace(seconds=2, tokens=2_300), Pace(seconds=60, tokens=100)):
        measured = Measured(threshold=THRESHOLD, pace=pace)
        assert start_share(measured, DEFAULT) == 0.5
        assert start_share(measured, CompactionConfig(prepare_earliest=0.6)) == 0.6
        # prepare_at below prepare_earliest: prepare_at wins (it is the latest start).
        assert start_share(measured, CompactionConfig(prepare_at=0.4)) == 0.4
    # Once measured, the lead is the measured one again (15 s, 2 s and 2,300 a step).
    measured = Measured(threshold=THRESHOLD, summariser=15.0, pace=Pace(seconds=2, tokens=2_300))
    assert start_share(measured, DEFAULT) == pytest.approx(1 - 9.5 * 2_300 / THRESHOLD)


def test_a_summariser_slower_than_prepare_ats_lead_starts_earlier() -> None:
    # 15 s at 2 s and 2,000 tokens a step: 7.5 steps + 2 of margin = 19,000 tokens ahead.
    assert share(15, 2, 2_000) == pytest.approx(1 - 19_000 / THRESHOLD)
    # Twice as slow a summariser: twice the steps it spans.
    assert share(30, 2, 1_000) == pytest.approx(1 - 17_000 / THRESHOLD)
    # The margin is a config key: no margin, only the steps the summary spans.
    assert share(15, 2, 2_000, prepare_margin=0) == pytest.approx(1 - 15_000 / THRESHOLD)


def test_never_later_than_prepare_at_nor_earlier_than_prepare_earliest() -> None:
    # A fast summariser would start past 0.9: prepare_at's lead is the usual kept tail.
    assert share(2, 2, 1_000) == 0.8
    # A summariser slower than half the window's steps starts at prepare_earliest.
    assert share(300, 2, 1_000) == 0.5
    assert share(300, 2, 1_000, prepare_earliest=0.6) == 0.6
    # prepare_at below prepare_earliest: prepare_at wins (it is the latest start).
    assert share(300, 2, 1_000, prepare_at=0.4) == 0.4


def test_prepare_at_0_or_an_unknown_window_never_prepares() -> None:
    assert share(15, 2, 1_000, prepare_at=0) == 0
    assert start_share(Measured(threshold=0, summariser=15.0), DEFAULT) == 0


def test_an_existing_config_with_prepare_at_alone_still_loads() -> None:
    config = Config.model_validate({"compaction": {"prepare_at": 0.7, "prepare_max_age": 60}})
    assert config.compaction.prepare_at == 0.7
    assert config.compaction.prepare_earliest == 0.5 and config.compaction.prepare_margin == 2


def step(
    n: int, *, at: float, used: int, turn: str = "msg_u0", **fields: object
) -> AssistantMessage:
    return AssistantMessage(
        id=f"msg_s{n:03d}",
        session_id="ses_1",
        parent_id=turn,
        created=int(at * 1000) - 500,
        completed=int(at * 1000),
        tokens=Tokens(input=used),
        **{"finish": "tool_calls", **fields},
    )


def test_the_pace_is_the_mean_step_interval_and_growth_within_a_turn() -> None:
    steps = [step(n, at=100 + 2.5 * n, used=10_000 + 1_200 * n) for n in range(5)]
    assert pace_of(steps) == Pace(seconds=2.5, tokens=1_200)
    assert pace_of(reversed(steps)) == Pace(seconds=2.5, tokens=1_200)  # by id, not order


def test_the_pace_leaves_out_the_time_between_turns_and_a_shrinking_prompt() -> None:
    first = [step(n, at=2 * n, used=1_000 * n) for n in range(3)]
    # The next turn starts a minute later, after a prune took 5,000 tokens away.
    second = [step(n, at=60 + 2 * n, used=1_000 * n, turn="msg_u9") for n in range(3, 6)]
    pruned = step(6, at=72, used=0, turn="msg_u9")
    assert pace_of([*first, *second, pruned]) == Pace(seconds=2, tokens=1_000)


def test_the_pace_needs_two_intervals_and_takes_the_newest_only() -> None:
    assert pace_of([step(0, at=0, used=0), step(1, at=2, used=1_000)]) is None
    unfinished = step(2, at=4, used=2_000, finish=None)
    summary = step(3, at=5, used=2_500, summary=True)
    failed = step(4, at=6, used=3_000, error={"kind": "provider", "message": "down"})
    steps = [step(0, at=0, used=0), step(1, at=2, used=1_000), unfinished, summary, failed]
    assert pace_of(steps) is None
    old = [step(n, at=10 * n, used=5_000 * n) for n in range(20)]  # slow, large steps
    new = [step(n, at=200 + 2 * (n - 20), used=100_000 + 500 * n) for n in range(20, 40)]
    assert pace_of([*old, *new]) == Pace(seconds=2, tokens=500)
    assert len(new) > PACE_STEPS


def prepared(n: int, seconds: float, model: str = WRITER, **fields: object) -> PreparedSummary:
    return PreparedSummary(
        id=f"prt_{n:03d}",
        session_id="ses_1",
        created=n * 1000,
        last_id="msg_s001",
        messages=3,
        fingerprint="f",
        model=model,
        text="SUMMARY",
        seconds=seconds,
        **fields,
    )


def summary(n: int, seconds: float, request: str, model: str = WRITER) -> AssistantMessage:
    done = n * 1000
    return AssistantMessage(
        id=f"msg_x{n:03d}",
        session_id="ses_1",
        parent_id=request,
        model=model,
        agent="compaction",
        summary=True,
        finish="stop",
        created=done - int(seconds * 1000),
        completed=done,
    )


def test_the_summarisers_time_is_the_longest_of_its_newest_three() -> None:
    rows = [prepared(1, 40), prepared(2, 12), prepared(3, 15), prepared(4, 9)]
    assert summariser_seconds(rows, [], WRITER) == 15  # 40 s is older than the newest three
    assert summariser_seconds([prepared(5, 99, model="other/cheap")], [], WRITER) is None
    assert summariser_seconds([], [], WRITER) is None


def test_a_summary_a_compaction_waited_for_counts_one_that_applied_a_prepared_one_does_not() -> (
    None
):
    applied = prepared(1, 15, used_by="msg_r1", status="used")
    instant = summary(2, 0.002, "msg_r1")  # applied the prepared one: took no time of its own
    waited = summary(3, 21, "msg_r2")
    assert summariser_seconds([applied], [instant], WRITER) == 15
    assert summariser_seconds([applied], [instant, waited], WRITER) == 21
    assert summariser_seconds([], [summary(4, 30, "msg_r3", model="other/cheap")], WRITER) is None


async def test_the_first_compaction_takes_the_summarisers_time_from_earlier_sessions(
    tmp_path: Path,
) -> None:
    """A session that never summarised, in a real database: a summariser never measured
    there starts preparing at prepare_earliest; once an earlier session stored its time,
    the new session's first preparation starts by that time instead."""
    model = ModelInfo(
        id=WRITER, limit=ModelLimit(context=60_000, output=8_000), prices=Prices(), known=True
    )
    async with await Database.open(tmp_path / "agent-tui.db") as db:
        ctx = EngineContext(db=db, config=Config())
        session = await db.create_session(str(tmp_path))
        steps = [
            step(n, at=100 + 2 * n, used=20_000 + 2_300 * n).model_copy(
                update={"session_id": session.id}
            )
            for n in range(6)
        ]
        history = [MessageWithParts(info=s) for s in steps]
        past_half = steps[4]  # 29,200 tokens: 0.56 of the threshold (52,000)
        assert await wanted(ctx, past_half, model, history[:4])  # nothing measured: from 0.5
        earlier = await db.create_session(str(tmp_path))
        await db.save_prepared(prepared(1, 15).model_copy(update={"session_id": earlier.id}))
        # 15 s at 2 s and 2,300 tokens a step: from 1 - 9.5 x 2,300 / 52,000, 0.58.
        assert not await wanted(ctx, past_half, model, history[:4])
        assert await wanted(ctx, steps[5], model, history[:5])  # 31,500 tokens: 0.61
