"""The CLI: its arguments made from the commands, `run`, and the adapter that runs a
command at a terminal."""

from agent_tui.cli.start import main

__all__ = ["main"]
