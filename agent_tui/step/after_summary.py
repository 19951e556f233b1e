"""What is restated after a summary, as the model reads it (step/messages.py): the
person's words, the pinned messages, the file ledger, the todo list, and the bridge to
the verbatim tail. Rendered from what the summary message stores; what a compaction
chooses to store there is context/'s (restate.py, pins.py, ledger.py, carried.py)."""

from __future__ import annotations

from agent_tui.records import AssistantMessage, FileRecord, PinnedText

RESTATE_HEADER = (
    "For reference, the messages I wrote in the part of our conversation that the "
    "summary above replaces, verbatim, newest first:"
)
BRIDGE_TEXT = "The newest steps of our conversation follow verbatim."
TODOS_HEADER = "The current todo list:"
"""Heads the todo list in the summary request and where it is restated after a summary."""
TODOS_RESTATED = "The todo list when the summary above was written (todoread shows it now):"

PINS_HEADER = (
    "Messages the person pinned, restated verbatim after every summary, oldest first "
    "(the person pins and unpins them; they are not written by the summariser):"
)

LEDGER_HEADER = (
    "Files read, created, edited or deleted in the part of our conversation that the summary "
    "above replaces and in the summaries before it, oldest action first (kept by agent-tui "
    "from the tool calls and working-tree snapshots, not written by the summariser; lines "
    "added and removed in brackets; a bash command that only reads a file is not listed):"
)
LEDGER_MAX_FILES = 300
"""Files listed at most; beyond it files only read are counted, not named."""


def after_summary_blocks(info: AssistantMessage) -> list[str]:
    """The texts restated after a summary besides the person's words, todos and plan."""
    texts = [pins_text(info.pins, info.pins_left_out, info.pin_budget), ledger_text(info.ledger)]
    texts.append(f"[PostCompact hook]\n{info.hook_context}" if info.hook_context else "")
    return [text for text in texts if text]


# ---- the person's words and the todo list ---------------------------------------------


def restated_text(texts: list[str]) -> str:
    quoted = "\n\n".join(f"<message>\n{text}\n</message>" for text in texts)
    return f"{RESTATE_HEADER}\n\n{quoted}"


def todos_block(todos: str, header: str = TODOS_HEADER) -> str:
    """The rendered todo list under its header (empty when there is no list)."""
    return f"{header}\n{todos}" if todos else ""


# ---- pins -----------------------------------------------------------------------------


def describe(item: PinnedText) -> str:
    if item.kind == "tool":
        return f"the result of {item.label}"
    who = "your message" if item.kind == "person" else "the agent's message"
    return f'{who} "{item.label}"'


def pinned_block(item: PinnedText) -> str:
    if item.kind == "tool":
        return (
            f'<pinned id="{item.id}" tool="{item.tool}">\nCall: {item.call}\nResult:\n'
            f"{item.text}\n</pinned>"
        )
    return f'<pinned id="{item.id}" from="{item.kind}">\n{item.text}\n</pinned>'


def left_out_text(left_out: list[PinnedText], budget: int) -> str:
    names = "; ".join(f"{i.id} ({describe(i)}, about {i.tokens:,} tokens)" for i in left_out)
    return (
        f"Pinned but not restated here, over the {budget:,} tokens pins may take "
        f"(compaction.pin_tokens): {names}. The recall tool reads any of them in full by id."
    )


def pins_text(kept: list[PinnedText], left_out: list[PinnedText], budget: int) -> str:
    """The block restated after a summary ("" when nothing is pinned)."""
    if not kept and not left_out:
        return ""
    blocks = [PINS_HEADER, *(pinned_block(item) for item in kept)]
    if left_out:
        blocks.append(left_out_text(left_out, budget))
    return "\n\n".join(blocks)


# ---- the file ledger ------------------------------------------------------------------


def _line(record: FileRecord) -> str:
    counts = f" (+{record.added} -{record.removed})" if record.added or record.removed else ""
    return f"- {record.path} — {', '.join(record.actions)}{counts}"


def ledger_text(ledger: list[FileRecord]) -> str:
    """The ledger as restated after a summary ("" when no file was touched)."""
    if not ledger:
        return ""
    changed = [r for r in ledger if r.actions != ["read"]]
    read_only = [r for r in ledger if r.actions == ["read"]]
    shown = changed[:LEDGER_MAX_FILES]
    shown += read_only[: max(LEDGER_MAX_FILES - len(shown), 0)]
    lines = [_line(r) for r in sorted(shown, key=lambda r: r.path)]
    if hidden := len(ledger) - len(shown):
        lines.append(f"- … and {hidden} more files (read or changed earlier; not named here)")
    return LEDGER_HEADER + "\n" + "\n".join(lines)
