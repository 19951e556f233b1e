"""How a client finds and authenticates to a running `agent-tui serve` (below both the
server and `run --attach`): the token file and its header check (`auth`), the server's
discovery file (`discovery`)."""
