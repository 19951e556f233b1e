"""Command-line entry: argument parsing and dispatch. Errors are printed, never raised."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from agent_tui import __version__, procs
from agent_tui.command.table import named
from agent_tui.errors import AgentTuiError

if TYPE_CHECKING:
    from agent_tui.config import Config

EXAMPLES = """\
examples:
  agent-tui                                  open the app in this directory
  agent-tui run "add a --verbose flag to cli.py and run the tests"
  agent-tui run --continue "now update the README"
  agent-tui run --format json "..."          one JSON event per line
  agent-tui run --agent plan "..."          investigate and print a plan; change nothing
  agent-tui sessions --json
  agent-tui export SESSION_ID > session.json
  agent-tui compact --continue "keep the list of failing tests"
  agent-tui compact --dry-run --continue
  agent-tui compact --continue --up-to msg_…  summarise up to that message, keep the rest
  agent-tui uncompact --continue
  agent-tui fork --continue [msg_…]          a new session with the history up to a message
  agent-tui pin --continue                   pin the agent's newest reply (kept through compaction)
  agent-tui pin --continue --list            the pins, and the newest ids you can pin
  agent-tui pin --continue --remove prt_…    unpin
  agent-tui summary --continue               the summary in force, what was restated and kept
  agent-tui summary --continue --edit        correct it in $EDITOR (--set-file PATH, - for stdin)
  agent-tui undo --continue                  restore the files of the newest turn
  agent-tui redo --continue
  agent-tui context
  agent-tui acp                              speak ACP on stdin/stdout (for editors)
  agent-tui serve                            keep a warm engine; ACP over a WebSocket
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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="agent-tui",
        description="A terminal coding agent.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agent-tui {__version__}")
    _session_args(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = commands.add_parser("run", help="run one prompt headless and print the answer")
    _session_args(run)
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

    engine = commands.add_parser("engine", help=named("engine").help)
    engine.add_argument(
        "--stop", action="store_true", help="stop them (the next command starts one)"
    )
    engine.add_argument("--json", action="store_true", help="print JSON")

    trust = commands.add_parser("trust", help=named("trust").help)
    trust.add_argument("directory", nargs="?", help="the project (default: this directory)")
    trust.add_argument("--list", action="store_true", help="the projects you trust")
    trust.add_argument("--revoke", action="store_true", help="forget this project's trust")
    trust.add_argument("--yes", action="store_true", help="trust without asking")

    sessions = commands.add_parser("sessions", help=named("sessions").help)
    sessions.add_argument("--json", action="store_true", help="print JSON")
    sessions.add_argument("--here", action="store_true", help="only this directory's sessions")

    export = commands.add_parser("export", help=named("export").help)
    export.add_argument("session_id", metavar="SESSION_ID")

    compact = commands.add_parser("compact", help=named("compact").help)
    _session_args(compact)
    compact.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be summarised and kept, and send nothing",
    )
    compact.add_argument(
        "--up-to",
        metavar="MSG_ID",
        help="the summary ends with this message; everything after it stays verbatim",
    )
    compact.add_argument("instructions", nargs="*", help="extra instructions for the summary")

    fork = commands.add_parser("fork", help=named("fork").help)
    _session_args(fork, model=False)
    fork.add_argument(
        "message_id", nargs="?", metavar="MSG_ID", help="the last message copied (default: all)"
    )

    uncompact = commands.add_parser("uncompact", help=named("uncompact").help)
    _session_args(uncompact)

    pin = commands.add_parser(
        "pin",
        help=named("pin").help,
        description="Pin a message (yours or the agent's) or a tool result: after every "
        "compaction it is restated verbatim, within compaction.pin_tokens (what does not fit "
        "is named instead). Ids: msg_… (a message) or prt_… (a tool result), as --list, the "
        "app's /pin list and `agent-tui export` show them.",
    )
    _session_args(pin, model=False)
    pin.add_argument(
        "item",
        nargs="?",
        metavar="MESSAGE_OR_PART_ID",
        help="what to pin (default: the agent's newest message; with --remove: the only pin)",
    )
    pin_mode = pin.add_mutually_exclusive_group()
    pin_mode.add_argument("--list", action="store_true", help="list the pins and their tokens")
    pin_mode.add_argument("--remove", action="store_true", help="unpin instead")
    summary = commands.add_parser(
        "summary",
        help=named("summary").help,
        description="Show the summary the model sees in place of the compacted conversation: "
        "what was restated after it (your words, the todo list, the plan) and what was kept "
        "verbatim. --edit, --set-file or --revert change the text the model sees from its "
        "next step on; the summariser's text stays in the session. An edit changes the "
        "prompt once: the part before the summary stays cached, from the summary on it is "
        "written to the cache again.",
    )
    _session_args(summary, model=False)
    summary.add_argument("--json", action="store_true", help="print JSON")
    change = summary.add_mutually_exclusive_group()
    change.add_argument(
        "--edit", action="store_true", help="edit the summary in $VISUAL / $EDITOR and save it"
    )
    change.add_argument(
        "--set-file",
        metavar="PATH",
        help="replace the summary's text with this file's (- reads stdin)",
    )
    change.add_argument(
        "--revert", action="store_true", help="go back to the text the summariser wrote"
    )

    for name in ("undo", "redo"):
        turn = commands.add_parser(name, help=named(name).help)
        _session_args(turn, model=False)
        turn.add_argument(
            "--force",
            action="store_true",
            help="overwrite files you changed since the turn (refused otherwise)",
        )

    commands.add_parser(
        "acp",
        help="run as an Agent Client Protocol agent on stdin/stdout (Zed, JetBrains, Neovim…)",
    )

    serve = commands.add_parser(
        "serve",
        help="keep one warm engine and speak ACP over a WebSocket (for run --attach, editors)",
        description="Serve the Agent Client Protocol over a WebSocket at ws://HOST:PORT/acp, "
        "with one warm engine. Every request needs the token (Authorization: Bearer TOKEN), "
        "generated on first start into the data dir's server-token file (0600).",
    )
    serve.add_argument("--host", help="address to bind (default: server.host, 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, help="port (default: server.port, 4097; 0: any free port)"
    )
    serve.add_argument(
        "--token", help="the token clients must send (default: the data dir's server-token)"
    )

    context = commands.add_parser("context", help=named("context").help)
    _session_args(context)  # as every session command: -c, -s ID, -m (counted for it)
    return parser


