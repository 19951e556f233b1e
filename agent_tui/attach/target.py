"""Where `run` sends its prompt (`--attach`, `run.attach`): decided before anything of
the attach client (its WebSocket, its renderers) is imported, which a run here never
needs."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from agent_tui.config.layers import check_attach, raw_value
from agent_tui.server_link import discovery, server_token


@dataclass
class Target:
    url: str
    token: str | None
    auto: bool = False
    """Found through server.json: if it cannot be reached, `run` runs here instead."""


def attach_target(args: argparse.Namespace) -> Target | None:
    """Where to send the prompt: `--attach`, else `run.attach` of the config; None: here."""
    if args.attach is None:
        choice = check_attach(raw_value("run", "attach") or "off", "run.attach in the config")
    else:
        choice = check_attach(args.attach, "run --attach")
    if choice == "off":
        return None
    token = args.token or os.environ.get(server_token.TOKEN_ENV)
    if choice == "auto":
        running = discovery.running_server()
        return None if running is None else Target(running.url, token or running.token, auto=True)
    return Target(choice, token)
