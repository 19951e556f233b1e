"""The context budget the model is told about once a step used a share of usable."""

from __future__ import annotations

from agent_tui.budget.overflow import prompt_and_output, threshold_tokens, usable_tokens
from agent_tui.config.settings import CompactionConfig, ModelLimit
from agent_tui.records import AssistantMessage


def budget_reminder_text(used: int, usable: int, auto: bool, at: int | None = None) -> str:
    """The context budget as the model sees it: plain numbers, and the threshold of
    automatic compaction (`at`, default usable) when it is on."""
    percent = round(100 * used / usable)
    threshold = f"Automatic compaction at {at or usable} tokens; prefer" if auto else "Prefer"
    return (
        f"<system-reminder>Context: {used} of {usable} usable tokens used ({percent}%). "
        f"{threshold} offset/limit reads and grep over whole files.</system-reminder>"
    )


def budget_reminder_for(
    last: AssistantMessage | None, limit: ModelLimit, config: CompactionConfig
) -> str | None:
    """The reminder for the next request once the last finished step used more than
    `config.budget_reminder` of usable; None before that, or when the window is unknown."""
    usable = usable_tokens(limit, config)
    if last is None or usable == 0 or config.budget_reminder == 0:
        return None
    used = prompt_and_output(last.tokens)
    if used <= config.budget_reminder * usable:
        return None
    return budget_reminder_text(used, usable, config.auto, threshold_tokens(limit, config))
