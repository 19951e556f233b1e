"""/trust: a project's trust and what waits for it; granted after the person's yes; the
trusted projects listed; one revoked."""

from __future__ import annotations

from dataclasses import dataclass

from agent_tui.command.core import (
    APP,
    CLI,
    Call,
    Command,
    Document,
    NoArgs,
    Result,
    Text,
    flag,
    word,
)
from agent_tui.errors import UsageError


@dataclass
class Declined(Text):
    exit_code = 1


@dataclass
class TrustArgs(NoArgs):
    directory: str | None = word("DIR", "the project (default: this directory)")
    list: bool = flag("the projects you trust")
    revoke: bool = flag("forget this project's trust")
    yes: bool = flag("trust without asking")
    exclusive = (("list", "revoke"),)


async def _trust(call: Call, args: TrustArgs) -> Result:
    from agent_tui.trust import store
    from agent_tui.workspace.describe import describe, report

    if args.list:
        return Document(_listed(store.recorded()))
    directory = (call.directory / (args.directory or ".")).resolve()
    if not directory.is_dir():
        raise UsageError(f"trust: {directory} is not a folder.")
    if args.revoke:
        gone = store.revoke(directory)
        return Text(f"{directory}: " + ("trust revoked." if gone else "was not trusted."))
    workspace = call.engine.workspace(directory)
    if not workspace.asks_trust and not workspace.unnamed_secrets():
        return Document(report(workspace.project))
    call.engine.trust_asked(directory)  # not again at the first prompt
    question = "Trust this project?"
    if not (args.yes or await call.person.confirm(question, describe(workspace), "Trust", "--yes")):
        return Declined("Not trusted: only the safe part of this project's config applies.")
    await call.engine.trust_project(directory)
    return Text(f"Trusted: {directory} (asked again when one of its files changes).")


def _listed(recorded: dict[str, dict[str, object]]) -> str:
    if not recorded:
        return "No project is trusted (your own config's trusted_projects aside)."
    return "\n".join(
        f"{directory}  (since {record.get('at', '?')}, {len(record.get('files') or {})} files)"  # type: ignore[arg-type]
        for directory, record in sorted(recorded.items())
    )


TRUST = Command(
    "trust",
    "Trust this project: its whole config applies (--list: the trusted projects; "
    "--revoke: forget one)",
    _trust,
    TrustArgs,
    session=False,
    views=frozenset({APP, CLI}),
)
