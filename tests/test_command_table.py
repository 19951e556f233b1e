"""One catalog of commands (command/catalog.py): every command appears, with the same
description, in each view that offers it — the app's slash commands, palette and /help,
the CLI's subcommands, ACP's available_commands_update — and a custom Markdown command
does too."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agent_tui.cli import main
from agent_tui.cli.parser import build_parser
from agent_tui.cli.start import cli_commands
from agent_tui.command import catalog
from agent_tui.command.core import ACP, APP, CLI, args_of
from agent_tui.command.reports import help_text
from agent_tui.tui.command_provider import AgentCommands
from tests.acp_client import RecordingClient, acp_agent
from tests.fake_openai import FakeOpenAI
from tests.tui_helpers import open_app, wait_for

CUSTOM = ("review", "Review a file for bugs")


def write_custom(project: Path) -> None:
    folder = project / ".agent-tui" / "commands"
    folder.mkdir(parents=True)
    name, description = CUSTOM
    (folder / f"{name}.md").write_text(f"---\ndescription: {description}\n---\nReview $1\n")


def expected(view: str) -> dict[str, str]:
    found = {c.name: c.help for c in catalog.offered_in(view)}
    found[CUSTOM[0]] = CUSTOM[1]
    return found


def test_every_view_offers_commands():
    for view in (APP, ACP, CLI):
        assert {"compact", "uncompact", "summary", "undo", "redo", "pin", "context"} <= set(
            expected(view)
        ), view


def test_the_cli_subcommands_carry_the_descriptions(isolated: Path) -> None:
    write_custom(isolated)
    parser = build_parser(cli_commands())
    (subcommands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in subcommands._choices_actions}
    assert {name: helps.get(name) for name in expected(CLI)} == expected(CLI)


def test_every_subcommands_help_is_made(isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`agent-tui NAME --help` of every command, a custom one too: its usage and arguments."""
    write_custom(isolated)
    for command in cli_commands():
        with pytest.raises(SystemExit) as done:
            main([command.name, "--help"])
        out = capsys.readouterr().out
        assert done.value.code == 0 and out.startswith(f"usage: agent-tui {command.name}"), out
        for arg in args_of(command.args):  # each argument, as its model names it
            assert (arg.option if arg.kind in ("flag", "option") else arg.metavar) in out


async def test_the_apps_slash_commands_palette_and_help_carry_them(
    configured: FakeOpenAI, isolated: Path
) -> None:
    write_custom(isolated)
    app = await open_app()
    async with app.run_test() as pilot:
        await app.loaded.wait()
        await wait_for(pilot, lambda: CUSTOM[0] in {c.name for c in app.prompt.commands})
        app.prompt.load_text("/")
        completed = {c.name: c.help for c in app.prompt.completions()}
        assert completed == expected(APP)
        palette = AgentCommands(app.screen)
        hits = {str(hit.display).split()[0]: hit.help async for hit in palette.discover()}
        assert hits == {f"/{name}": help for name, help in expected(APP).items()}
        shown = help_text(app.prompt.commands, app.config.keybinds)
        for name, help in expected(APP).items():
            assert f"/{name}" in shown and help in shown, name
    await app.db.close()


async def test_acp_advertises_them(configured: FakeOpenAI, isolated: Path) -> None:
    write_custom(isolated)
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        sid = (await conn.new_session(cwd=str(isolated), mcp_servers=[])).session_id
        (update, *_) = await client.wait_for(lambda: client.of(sid, "available_commands_update"))
    advertised = {c.name: c.description for c in update.available_commands}
    assert advertised == expected(ACP)


def test_the_app_and_run_parse_without_reading_the_catalog(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The app's launch does not import every command nor read this directory's custom
    ones to parse its options (the app reads them after its first frame); a command of
    the catalog, a custom one, `--help` and a mistake are parsed with them all."""
    import subprocess
    import sys

    write_custom(isolated)
    probe = (
        "import sys\n"
        "from agent_tui.cli.start import _parse\n"
        "for argv in (['--continue'], ['-m', 'x/y', '-s', 'ses_1'], ['run', 'hi'], ['acp']):\n"
        "    args, commands = _parse(argv)\n"
        "    print(args.command, len(commands), 'agent_tui.command.compacting' in sys.modules)\n"
        "args, commands = _parse(['review', 'a.py'])\n"
        "print(args.command, 'review' in commands, 'compact' in commands)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=isolated
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "None 0 False",
        "None 0 False",
        "run 0 False",
        "acp 0 False",
        "review True True",
    ]
    with pytest.raises(SystemExit):
        main(["--bogus"])
    err = capsys.readouterr().err
    assert "unrecognized arguments: --bogus" in err
    assert err.startswith("usage: agent-tui") and "Traceback" not in err
