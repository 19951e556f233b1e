"""Custom slash commands: Markdown files whose body is sent as the prompt.

`.agent-tui/commands/NAME.md` in the working directory (project) and
`<config dir>/commands/NAME.md` (user), and Claude Code's as they are:
`.claude/commands/**/NAME.md` and `~/.claude/commands/**/NAME.md` (below agent-tui's own
of the same level). A project command overrides a user one. The body's `$ARGUMENTS`
becomes everything after `/NAME`, `$1`, `$2`… the single words; its `` !`command` ``
lines run before it is sent (session/command_lines.py). An optional YAML front matter
(project/front_matter.py) sets `description`, `model`, `argument-hint` and
`allowed-tools` (Claude Code's rules, such as `Bash(git status:*)`, a list or one string).
"""

from __future__ import annotations

import re
import stat
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_tui import paths, read_once
from agent_tui.project.front_matter import (
    FrontMatterError,
    parse_front_matter,
    text_value,
    words,
)
from agent_tui.trust.trusted_files import split_words

PROJECT_COMMANDS_DIR = Path(".agent-tui") / "commands"
USER_COMMANDS_DIR = "commands"
"""Under the user config dir, and Claude Code's folder."""
CLAUDE_COMMANDS_DIR = Path(".claude") / "commands"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
PLACEHOLDER_RE = re.compile(r"\$(ARGUMENTS|\d+)")


@dataclass(frozen=True)
class CustomCommand:
    name: str
    body: str
    path: Path
    scope: str
    """`project` or `user`."""
    description: str = ""
    model: str | None = None
    hint: str | None = None
    """`argument-hint`: what to type after the name."""
    allowed: tuple[str, ...] = ()
    """`allowed-tools`: Claude Code's permission rules its `!` lines and prompt may use."""

    @property
    def help(self) -> str:
        return self.description or f"Custom command ({self.scope}: {self.path.name})"

    def expand(self, arguments: str) -> str:
        """The body with `$ARGUMENTS` and `$1`, `$2`… replaced (missing ones are empty)."""
        words = split_words(arguments)

        def value(match: re.Match[str]) -> str:
            if match.group(1) == "ARGUMENTS":
                return arguments.strip()
            index = int(match.group(1)) - 1
            return words[index] if 0 <= index < len(words) else ""

        # One pass: an argument that itself contains `$1` is not expanded again.
        return PLACEHOLDER_RE.sub(value, self.body).strip()


class UnreadableFile(ValueError):
    """Why a command's, agent's or skill's file is skipped (markdown_text)."""


def markdown_text(path: Path, within: Path | None = None) -> str:
    """A command's, agent's or skill's file as text, else UnreadableFile saying why: a
    folder, a device or a link loop in its place, binary bytes, not UTF-8. `within`: a
    project, whose files linking outside it are refused (its SKILL.md -> ~/.ssh/id_rsa
    would reach the model)."""
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise UnreadableFile("a folder, not a file")
        if not stat.S_ISREG(info.st_mode):  # a FIFO would never end
            raise UnreadableFile("not a regular file")
        if within is not None and not paths.is_within(path, within):
            raise UnreadableFile("it links outside the project")
        data = read_once.read_bytes(path, info)
    except OSError as exc:
        raise UnreadableFile(exc.strerror or str(exc)) from exc
    if b"\0" in data:
        raise UnreadableFile("binary (it holds NUL bytes), not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"not UTF-8 text (byte {exc.start} of the file)") from exc


def front_matter_files(
    folder: Path,
    pattern: str,
    within: Path | None = None,
    skipped: list[str] | None = None,
    kind: str = "File",
    *,
    lower: bool = True,
) -> Iterator[tuple[Path, dict[str, Any], str]]:
    """(path, front matter with lower-case keys (as written when not `lower`), body) of
    each readable file matching `pattern` in `folder`, by path; none when the folder
    cannot be read. Each one that cannot be read (markdown_text, `within` a project) or
    whose front matter is not valid YAML adds a line to `skipped`, naming it as `kind`."""
    try:
        files = sorted(folder.glob(pattern))
    except OSError:
        return
    for path in files:
        try:
            meta, body = parse_front_matter(markdown_text(path, within))
        except (UnreadableFile, FrontMatterError) as exc:
            if skipped is not None:
                skipped.append(f"{kind} {path}: {exc}; skipped.")
            continue
        yield path, {key.lower() if lower else key: value for key, value in meta.items()}, body


COMMAND_FILE = "Command file"
"""How a skipped line names a command's file."""


def _load_dir(
    folder: Path,
    scope: str,
    within: Path | None = None,
    nested: bool = False,
    skipped: list[str] | None = None,
) -> dict[str, CustomCommand]:
    """The commands of a folder; `nested`: its subfolders too (Claude Code's
    `frontend/component.md` is `/component`). A file that cannot be read is a line in
    `skipped`."""
    found: dict[str, CustomCommand] = {}
    pattern = "**/*.md" if nested else "*.md"
    for path, meta, body in front_matter_files(folder, pattern, within, skipped, COMMAND_FILE):
        name = path.stem
        if not NAME_RE.match(name):
            continue
        found[name.lower()] = CustomCommand(
            name=name.lower(),
            body=body.strip(),
            path=path,
            scope=scope,
            description=text_value(meta.get("description")),
            model=text_value(meta.get("model")) or None,
            hint=text_value(meta.get("argument-hint")) or None,
            allowed=words(meta.get("allowed-tools")),
        )
    return found


@dataclass
class LoadedCommands:
    commands: dict[str, CustomCommand]
    shadowed: list[CustomCommand]
    """Files named like a built-in command: not loaded (the built-in wins)."""
    skipped: list[str] = field(default_factory=list)
    """A line per file that cannot be read (markdown_text): the workspace shows them."""

    def warning(self) -> str | None:
        if not self.shadowed:
            return None
        files = ", ".join(str(c.path) for c in self.shadowed)
        return f"Custom commands named like built-in ones are ignored (rename them): {files}"


def project_commands(directory: Path, skipped: list[str] | None = None) -> dict[str, CustomCommand]:
    """The project's own: Claude Code's, then agent-tui's over them."""
    found = _load_dir(directory / CLAUDE_COMMANDS_DIR, "project", directory, True, skipped)
    found.update(_load_dir(directory / PROJECT_COMMANDS_DIR, "project", directory, False, skipped))
    return found


def load_custom_commands(directory: Path, reserved: Collection[str] = ()) -> LoadedCommands:
    """User commands, then project ones over them; names in `reserved` (built-ins and
    their aliases) are never taken."""
    skipped: list[str] = []
    merged = _load_dir(paths.claude_home() / USER_COMMANDS_DIR, "user", None, True, skipped)
    merged.update(_load_dir(paths.config_dir() / USER_COMMANDS_DIR, "user", None, False, skipped))
    merged.update(project_commands(directory, skipped))
    reserved = {r.lower() for r in reserved}
    shadowed = [c for name, c in merged.items() if name in reserved]
    commands = {name: c for name, c in merged.items() if name not in reserved}
    return LoadedCommands(commands, shadowed, skipped)
