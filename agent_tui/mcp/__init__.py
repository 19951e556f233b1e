"""MCP servers (Model Context Protocol): their tools join the engine's tool registry, so
permissions, redaction, truncation and pruning apply to them unchanged.

Absolute imports of the SDK (`import mcp`) inside this package reach the installed `mcp`
distribution, not this package (`agent_tui.mcp`)."""
