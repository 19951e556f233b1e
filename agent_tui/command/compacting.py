"""/compact, /uncompact and /summary: summarise the conversation now (up to a message,
previewed, reviewed), take the newest summary back, show or correct the one in force."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_tui.command.core import (
    Call,
    Command,
    Document,
    NoArgs,
    Result,
    Row,
    Rows,
    Text,
    flag,
    option,
    rest,
)
from agent_tui.ids import local_time

if TYPE_CHECKING:
    from agent_tui.session.loop import LoopResult


@dataclass
class Compacted:
    """A compaction shows itself through the engine's events: nothing more to say."""

    result: LoopResult | None

    def message(self) -> str:
        return ""


@dataclass
class CompactArgs(NoArgs):
    up_to: str | None = option(
        "MSG_ID", "the summary ends with this message; everything after it stays verbatim"
    )
    dry_run: bool = flag("print what would be summarised and kept, and send nothing")
    instructions: str = rest("INSTRUCTIONS", "extra instructions for the summary")


async def _compact(call: Call, args: CompactArgs) -> Result | None:
    from agent_tui.context.compaction_plan import preview

    session_id, engine = call.session(), call.engine
    instructions = args.instructions or None
    if args.up_to == "":  # `/compact --up-to`: the person chooses where it ends
        args.up_to = await call.person.choose(await _messages(call))
        if args.up_to is None:
            return None
    if args.dry_run:
        return await preview(await call.scope(), instructions, model=call.model, up_to=args.up_to)
    await engine.wait_idle(session_id)  # typed while the agent works: after that turn
    review = call.workspace.config.compaction.review and args.up_to is None
    if review and call.person.asks:  # a person there to read and edit it first
        if (reviewed := await _reviewed(call, instructions)) is not None:
            return reviewed
    result = await engine.compact(session_id, instructions, model=call.model, up_to=args.up_to)
    return Compacted(result)


async def _reviewed(call: Call, instructions: str | None) -> Result | None:
    """The summary written first, for the person to apply, edit or discard (None: it
    cannot be written in one call: compact as usual)."""
    from agent_tui.context import review

    scope = await call.scope()
    model = call.model or await scope.model()
    summary = await review.write(scope, model, instructions)
    if summary is None:
        return None
    text = await call.person.edit("Review the summary", summary.text, "review")
    if text is None:
        await review.discard(scope, summary)
        return Text("Summary discarded: the conversation is as it was.")
    agent = await review.keep(scope, summary, text)
    return Compacted(await call.engine.compact(scope.id, model=await scope.model(), agent=agent))


async def _messages(call: Call) -> Rows:
    """The person's messages since the summary in force, newest first."""
    from agent_tui.records import UserMessage

    messages = await call.engine.queries.since_summary(call.session())
    rows = [
        Row(m.info.id, text, local_time(m.info.created))
        for m in reversed(messages)
        if isinstance(m.info, UserMessage) and not m.info.undone and (text := m.typed_text())
    ]
    return Rows("Compact up to", rows, "None of your messages to compact up to yet.", "messages")


async def _uncompact(call: Call, args: NoArgs) -> Result | None:
    from agent_tui.context.uncompact import uncompact

    return await uncompact(await call.scope(), call.model)


@dataclass
class SummaryArgs(NoArgs):
    edit: bool = flag("edit the summary (the app's editor; $VISUAL / $EDITOR) and save it")
    set_file: str | None = option("PATH", "replace the summary's text with this file's (- stdin)")
    revert: bool = flag("go back to the text the summariser wrote")
    exclusive = (("edit", "set_file", "revert"),)


async def _summary(call: Call, args: SummaryArgs) -> Result | None:
    from agent_tui.context.summary_view import NO_COMPACTION, save_edit, summary_in_force
    from agent_tui.errors import UsageError

    if call.session_id is None:
        return Document(NO_COMPACTION, "Summary")
    scope = await call.scope()
    view = await summary_in_force(scope, call.model)
    if not (args.edit or args.set_file is not None or args.revert):
        return view
    if not view.compacted or view.summary_id is None:
        raise UsageError(NO_COMPACTION)
    text: str | None = None
    if args.set_file is not None:
        from agent_tui.editor import read_text_arg

        text = await read_text_arg(args.set_file, "--set-file")
    elif args.edit:
        text = await call.person.edit("Edit the summary", view.text, view.original)
        if text is None:
            return Text("Edit cancelled: nothing saved.")
    return await save_edit(scope, view.summary_id, text)


COMPACT = Command(
    "compact",
    "Summarise the conversation now (extra instructions; --dry-run to preview)",
    _compact,
    CompactArgs,
    aliases=("summarize",),
    keybind="compact",
    model=True,
    stream=True,
)
UNCOMPACT = Command(
    "uncompact",
    "Take back the newest compaction (the history before it returns)",
    _uncompact,
    keybind="uncompact",
    model=True,
)
SUMMARY = Command(
    "summary",
    "Show the summary in force: what was restated after it and what was kept",
    _summary,
    SummaryArgs,
    description="Show the summary the model sees in place of the compacted conversation: "
    "what was restated after it (your words, the todo list, the plan) and what was kept "
    "verbatim. --edit, --set-file or --revert change the text the model sees from its "
    "next step on; the summariser's text stays in the session. An edit changes the "
    "prompt once: the part before the summary stays cached, from the summary on it is "
    "written to the cache again.",
)
