"""A project is a workspace (DESIGN.md): one object per project directory holding its
config (the person's files plus as much of the project's as its trust allows), trust,
agents, sandbox policy and protected files, hooks, language servers, MCP servers and
formatters. `workspace.py` is the object; a process serving several projects holds one
per directory (engine_context.py)."""
