"""A Claude Code project as people have them, written from Claude Code's documentation
and left unchanged (issue 43): `.claude/settings.json` with hooks (a jq command logger,
an `rm -rf` blocker, a formatter after edits, a SessionStart `compact` hook, a Stop
hook) and permission rules, a command with `!` lines and `$ARGUMENTS`, a subagent, a
skill and `.mcp.json` with a stdio server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.test_mcp import raw_server

BLOCKER = """import json, sys
command = json.load(sys.stdin).get("tool_input", {}).get("command", "")
if "rm -rf" in command:
    print("Blocked: rm -rf is not allowed here", file=sys.stderr)
    sys.exit(2)
"""
COMMAND = """---
description: Review the working tree
argument-hint: [focus]
allowed-tools: Bash(git status:*), Bash(echo:*)
---
## Context
- Files: !`echo FILES-SEEN`

Review the change, focusing on $ARGUMENTS.
"""
AGENT = """---
name: code-reviewer
description: Reviews code for bugs. Use after a change.
tools: Read, Grep, Glob
model: inherit
---
You review code and cite path:line.
"""
SKILL = """---
name: release-notes
description: Writes release notes from the git log
---
Run scripts/notes.sh from this skill's folder and summarise.
"""


def _entry(matcher: str, command: str) -> dict[str, object]:
    return {"matcher": matcher, "hooks": [{"type": "command", "command": command}]}


def claude_project(project: Path, log: Path) -> Path:
    """The project's `.claude/` and `.mcp.json`; hooks log to `log`. Returns `log`."""
    claude = project / ".claude"
    (claude / "hooks").mkdir(parents=True)
    (claude / "hooks" / "block_rm.py").write_text(BLOCKER)
    logger = f"jq -c '{{tool: .tool_name, command: .tool_input.command}}' >> {log}"
    blocker = f'{sys.executable} "$CLAUDE_PROJECT_DIR"/.claude/hooks/block_rm.py'
    formatter = "jq -r '.tool_input.file_path' | xargs sed -i 's/[[:space:]]*$//'"
    reminder = "echo 'Reminder: the TODO.md list is the plan'"
    stopped = f"jq -c '{{stop: .hook_event_name, transcript: .transcript_path}}' >> {log}"
    hooks = {
        "PreToolUse": [_entry("Bash", logger), _entry("Bash", blocker)],
        "PostToolUse": [_entry("Edit|Write", formatter)],
        "SessionStart": [_entry("compact", reminder)],
        "Stop": [_entry("", stopped)],
    }
    allow = ["Bash(echo:*)", "Bash(sh .claude/skills/*)", "Edit", "Write", "mcp__srv__echo"]
    permissions = {"allow": allow, "deny": ["Read(./.env)"]}
    settings = {"hooks": hooks, "permissions": permissions, "model": "claude-opus-4-6"}
    (claude / "settings.json").write_text(json.dumps(settings, indent=2))
    (claude / "commands").mkdir()
    (claude / "commands" / "review.md").write_text(COMMAND)
    (claude / "agents").mkdir()
    (claude / "agents" / "reviewer.md").write_text(AGENT)
    (claude / "skills" / "release-notes" / "scripts").mkdir(parents=True)
    (claude / "skills" / "release-notes" / "SKILL.md").write_text(SKILL)
    script = claude / "skills" / "release-notes" / "scripts" / "notes.sh"
    script.write_text("echo NOTES-FROM-THE-SKILL-SCRIPT\n")
    server = {"command": sys.executable, "args": [str(raw_server(project))]}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"srv": server}}))
    (project / "CLAUDE.md").write_text("Always answer in English.")
    (project / ".env").write_text("API_TOKEN=from-the-env-file")
    return log
