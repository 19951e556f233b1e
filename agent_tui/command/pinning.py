"""/pin and /unpin: a message or tool result restated verbatim after every compaction."""

from __future__ import annotations

from dataclasses import dataclass

from agent_tui.command.core import Call, Command, NoArgs, Result, Row, Rows, flag, word

ITEM_HELP = "msg_… (a message) or prt_… (a tool result), as --list and the export show them"


@dataclass
class PinArgs(NoArgs):
    item: str | None = word("ID", f"what to pin (default: the agent's newest message); {ITEM_HELP}")
    list: bool = flag("list the pins and their tokens")
    remove: bool = flag("unpin instead")
    exclusive = (("list", "remove"), ("list", "item"))


@dataclass
class UnpinArgs(NoArgs):
    item: str | None = word("ID", f"what to unpin (default: the only pin); {ITEM_HELP}")


async def _pin(call: Call, args: PinArgs) -> Result | None:
    from agent_tui.session.pin_changes import pin_list, set_pin

    scope = await call.scope()
    if args.list:
        return await pin_list(scope)
    if args.remove:
        return await _unpin(call, UnpinArgs(args.item))
    if args.item is None and await _choose(call, pinned_only=False):
        return None
    return await set_pin(scope, args.item, pinned=True)


async def _unpin(call: Call, args: UnpinArgs) -> Result | None:
    from agent_tui.session.pin_changes import set_pin

    if args.item is None and await _choose(call, pinned_only=True):
        return None
    return await set_pin(await call.scope(), args.item, pinned=False)


async def _choose(call: Call, *, pinned_only: bool) -> bool:
    """No id: a view that asks shows the list to pin and unpin in (True once it closed)."""
    from agent_tui.session.pin_changes import pin_choices
    from agent_tui.step.after_summary import describe

    if not call.person.asks:
        return False
    choices = await pin_choices(await call.scope())
    rows = [
        Row(item.id, describe(item), current=pinned, data=item)
        for item, pinned in choices
        if pinned or not pinned_only
    ]
    empty = "Nothing is pinned in this session." if pinned_only else "Nothing to pin yet."
    await call.person.choose(Rows("Pins", rows, empty, "pins"))
    return True


PIN = Command(
    "pin",
    "Pin a message or tool result: restated verbatim after every compaction (an id; "
    "--list: the pins)",
    _pin,
    PinArgs,
    keybind="pin",
    description="Pin a message (yours or the agent's) or a tool result: after every "
    "compaction it is restated verbatim, within compaction.pin_tokens (what does not fit "
    "is named instead).",
)
UNPIN = Command("unpin", "Unpin a message or tool result (an id)", _unpin, UnpinArgs)
