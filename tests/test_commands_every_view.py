"""Every command of the catalog, the built-in ones and a custom one, runs through each
view's adapter — the CLI's (`agent-tui NAME`, in-process), ACP's (the SDK's client) and
the app's (Pilot) — on the same session, and every view gives the same sentence or data.
A command missing from SCENARIOS fails the test: a new command is one file and its line
here."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from agent_tui.command import catalog
from agent_tui.command.core import ACP, APP, CLI, Rows
from agent_tui.tui.choice_screen import RowsScreen
from agent_tui.tui.text_screen import TextScreen
from agent_tui.tui.welcome_view import WelcomeView
from tests.acp_client import RecordingClient, acp_agent, prompt
from tests.engine_helpers import run_cli, text_of, write
from tests.fake_openai import FakeOpenAI, Text
from tests.markdown_blocks import PRE, blocks
from tests.tui_helpers import open_app, type_and_send, wait_for

CUSTOM = "review"
SCENARIOS: list[tuple[str, str]] = [
    ("help", ""),
    ("context", ""),
    ("diff", ""),
    ("summary", ""),
    ("pin", "--list"),
    ("pin", "{tool}"),
    ("unpin", "{tool}"),
    ("compact", "--dry-run"),
    ("compact", ""),
    ("uncompact", ""),
    ("sessions", ""),
    ("export", "{session} --output export.json"),
    ("trust", "--list"),
    ("relay", ""),
    ("mcp", ""),
    ("bashes", ""),  # none in this session: said so (the app and ACP; the CLI has none)
    (CUSTOM, "a.txt"),
    ("undo", ""),
    ("redo", ""),
    ("undo", ""),  # the custom command's turn stays undone: the next view starts as this one
    ("model", "openai/other"),
    ("fork", ""),
    ("new", ""),
    ("quit", ""),
]
"""(command, arguments) in the order each view runs those it offers."""
SILENT = {("compact", ""), ("new", ""), ("quit", ""), (CUSTOM, "a.txt")}
"""What they do shows in the session, not in words (checked below)."""


def offered(view: str) -> list[tuple[str, str]]:
    names = {c.name for c in catalog.offered_in(view)} | {CUSTOM}
    return [(name, args) for name, args in SCENARIOS if name in names]


def normalised(text: str, session: str, view: str) -> str:
    """What a person reads, line by line: ACP's Markdown as a client renders it (its
    paragraphs, list items, table rows and code), runs of spaces as one; without fences,
    clock times and new sessions' ids; the session's id named."""
    lines = [line.removeprefix(PRE) for line in blocks(text)] if view == ACP else text.split("\n")
    fence = re.compile(r"`{3,4}\w*")
    text = "\n".join(" ".join(x.split()) for x in lines if x.strip() and not fence.fullmatch(x))
    text = re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d)?", "TIME", text.replace(session, "SESSION"))
    return re.sub(r"ses_\w+", "ses_NEW", text)


def session_row(text: str) -> str:
    """The row of the session in a listing, without the figures that change as each view
    runs its commands (messages, context), nor ACP's dash between a title and the rest."""
    (row,) = [line.strip() for line in text.splitlines() if "SESSION" in line]
    return re.sub(r"( —)? TIME \d+ msgs ctx (\d+%|—) ", " TIME ", row)


