"""Hooks: the person's commands run at fixed points (tools, prompts, stops, sessions,
compactions), in Claude Code's format. `settings.py` the config shape, `runner.py` runs
them, `trust.py` which projects' own hooks may run."""
