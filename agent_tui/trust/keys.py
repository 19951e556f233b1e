"""Which keys of a project's own config apply before the person trusts the project.

An allowlist, not a denylist: a key applies untrusted only if it is named here, so every
key added to the config later waits for trust until someone decides it is safe. A key is
safe when it only tunes: it cannot run a program, widen what a command or a tool may do,
or send data or credentials anywhere (docs/security.md, "Repository trust")."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_tui import paths

ALL = True
"""The whole subtree is safe."""


def only_off(value: Any) -> bool:
    """Safe only to switch off (lsp.enabled: a project may not start your language servers
    when you turned them off)."""
    return value is False


SAFE: dict[str, Any] = {
    "compaction": {
        "auto": ALL,
        "threshold": ALL,
        "prune": ALL,
        "prune_protect": ALL,
        "prune_minimum": ALL,
        "protected_tools": ALL,
        "output_token_max": ALL,
        "reserved": ALL,
        "tail_tokens": ALL,
        "preserve_recent_tokens": ALL,
        "user_tokens": ALL,
        "pin_tokens": ALL,
        "budget_reminder": ALL,
        "prepare_at": ALL,
        "prepare_earliest": ALL,
        "prepare_margin": ALL,
        "prepare_max_age": ALL,
        "review": ALL,
        # prompt (a file path: any file of yours sent to the provider) and model wait.
    },
    "truncation": {"max_lines": ALL, "max_bytes": ALL, "max_saved_bytes": ALL},
    "images": ALL,
    "keybinds": ALL,
    "retry": ALL,
    "max_steps": ALL,
    "snapshot": ALL,
    "models": {"*": {"limit": ALL, "cache": ALL, "vision": ALL}},
    "lsp": {"enabled": only_off, "timeout": ALL, "warnings": ALL, "max_diagnostics": ALL},
}
"""Key paths that apply from an untrusted project; `"*"` stands for any one key."""

AGENT_SAFE = frozenset(
    {"description", "mode", "prompt", "max_steps", "steps", "maxSteps", "temperature", "hidden",
     "color"}
)  # fmt: skip
"""An untrusted project's agent keeps these; its tools, model, reasoning wait, and of its
permission only what denies applies."""

REASONS: dict[str, str] = {
    "hooks": "runs commands (in the sandbox, with the project writable)",
    "lsp": "starts language servers (in the sandbox)",
    "mcp": "starts MCP servers or connects to them",
    "format": "runs formatters",
    "sandbox": "changes the sandbox",
    "shell": "changes what commands see of your environment",
    "provider": "changes where requests (and your keys) go",
    "permission": "allows tools without asking",
    "agent": "adds agents with more tools or permissions, or another model",
    "agents": "more tools or permissions for an agent, or its model",
    "commands": "a command's model (where your work goes) or tools it allows",
    "run": "sends prompts to a server",
    "server": "changes where `serve` listens",
    "model": "chooses the model (and the provider that is sent your work)",
    "small_model": "chooses a model (and the provider that is sent your work)",
    "models": "sets a model's reasoning (what it costs you)",
    "instructions": "sends a URL or a file outside the project to the model",
    "compaction": "reads a file or chooses the model for summaries",
    "truncation": "changes how long your saved outputs are kept",
    "trust_project_hooks": "only your own config can trust projects",
    "trusted_projects": "only your own config can trust projects",
}
"""Why a top-level key waits, said to the person."""


@dataclass
class Split:
    """A project's config: what applies now, and the key paths that wait for trust."""

    safe: dict[str, Any] = field(default_factory=dict)
    waiting: list[str] = field(default_factory=list)


def split(data: dict[str, Any], directory: Path) -> Split:
    """The part of a project's config that may apply untrusted."""
    result = Split()
    for key, value in data.items():
        if key in NARROWING:
            safe, waiting = NARROWING[key](value, directory)
            if safe:
                result.safe[key] = safe
            result.waiting += [f"{key}.{name}" if name else key for name in waiting]
            continue
        safe_value, waiting = _allowed(value, SAFE.get(key), key)
        if safe_value is not None:
            result.safe[key] = safe_value
        result.waiting += waiting
    return result


