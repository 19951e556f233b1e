"""The system prompt: base prompt by model family, environment block, instructions."""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import platform
from collections.abc import Iterator
from pathlib import Path

from agent_tui import paths
from agent_tui.config import Config
from agent_tui.skills import load_skills, skills_section

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")


def base_prompt_name(model: str) -> str:
    lowered = model.lower()
    if "claude" in lowered or lowered.startswith(("anthropic/", "bedrock/anthropic")):
        return "anthropic.txt"
    if "gemini" in lowered:
        return "gemini.txt"
    if any(tag in lowered for tag in ("gpt", "/o1", "/o3", "/o4", "openai/o")):
        return "openai.txt"
    return "default.txt"


def _git_root(directory: Path) -> Path | None:
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def environment_block(model: str, directory: Path, today: dt.date | None = None) -> str:
    git = _git_root(directory)
    return "\n".join(
        [
            "<env>",
            f"  Model: {model}",
            f"  Working directory: {directory}",
            f"  Is directory a git repo: {'yes' if git else 'no'}",
            f"  Platform: {platform.system().lower()} ({platform.machine()})",
            f"  Today's date: {(today or dt.date.today()).isoformat()}",
            "</env>",
        ]
    )


def instruction_paths(directory: Path, config: Config) -> list[Path]:
    """AGENTS.md / CLAUDE.md walking up from the directory (nearest first, one name per
    directory), the global AGENTS.md in the config dir, then config `instructions`."""
    found: list[Path] = []
    for folder in (directory, *directory.parents):
        for name in INSTRUCTION_FILES:
            candidate = folder / name
            if candidate.is_file():
                found.append(candidate)
                break
    for name in INSTRUCTION_FILES:
        global_file = paths.config_dir() / name
        if global_file.is_file():
            found.append(global_file)
            break
    for entry in config.instructions:
        path = Path(entry).expanduser()
        found.append(path if path.is_absolute() else directory / path)
    unique: list[Path] = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique


Instructions = tuple[list[str], list[str]]
"""(a section per instruction file and the skills list, notes about unreadable files)."""
_read_once: contextvars.ContextVar[dict[tuple[Path, tuple[str, ...]], Instructions] | None] = (
    contextvars.ContextVar("instruction_files", default=None)
)


@contextlib.contextmanager
def instructions_read_once() -> Iterator[None]:
    """Within it (one loop run), instruction files and skills are read once: every step
    sends the same bytes (prompt caching reads the prefix byte for byte) without a
    stat walk and file reads per step. An edit is picked up by the next run."""
    token = _read_once.set({})
    try:
        yield
    finally:
        _read_once.reset(token)


def _instructions(directory: Path, config: Config) -> Instructions:
    cache = _read_once.get()
    key = (directory, tuple(config.instructions))
    if cache is not None and key in cache:
        sections, notes = cache[key]
        return list(sections), list(notes)
    sections: list[str] = []
    notes: list[str] = []
    for path in instruction_paths(directory, config):
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError as exc:
            notes.append(f"Instruction file {path} could not be read ({exc.strerror}); skipped.")
            continue
        if text:
            sections.append(f"Instructions from: {path}\n{text}")
    if skills := skills_section(load_skills(directory)):
        sections.append(skills)
    if cache is not None:
        cache[key] = (list(sections), list(notes))
    return sections, notes


def build_system(
    model: str, directory: Path, config: Config, header: str | None = None
) -> tuple[list[str], list[str]]:
    """([static header, environment + instructions], notes about missing files).

    Two system messages so providers can cache the first across sessions. `header`
    replaces the base prompt of the model family (an agent's own, session/request.py).
    """
    sections, notes = _instructions(directory, config)
    sections = [environment_block(model, directory), *sections]
    base = header or paths.read_prompt(base_prompt_name(model)).strip()
    return [base, "\n\n".join(sections)], notes
