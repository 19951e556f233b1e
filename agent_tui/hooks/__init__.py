"""Hooks: the person's commands run at fixed points (tools, prompts, stops, sessions,
compactions), in Claude Code's format. `hook_config.py` the config shape, `runner.py`
runs them; a project's own run once it is trusted (trust/)."""
