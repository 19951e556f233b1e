"""`agent-tui run --attach`: the prompt goes to a running `agent-tui serve` over ACP and the
answer is printed as `run` prints it. The path imports neither litellm, Textual, the ACP
SDK nor pydantic: it starts in a few tens of milliseconds."""
