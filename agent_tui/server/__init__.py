"""`agent-tui serve`: the ACP agent of agent_tui/acp/ over a WebSocket, behind a token.
Only transport and auth live here; the protocol is AcpAgent's, the work the engine's."""
