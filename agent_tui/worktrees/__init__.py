"""Git worktrees a session works in, laid out as Claude Code lays them (`-w NAME`)."""
