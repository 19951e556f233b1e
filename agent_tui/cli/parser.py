"""The CLI's arguments: its own subcommands (`run`, `acp`, `serve`) and one subcommand per
command of the catalog, made from its argument model (command/core.py), the custom
commands of this directory included."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from agent_tui import __version__
from agent_tui.command.core import Command, args_of

EXAMPLES = """\
examples:
  agent-tui                                  open the app in this directory
  agent-tui run "add a --verbose flag to cli.py and run the tests"
  agent-tui run --continue "now update the README"
  agent-tui run --format json "..."          one JSON event per line
  agent-tui run --agent plan "..."          investigate and print a plan; change nothing
  agent-tui -w feature-auth                  the app in a new worktree (.claude/worktrees/)
  agent-tui run -w fix-123 "..."             a run in a new worktree, kept if it changed files
  agent-tui sessions --json
  agent-tui export SESSION_ID > session.json
  agent-tui compact --continue "keep the list of failing tests"
  agent-tui compact --dry-run --continue
  agent-tui compact --continue --up-to msg_…  summarise up to that message, keep the rest
  agent-tui uncompact --continue
  agent-tui fork --continue [msg_…]          a new session with the history up to a message
  agent-tui pin --continue                   pin the agent's newest reply (kept through compaction)
  agent-tui pin --continue --list            the pins, and the newest ids you can pin
  agent-tui unpin --continue prt_…           unpin
  agent-tui summary --continue               the summary in force, what was restated and kept
  agent-tui summary --continue --edit        correct it in $EDITOR (--set-file PATH, - for stdin)
  agent-tui undo --continue                  restore the files of the newest turn
  agent-tui redo --continue
  agent-tui context
  agent-tui acp                              speak ACP on stdin/stdout (for editors)
  agent-tui serve                            keep a warm server; ACP over a WebSocket
  agent-tui run --attach http://127.0.0.1:4097 "..."   run through it
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\nRun '{self.prog} --help' for usage.\n")


def _session_args(parser: argparse.ArgumentParser, *, model: bool = True) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-c",
        "--continue",
        dest="cont",
        action="store_true",
        help="continue the latest session in this directory",
    )
    group.add_argument("-s", "--session", metavar="ID", help="continue the session with this id")
    if model:
        parser.add_argument(
            "-m", "--model", metavar="MODEL", help="litellm model id, e.g. openai/gpt-5.1"
        )


def _worktree_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-w",
        "--worktree",
        nargs="?",
        const="",
        metavar="NAME",
        help="start in a new git worktree, .claude/worktrees/NAME on the branch worktree-NAME "
        "(a generated name without one); removed on leaving when nothing changed",
    )


def _add_command(commands: argparse._SubParsersAction, command: Command) -> None:
    parser = commands.add_parser(
        command.name,
        aliases=list(command.aliases),
        help=command.help,
        description=command.description or command.help,
        epilog=f"arguments: {command.hint}" if command.hint else None,
    )
    parser.set_defaults(command=command.name)
    if command.session:
        _session_args(parser, model=command.model)
    grouped = _grouped(command)
    group = parser.add_mutually_exclusive_group() if grouped else parser
    for arg in args_of(command.args):
        target = group if arg.name in grouped else parser
        if arg.kind == "flag":
            target.add_argument(arg.option, action="store_true", help=arg.help)
        elif arg.kind == "option":
            spellings = [f"-{arg.short}", arg.option] if arg.short else [arg.option]
            target.add_argument(*spellings, metavar=arg.metavar, help=arg.help)
        else:
            nargs = "*" if arg.kind == "rest" else "?"
            target.add_argument(arg.name, nargs=nargs, metavar=arg.metavar, help=arg.help)
    parser.add_argument("--json", action="store_true", help="print what it gives as JSON")


def _grouped(command: Command) -> list[str]:
    """Options of its first exclusive group that are options (argparse groups no words)."""
    groups = command.args.exclusive
    kinds = {a.name: a.kind for a in args_of(command.args)}
    return [n for n in (groups[0] if groups else ()) if kinds[n] in ("flag", "option")]


def _run_args(run: argparse.ArgumentParser) -> None:
    _session_args(run)
    _worktree_arg(run)
    run.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="text (default) or one JSON event per line",
    )
    run.add_argument(
        "--agent",
        metavar="NAME",
        help="the primary agent: build (default), plan (read-only; prints the plan), or "
        "one defined in config or .agent-tui/agents/",
    )
    run.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="TOOL",
        help="allow a tool set to 'ask' (e.g. --allow bash); repeatable",
    )
    run.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="run a command the sandbox blocked again outside it (the result says so)",
    )
    run.add_argument(
        "--trust",
        action="store_true",
        help="trust this project (its agent-tui.json and .agent-tui/) from now on: its hooks, "
        "servers, providers and permissions apply",
    )
    run.add_argument(
        "--attach",
        metavar="URL",
        help="send the prompt to a running `agent-tui serve` (URL, or auto: the one on this "
        "machine if any; off: run here); default: run.attach in the config",
    )
    run.add_argument(
        "--token",
        metavar="TOKEN",
        help="the server's token for --attach (default: $AGENT_TUI_SERVER_TOKEN, else the "
        "token file of this machine's server)",
    )
    run.add_argument("message", nargs="+", help="the prompt")


def _serve_args(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", help="address to bind (default: server.host, 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, help="port (default: server.port, 4097; 0: any free port)"
    )
    serve.add_argument(
        "--token", help="the token clients must send (default: the data dir's server-token)"
    )


def build_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="agent-tui",
        description="A terminal coding agent.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agent-tui {__version__}")
    _session_args(parser)
    _worktree_arg(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _run_args(sub.add_parser("run", help="run one prompt headless and print the answer"))
    sub.add_parser(
        "acp",
        help="run as an Agent Client Protocol agent on stdin/stdout (Zed, JetBrains, Neovim…)",
    )
    _serve_args(
        sub.add_parser(
            "serve",
            help="keep one warm server and speak ACP over a WebSocket (for run --attach, editors)",
            description="Serve the Agent Client Protocol over a WebSocket at ws://HOST:PORT/acp, "
            "kept warm. Every request needs the token (Authorization: Bearer TOKEN), "
            "generated on first start into the data dir's server-token file (0600).",
        )
    )
    for command in commands:
        _add_command(sub, command)
    return parser