def _allowed(value: Any, rule: Any, path: str) -> tuple[Any, list[str]]:
    """(what of `value` the rule allows or None, the key paths it leaves out)."""
    if rule is ALL:
        return value, []
    if callable(rule):
        return (value, []) if rule(value) else (None, [path])
    if rule is None and isinstance(value, dict) and value and "." not in path:
        return None, [f"{path}.{key}" for key in value]  # each key named: sandbox.network
    if not isinstance(rule, dict) or not isinstance(value, dict):
        return None, [path]
    safe: dict[str, Any] = {}
    waiting: list[str] = []
    for key, inner in value.items():
        sub = rule.get(key, rule.get("*"))
        kept, left = _allowed(inner, sub, f"{path}.{key}")
        if kept is not None:
            safe[key] = kept
        waiting += left
    return (safe if safe or not waiting else None), waiting


def _permission(value: Any, directory: Path) -> tuple[dict[str, Any], list[str]]:
    """Only `deny` narrows: allow and ask could open what the person's config closed."""
    if not isinstance(value, dict):
        return {}, [""]
    safe: dict[str, Any] = {}
    waiting: list[str] = []
    for tool, level in value.items():
        if isinstance(level, dict):  # patterns: its denies narrow, the rest waits
            denied = {pattern: lvl for pattern, lvl in level.items() if lvl == "deny"}
            safe.update({tool: denied} if denied else {})
            waiting += [f"{tool}.{pattern}" for pattern in level if pattern not in denied]
        elif level == "deny":
            safe[tool] = level
        else:
            waiting.append(tool)
    return safe, waiting


def _instructions(value: Any, directory: Path) -> tuple[list[str], list[str]]:
    """Files inside the project only: a URL fetches from anywhere, and a path outside the
    project (`~/.ssh/id_rsa`) would send that file to the model."""
    if not isinstance(value, list):
        return [], [""]
    root = directory.resolve()
    safe = [entry for entry in value if isinstance(entry, str) and _inside(root, entry)]
    return safe, [repr(entry) for entry in value if entry not in safe]


def _inside(root: Path, entry: str) -> bool:
    if "://" in entry or entry.startswith("~"):
        return False
    return (root / entry).resolve() == root or paths.is_within(root / entry, root)


def _project_file(root: Path, entry: str) -> bool:
    """A file that exists inside the project (an agent's prompt file: one missing here
    would be looked up in your config dir next)."""
    return _inside(root, entry) and (root / entry).is_file()


def _agents(value: Any, directory: Path) -> tuple[dict[str, Any], list[str]]:
    if not isinstance(value, dict):
        return {}, [""]
    safe: dict[str, Any] = {}
    waiting: list[str] = []
    for name, entry in value.items():
        if not isinstance(entry, dict):
            waiting.append(name)
            continue
        safe[name], left = narrow_agent(entry, directory)
        waiting += [f"{name}.{key}" for key in left]
    return safe, waiting


def narrow_agent(entry: dict[str, Any], base: Path) -> tuple[dict[str, Any], list[str]]:
    """An untrusted project's agent: what may apply, and the keys that wait. A prompt
    file outside the project (`base`) waits too: it would be sent to the model."""
    kept = {k: v for k, v in entry.items() if k in AGENT_SAFE}
    left = [k for k in entry if k not in AGENT_SAFE and k != "permission"]
    prompt_file = _prompt_file(kept.get("prompt"))
    if prompt_file is not None and not _project_file(base.resolve(), prompt_file):
        del kept["prompt"]
        left.append("prompt")
    permission = entry.get("permission")
    if isinstance(permission, dict):
        denied = {tool: level for tool, level in permission.items() if level == "deny"}
        if denied:
            kept["permission"] = denied
        left += [f"permission.{tool}" for tool in permission if tool not in denied]
    elif permission is not None:
        left.append("permission")
    return kept, left


def _prompt_file(prompt: Any) -> str | None:
    """The file a prompt names (`{file:path}` or {"file": path}), else None."""
    if isinstance(prompt, dict):
        name = prompt.get("file")
        return name if isinstance(name, str) else ""
    if isinstance(prompt, str) and prompt.startswith("{file:") and prompt.endswith("}"):
        return prompt[len("{file:") : -1]
    return None


NARROWING = {"permission": _permission, "instructions": _instructions, "agent": _agents}
"""Keys whose safe part is decided entry by entry: only what narrows applies."""


def explain(waiting: list[str]) -> list[str]:
    """Each waiting key path with why it waits, one line each."""
    return [
        f"{key}: {REASONS.get(key.split('.', 1)[0], 'not known to be safe')}" for key in waiting
    ]