def test_every_command_gives_the_same_in_every_view(
    configured: FakeOpenAI, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = isolated / ".agent-tui" / "commands"
    folder.mkdir(parents=True)
    (folder / f"{CUSTOM}.md").write_text("---\ndescription: Review a file\n---\nReview $1\n")
    configured.script(write(isolated / "a.txt", "one\n"), Text("written"))
    code, _, err = run_cli(capsys, "run", "write a.txt")
    assert code == 0, err
    session = re.search(r"session (ses_\w+)", err).group(1)  # type: ignore[union-attr]
    tool = next(p for p in export_parts(capsys, session) if p.startswith("prt_"))
    names = {name for name, _ in SCENARIOS}
    assert {c.name for c in catalog.builtins()} | {CUSTOM} <= names, "a command with no scenario"

    def fill(args: str) -> str:
        return args.format(tool=tool, session=session)

    said: dict[str, dict[int, str]] = {}
    prompts: dict[str, list[str]] = {}
    for view, runner in ((CLI, _cli), (ACP, _acp), (APP, _app)):
        configured.script(Text("the summary"), Text("reviewed"))
        before = len(configured.requests)
        scenarios = [(i, name, fill(args)) for i, (name, args) in enumerate(SCENARIOS)]
        scenarios = [s for s in scenarios if (s[1], SCENARIOS[s[0]][1]) in offered(view)]
        said[view] = runner(capsys, session, scenarios)
        prompts[view] = [
            text_of(m)
            for r in configured.requests[before:]
            for m in r["messages"][-1:]
            if m["role"] == "user"
        ]
    for index, (name, args) in enumerate(SCENARIOS):
        views = {v: normalised(said[v][index], session, v) for v in said if index in said[v]}
        if name == "sessions":
            views = {v: session_row(text) for v, text in views.items()}
        if (name, args) in SILENT or name == "help":
            continue
        assert len(set(views.values())) == 1, f"/{name} differs between views: {views}"
        assert next(iter(views.values())), f"/{name} said nothing"
    for view in said:  # the custom command's body, filled in, went to the model
        assert "Review a.txt" in prompts[view], (view, prompts[view])
        help_index = next(i for i, (n, _) in enumerate(SCENARIOS) if n == "help")
        if help_index in said[view]:
            listed = said[view][help_index]
            assert all(f"/{name}" in listed for name, _ in offered(view)), (view, listed)


def export_parts(capsys: pytest.CaptureFixture[str], session: str) -> list[str]:
    code, out, _ = run_cli(capsys, "export", session)
    assert code == 0
    return re.findall(r'"id": "((?:prt|msg)_\w+)"', out)


Scenarios = list[tuple[int, str, str]]


def _cli(capsys: pytest.CaptureFixture[str], session: str, scenarios: Scenarios) -> dict[int, str]:
    said = {}
    for index, name, args in scenarios:
        command = catalog.named(name) if name != CUSTOM else None
        where = ["-s", session] if command is None or command.session else []
        code, out, err = run_cli(capsys, name, *where, *args.split())
        assert code == 0, (name, out, err)
        printed = out.strip()
        if re.fullmatch(r"ses_\w+", printed):  # a session opened: its id, then the sentence
            printed = err.strip().splitlines()[-1]
        said[index] = printed if name != CUSTOM else ""
    return said


def _acp(capsys: pytest.CaptureFixture[str], session: str, scenarios: Scenarios) -> dict[int, str]:
    async def run() -> dict[int, str]:
        client = RecordingClient()
        said = {}
        async with acp_agent(client, Path.cwd()) as (conn, _):
            await conn.load_session(cwd=str(Path.cwd()), session_id=session, mcp_servers=[])
            for index, name, args in scenarios:
                before = len(client.updates)
                await conn.prompt(session_id=session, prompt=prompt(f"/{name} {args}".strip()))
                chunks = [
                    u.content.text
                    for s, u in client.updates[before:]
                    if s == session and u.session_update == "agent_message_chunk"
                ]
                said[index] = chunks[-1] if chunks and name != CUSTOM else ""
        return said

    return asyncio.run(run())


def _app(capsys: pytest.CaptureFixture[str], session: str, scenarios: Scenarios) -> dict[int, str]:
    async def run() -> dict[int, str]:
        from agent_tui.storage.db import Database

        said: dict[int, str] = {}
        app = await open_app()
        db: Database = app.db
        async with app.run_test(size=(140, 50)) as pilot:
            await app.loaded.wait()
            await app.chat.show_session(await db.get_session(session))
            for index, name, args in scenarios:
                said[index] = await _in_app(pilot, name, args)
        await db.close()
        return said

    return asyncio.run(run())


async def _in_app(pilot: object, name: str, args: str) -> str:
    from textual.pilot import Pilot

    assert isinstance(pilot, Pilot)
    app = pilot.app
    # By identity, not by count: an earlier notice can time out while this one arrives.
    seen = {note.identity for note in app._notifications}
    await type_and_send(pilot, f"/{name} {args}".strip())  # type: ignore[arg-type]

    def new_notes() -> list[Any]:
        return [note for note in app._notifications if note.identity not in seen]

    def shown() -> bool:
        return bool(new_notes()) or isinstance(app.screen, (TextScreen, RowsScreen))

    if name == "quit":
        await wait_for(pilot, lambda: app.return_code is not None or not app.is_running, "quit")  # type: ignore[attr-defined]
        return ""
    if name == "new":
        await wait_for(pilot, lambda: app.query_one(WelcomeView).display, "a new session")  # type: ignore[attr-defined]
        return ""
    if (name, args) in SILENT:  # a compaction, the custom command's turn: done when idle
        await wait_for(pilot, lambda: app.chat.status == "idle", f"/{name} done")  # type: ignore[attr-defined]
        return ""
    await wait_for(pilot, shown, f"/{name} shown")  # type: ignore[arg-type]
    screen = app.screen
    if isinstance(screen, RowsScreen):  # the rows drawn, as the other views list them
        text = Rows("", list(screen.rows), "").message()
        await pilot.press("escape")
        return text
    if isinstance(screen, TextScreen):
        text = screen.text
        await pilot.press("escape")
        return text
    return str(new_notes()[-1].message)
