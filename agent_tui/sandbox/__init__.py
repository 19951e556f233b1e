"""The OS sandbox of commands the model asks for (bash, `!command`, local MCP servers):
bubblewrap on Linux. `Sandbox.wrap` is the only place a sandbox command line is built."""

from __future__ import annotations

from agent_tui.sandbox.explain import background_note, created_config_note, explain
from agent_tui.sandbox.policy import SandboxPolicy
from agent_tui.sandbox.sandbox import Sandbox
from agent_tui.sandbox.session_network import SessionNetwork
from agent_tui.sandbox.support import probe

__all__ = [
    "Sandbox",
    "SandboxPolicy",
    "SessionNetwork",
    "background_note",
    "created_config_note",
    "explain",
    "probe",
]