def _preflight(args: argparse.Namespace) -> Config:
    """What a command that calls the model can tell without a provider: a broken config,
    or no provider at all (no key, no local server), raised before litellm's import
    starts (it takes seconds, and its thread starves everything else of the GIL)."""
    import asyncio

    from agent_tui.config import load_config
    from agent_tui.provider.auth import check_setup
    from agent_tui.provider.defaults import choose_model

    config = load_config({"model": args.model} if getattr(args, "model", None) else None)
    asyncio.run(choose_model(config, probe=True))
    fresh = args.command == "run" and not (args.session or args.cont or args.agent)
    if fresh:  # a continued session or an agent may have a model of its own
        check_setup(config.model, config)
    return config


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    procs.reap_in_background()  # what a killed agent-tui left running (procs.py)
    restore_signals = procs.install_exit_signals()
    try:
        if args.command is None:
            from agent_tui.tui.launch import launch

            return launch(args)
        if args.command == "acp":
            from agent_tui.acp.main import serve_stdio

            return serve_stdio()
        if args.command == "serve":
            from agent_tui.server.main import serve

            return serve(args.host, args.port, args.token)
        if args.command == "engine":
            from agent_tui.provider.engine_command import engine_command

            return engine_command(args)
        if args.command == "trust":
            from agent_tui.trust_command import trust_command

            return trust_command(args)
        if args.command == "run" and args.trust:  # before attaching: the server reads it too
            from pathlib import Path

            from agent_tui.config import load_config

            load_config(directory=Path.cwd(), trust=True)
        if args.command == "run":
            from agent_tui.attach.target import attach_target

            target = attach_target(args)
            if target is not None:
                from agent_tui.attach.run import run_attached

                code = run_attached(args, target)
                if code is not None:
                    return code
        config = None
        from agent_tui.provider import remote

        if args.command in remote.MODEL_COMMANDS:
            # litellm's import (seconds) starts now, on the other core, in a process of
            # its own (provider/worker.py): nothing here waits for it, nor shares a GIL.
            in_process = remote.start() is None
            config = _preflight(args)  # what needs no provider is answered before litellm
            if in_process:  # its import thread would starve the preflight of the GIL
                from agent_tui.provider.loader import preload_in_background

                preload_in_background(tokenizer=False)  # before the engine's own imports
        from agent_tui import commands

        return commands.dispatch(args, config)
    except AgentTuiError as exc:
        print(f"agent-tui: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("\nagent-tui: interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `agent-tui export ID | head`: the reader has what it wanted
        from agent_tui.headless import READER_GONE_EXIT, silence

        silence(sys.stdout)
        silence(sys.stderr)
        return READER_GONE_EXIT
    finally:
        if "agent_tui.provider.remote" in sys.modules:
            sys.modules["agent_tui.provider.remote"].stop()
        procs.shutdown()  # nothing a tool started outlives agent-tui
        restore_signals()
