"""`run` started from a process that has imported agent-tui already (the warm engine's
companion): the command's own process forwards its arguments, working directory,
environment and terminal, and a child forked from the prefork runs it (docs/engine.md)."""
