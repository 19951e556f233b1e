"""Skills: folders of instructions for one kind of task, loaded by the model on demand.

`.agent-tui/skills/NAME/SKILL.md` in the working directory (project) and
`<config dir>/skills/NAME/SKILL.md` (user), and Claude Code's as they are:
`.claude/skills/NAME/SKILL.md` and `~/.claude/skills/NAME/SKILL.md`. A project skill
overrides a user one of the same name, and agent-tui's own a Claude Code one. The YAML
front matter (project/front_matter.py) gives `name` (the folder's name when missing) and
`description`. The system prompt lists every skill's
name and description; the skill tool returns a body, with the folder it lives in so
that files the body mentions can be read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent_tui import paths
from agent_tui.project.custom_commands import front_matter_files
from agent_tui.project.front_matter import text_value

PROJECT_SKILLS_DIR = Path(".agent-tui") / "skills"
CLAUDE_SKILLS_DIR = Path(".claude") / "skills"
"""In the project, and under the home directory."""
USER_SKILLS_DIR = "skills"
"""Under the user config dir."""
SKILL_FILE = "SKILL.md"
SKILLS_HEADER = (
    "Skills: instructions for particular kinds of task, each with files of its own. When "
    "a task matches a skill's description, load the skill with the skill tool before "
    "starting, and follow it."
)


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    path: Path
    """The SKILL.md file."""
    scope: str
    """`project` or `user`."""

    @property
    def folder(self) -> Path:
        return self.path.parent


SKILL_KIND = "Skill file"
"""How a skipped line names a skill's file."""


_LOADED: dict[tuple[object, ...], tuple[dict[str, Skill], list[str]]] = {}
"""A folder's skills as last read, by the name, time and size of each SKILL.md: the start
(its skipped lines) and the system prompt of one run read each file once."""


def _stamp(root: Path) -> tuple[tuple[str, int, int], ...] | None:
    """What tells whether a folder's SKILL.md files changed (None: cannot tell)."""
    try:
        stats = [(p, p.stat()) for p in root.glob(f"*/{SKILL_FILE}")]
    except (OSError, RuntimeError):
        return None
    return tuple(sorted((str(p), st.st_mtime_ns, st.st_size) for p, st in stats))


def _load_dir(
    root: Path, scope: str, within: Path | None = None, skipped: list[str] | None = None
) -> dict[str, Skill]:
    stamp = _stamp(root)
    key = (root, scope, within, stamp)
    loaded = _LOADED.get(key) if stamp is not None else None
    if loaded is None:
        lines: list[str] = []
        loaded = (_read_dir(root, scope, within, lines), lines)
        if stamp is not None:
            _LOADED[key] = loaded
    if skipped is not None:
        skipped.extend(loaded[1])
    return dict(loaded[0])


def _read_dir(root: Path, scope: str, within: Path | None, skipped: list[str]) -> dict[str, Skill]:
    found: dict[str, Skill] = {}
    for path, meta, body in front_matter_files(
        root, f"*/{SKILL_FILE}", within, skipped, SKILL_KIND
    ):
        name = text_value(meta.get("name")) or path.parent.name  # a folder's: never empty
        found[name.lower()] = Skill(
            name=name,
            description=" ".join(text_value(meta.get("description")).split()),
            body=body.strip(),
            path=path,
            scope=scope,
        )
    return found


def load_skills(directory: Path, skipped: list[str] | None = None) -> dict[str, Skill]:
    """Skills by lower-case name: the user's, then the project's over them; a line in
    `skipped` for each SKILL.md that cannot be read."""
    skills = _load_dir(paths.claude_home() / "skills", "user", None, skipped)
    skills.update(_load_dir(paths.config_dir() / USER_SKILLS_DIR, "user", None, skipped))
    skills.update(_load_dir(directory / CLAUDE_SKILLS_DIR, "project", directory, skipped))
    skills.update(_load_dir(directory / PROJECT_SKILLS_DIR, "project", directory, skipped))
    return skills


def skills_section(skills: dict[str, Skill]) -> str:
    """The system prompt's list of skills, sorted by name (the same bytes every step);
    empty when there are none."""
    if not skills:
        return ""
    listed = [skills[key] for key in sorted(skills)]
    lines = [f"- {s.name}" + (f": {s.description}" if s.description else "") for s in listed]
    return "\n".join([SKILLS_HEADER, "<skills>", *lines, "</skills>"])
