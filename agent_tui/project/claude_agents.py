"""Claude Code's subagents, read as they are (issue 43): `.claude/agents/NAME.md` in a
project and `~/.claude/agents/NAME.md`, whose front matter gives `name`, `description`,
`tools` (Claude Code's names, comma-separated or a YAML list; none: every tool, as in
Claude Code) and `model` (`sonnet`, `opus`, `haiku`, `inherit` or a model id), the body
the prompt. They become agent-tui subagents in OpenCode's shape (project/agents.py loads
them below agent-tui's own folders of the same level)."""

from __future__ import annotations

from typing import Any

from agent_tui.config.claude_permissions import our_tools
from agent_tui.project.front_matter import text_value, words

KEPT = ("description", "prompt", "color", "isolation")
"""Keys read as they are; Claude Code's others (`permissionMode`, `skills`, ...) are not."""
MODELS = {"sonnet": "claude-sonnet-4-6", "opus": "claude-opus-4-6", "haiku": "claude-haiku-4-5"}
"""Claude Code's model aliases, on the Anthropic provider."""
ANTHROPIC = "anthropic/"


def agent_data(data: dict[str, Any], main_model: str) -> tuple[dict[str, Any], str | None]:
    """(agent-tui's agent keys, a note when something of it could not be kept)."""
    found = {key: data[key] for key in KEPT if key in data}
    if "description" in data:  # a folded `>` one ends with a newline
        found["description"] = text_value(data["description"])
    found["mode"] = "subagent"
    tools = data.get("tools")
    if tools is not None:  # `Read, Grep` or [Read, Grep]
        found["tools"] = sorted({ours for name in words(tools) for ours in our_tools(name)})
    else:
        found["tools"] = {"*": True}  # Claude Code: no `tools` inherits every tool
    model, note = alias_model(data.get("model"), main_model)
    if model is not None:
        found["model"] = model
    return found, note


def alias_model(value: Any, main_model: str) -> tuple[str | None, str | None]:
    """An agent's or a command's `model`, as (the model, a note when it is not used):
    Claude Code's aliases are Anthropic models, used when the main model is Anthropic's
    too (its key is set up); otherwise the session's model is."""
    if not isinstance(value, str) or value in ("", "inherit"):
        return None, None
    alias = MODELS.get(value.lower())
    if alias is None:
        return value, None  # a model id
    if main_model.startswith(ANTHROPIC):
        return ANTHROPIC + alias, None
    return (
        None,
        f"model {value!r} is Claude Code's name of an Anthropic model; the session's is used",
    )
