"""Prune by importance: which old tool outputs the `prune_protect` budget keeps.

Histories are built straight from the storage models and given to `select_prunable`, a
pure function; sizes are measured with the same counter so budgets fit a known number of
outputs whichever tokenizer is available offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from agent_tui.budget.tokens import count_tokens
from agent_tui.config.settings import CompactionConfig
from agent_tui.context.prune import select_prunable
from agent_tui.ids import message_id, part_id
from agent_tui.records import (
    AssistantMessage,
    MessageWithParts,
    Part,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
    ToolTime,
    UserMessage,
)

MODEL = "openai/test-model"
SESSION = "ses_prune_order"


# ---- building histories -------------------------------------------------------------


def output(tool: str, text: str, metadata: dict[str, Any] | None = None, **args: Any) -> ToolPart:
    """A completed tool call; the message id is filled in by `History.step`."""
    state = ToolStateCompleted(input=args, output=text, metadata=metadata or {})
    return ToolPart(
        id=part_id(), session_id=SESSION, message_id="", call_id=part_id(), tool=tool, state=state
    )


def bash(text: str, exit_code: int = 0) -> ToolPart:
    return output("bash", text, {"exit_code": exit_code}, command="make check")


def said(text: str) -> TextPart:
    return TextPart(id=part_id(), session_id=SESSION, message_id="", text=text)


def body(tag: str, lines: int = 40) -> str:
    """An output of distinct lines; every body with a tag of one length has one size."""
    return "\n".join(f"{tag} line {i:03d}: the build step reported nothing" for i in range(lines))


def completed(part: ToolPart) -> ToolStateCompleted:
    assert isinstance(part.state, ToolStateCompleted)
    return part.state


def tokens(*parts: ToolPart) -> int:
    return sum(count_tokens(completed(p).output, MODEL) for p in parts)


@dataclass
class History:
    messages: list[MessageWithParts] = field(default_factory=list)
    parent: str = ""

    def user(self, text: str = "go on") -> History:
        self.parent = message_id()
        info = UserMessage(id=self.parent, session_id=SESSION)
        self.messages.append(MessageWithParts(info=info, parts=[said(text)]))
        return self

    def step(self, *parts: Part, summary: bool = False) -> History:
        info = AssistantMessage(
            id=message_id(), session_id=SESSION, parent_id=self.parent, summary=summary
        )
        for part in parts:
            part.message_id = info.id
        self.messages.append(MessageWithParts(info=info, parts=list(parts)))
        return self

    def two_quiet_turns(self) -> History:
        """The 2 newest user turns, which prune never touches."""
        return self.user().step(said("looking")).user().step(said("ok"))


def select(history: History, protect: int, minimum: int = 0) -> tuple[list[ToolPart], int]:
    config = CompactionConfig(prune_protect=protect, prune_minimum=minimum)
    return select_prunable(history.messages, config, model=MODEL)


def ids(parts: list[ToolPart]) -> set[str]:
    return {p.id for p in parts}


# ---- failed outputs are kept longest ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "exit_code"),
    [
        ("", 2),
        ("Traceback (most recent call last):\n  File 'x.py'\nValueError: bad", 0),
        ("FAILED tests/test_x.py::test_y - assert 1 == 2", 0),
        ("error: could not compile `app` due to 2 previous errors", 0),
        ("Error: ENOENT: no such file or directory", 0),
    ],
    ids=["exit-code", "traceback", "pytest-failed", "compiler-error", "node-error"],
)
def test_failed_output_outlives_newer_successful_ones(text: str, exit_code: int) -> None:
    failed = bash(f"{text}\n{body('FAIL')}", exit_code=exit_code)
    ok_1, ok_2 = bash(body("OK-1")), bash(body("OK-2"))
    history = History().user().step(failed).user().step(ok_1).user().step(ok_2)
    marked, total = select(history.two_quiet_turns(), protect=tokens(failed))
    assert ids(marked) == {ok_1.id, ok_2.id}
    assert total == tokens(ok_1, ok_2)


def test_without_a_failure_the_newest_output_is_kept() -> None:
    older, ok_1, ok_2 = bash(body("OLD-")), bash(body("OK-1")), bash(body("OK-2"))
    history = History().user().step(older).user().step(ok_1).user().step(ok_2)
    marked, _ = select(history.two_quiet_turns(), protect=tokens(ok_2))
    assert ids(marked) == {older.id, ok_1.id}


def test_the_budget_still_clears_failed_outputs_it_cannot_hold() -> None:
    failed = bash(body("FAIL"), exit_code=1)
    history = History().user().step(failed, bash(body("OK-1"))).two_quiet_turns()
    marked, _ = select(history, protect=0)
    assert failed.id in ids(marked) and len(marked) == 2


# ---- quoted outputs are kept longest within their class -----------------------------


def quoted_by_text(line: str) -> Part:
    return said(f"The culprit is `{line}`, so I will change it.")


def quoted_by_edit(line: str) -> Part:
    return output("edit", "Edited.", file_path="/src/other.py", old_string=line, new_string="x")


def quoted_in_a_code_block(line: str) -> Part:
    return said(f"Here:\n```python\n    {line}\n```")


@pytest.mark.parametrize("quote", [quoted_by_text, quoted_by_edit, quoted_in_a_code_block])
@pytest.mark.parametrize("tool", ["bash", "read"])
def test_quoted_output_outlives_an_unquoted_one_of_the_same_age(quote: Any, tool: str) -> None:
    line = "def compute_total(items, tax_rate):"
    text = f"{body('AAAA', 20)}\n{line}\n{body('BBBB', 20)}"
    if tool == "read":  # cat -n numbered lines, the way the read tool prints them
        text = "\n".join(f"{n:>6}\t{t}" for n, t in enumerate(text.splitlines(), 1))
    older = output(tool, text, file_path="/src/app.py", command="cat /src/app.py")
    newer = output(tool, text.replace("compute_total", "compute_other"), file_path="/src/b.py")
    history = History().user().step(older, newer).step(quote(line)).two_quiet_turns()
    marked, _ = select(history, protect=tokens(older))
    assert newer.id in ids(marked) and older.id not in ids(marked)  # (+ the edit's own output)


def test_unquoted_newest_output_is_kept_when_nothing_is_quoted() -> None:
    older, newer = bash(body("AAAA")), bash(body("BBBB"))
    history = History().user().step(older, newer).step(said("All good.")).two_quiet_turns()
    marked, _ = select(history, protect=tokens(newer))
    assert ids(marked) == {older.id}


@pytest.mark.parametrize(
    ("line", "times"),
    [("PASSED tests/test_app.py::test_ok", 2), ("ok 1 ok", 1)],
    ids=["repeated-in-output", "too-short"],
)
def test_common_or_short_lines_are_no_quote(line: str, times: int) -> None:
    older = bash("\n".join([line] * times + [body("AAAA")]))
    newer = bash(body("BBBB"))
    history = History().user().step(older, newer).step(said(f"`{line}`")).two_quiet_turns()
    marked, _ = select(history, protect=tokens(newer))
    assert ids(marked) == {older.id}


def test_a_quote_before_the_output_does_not_count() -> None:
    line = "def compute_total(items, tax_rate):"
    older = bash(f"{line}\n{body('AAAA')}")
    newer = bash(body("BBBB"))
    history = History().user().step(said(f"`{line}`"), older, newer).two_quiet_turns()
    marked, _ = select(history, protect=tokens(newer))
    assert ids(marked) == {older.id}


def test_failed_outranks_quoted_success() -> None:
    line = "def compute_total(items, tax_rate):"
    failed = bash(body("FAIL"), exit_code=1)
    quoted = bash(f"{line}\n{body('OK-1')}")
    history = History().user().step(failed, quoted).step(said(f"`{line}`")).two_quiet_turns()
    marked, _ = select(history, protect=tokens(failed))
    assert ids(marked) == {quoted.id}


# ---- the rules that did not change ---------------------------------------------------


def test_superseded_reads_still_go_first_even_when_failed_looking_or_quoted() -> None:
    line = "Error: the first read of this file, quoted later"
    first = output("read", f"{line}\n{body('READ')}", file_path="/src/app.py")
    again = output("read", body("READ"), file_path="/src/app.py")
    history = (
        History().user().step(first).step(said(f"`{line}`")).user().step(again).two_quiet_turns()
    )
    marked, total = select(history, protect=10**9)
    assert ids(marked) == {first.id}
    assert total == tokens(first)


def test_the_two_newest_turns_are_never_touched() -> None:
    old = bash(body("OLD-"))
    recent = [bash(body("NEW1")), bash(body("NEW2"), exit_code=1)]
    history = History().user().step(old).user().step(recent[0]).user().step(recent[1])
    marked, _ = select(history, protect=0)
    assert ids(marked) == {old.id}


@pytest.mark.parametrize("extra", [0, -1])
def test_prune_minimum_still_holds(extra: int) -> None:
    kept, cleared = bash(body("FAIL"), exit_code=1), bash(body("OK-1"))
    history = History().user().step(cleared, kept).two_quiet_turns()
    marked, total = select(history, protect=tokens(kept), minimum=tokens(cleared) + extra)
    if extra == 0:  # freeing exactly the minimum is not enough
        assert (marked, total) == ([], 0)
    else:
        assert ids(marked) == {cleared.id}


@pytest.mark.parametrize("stop", ["summary", "pruned"])
def test_never_past_a_summary_or_an_already_pruned_output(stop: str) -> None:
    older, newest = bash(body("OLD-")), bash(body("NEW-"))
    history = History().user().step(older)
    if stop == "summary":
        history.step(said("the summary"), summary=True)
    else:
        pruned = bash(body("DONE"))
        completed(pruned).time = ToolTime(compacted=1)
        history.step(pruned)
    history.user().step(newest).two_quiet_turns()
    marked, _ = select(history, protect=0)
    assert ids(marked) == {newest.id}


def test_errored_calls_and_protected_tools_are_never_cleared() -> None:
    errored = ToolPart(
        id=part_id(),
        session_id=SESSION,
        message_id="",
        call_id=part_id(),
        tool="bash",
        state=ToolStateError(input={"command": "make"}, error=body("ERR-")),
    )
    skill, plain = output("skill", body("SKIL")), bash(body("OK-1"))
    history = History().user().step(errored, skill, plain).two_quiet_turns()
    marked, _ = select(history, protect=0)
    assert ids(marked) == {plain.id}
