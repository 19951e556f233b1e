"""agent-tui: a terminal coding agent with context management done right."""

__version__ = "0.1.0"
