"""The system prompt: base prompt by model family, environment block, instructions (the
memory files of project/memory.py, then config `instructions`)."""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import platform
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_tui import paths
from agent_tui.config.settings import Config
from agent_tui.project.memory import Memory, MemoryFile, load_memory, sources
from agent_tui.project.skills import load_skills, skills_section
from agent_tui.step.instruction_urls import is_url, url_text
from agent_tui.trust.memory_imports import real


def base_prompt_name(model: str) -> str:
    lowered = model.lower()
    if "claude" in lowered or lowered.startswith(("anthropic/", "bedrock/anthropic")):
        return "anthropic.txt"
    if "gemini" in lowered:
        return "gemini.txt"
    if any(tag in lowered for tag in ("gpt", "/o1", "/o3", "/o4", "openai/o")):
        return "openai.txt"
    return "default.txt"


def environment_block(model: str, directory: Path) -> str:
    git = any((folder / ".git").exists() for folder in (directory, *directory.parents))
    return "\n".join(
        [
            "<env>",
            f"  Model: {model}",
            f"  Working directory: {directory}",
            f"  Is directory a git repo: {'yes' if git else 'no'}",
            f"  Platform: {platform.system().lower()} ({platform.machine()})",
            f"  Today's date: {dt.date.today().isoformat()}",
            "</env>",
        ]
    )


def imports_trusted(config: Config) -> bool:
    """Whether the project's memory files may import files outside it: the person trusted
    it (or it is one of their `trusted_projects`). Such imports are themselves something
    the project brings (trust/memory_imports.py): a project whose only Claude Code file is
    a CLAUDE.md importing `@~/notes.md` is asked about, not "nothing to trust"."""
    project = config.project
    return project is None or project.status in ("trusted", "by-config")


Instructions = tuple[list[str], list[str]]
"""(a section per instruction file and the skills list, notes about unreadable files)."""
_read_once: contextvars.ContextVar[dict[tuple[Any, ...], Any] | None] = contextvars.ContextVar(
    "instruction_files", default=None
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


def memory_of(directory: Path, config: Config) -> Memory:
    """The memory files of a session in `directory` (read once per run)."""
    cache = _read_once.get()
    trusted = imports_trusted(config)
    key = ("memory", directory, trusted, tuple(config.sandbox.deny_read))
    if cache is not None and key in cache:
        return cache[key]
    memory = load_memory(directory, trusted=trusted, deny_read=tuple(config.sandbox.deny_read))
    if cache is not None:
        cache[key] = memory
    return memory


def instruction_heading(file: MemoryFile) -> str:
    """How the model is told where a memory file's text comes from."""
    if file.imported_by is not None:
        return f"Instructions from: {file.path} (imported by {file.imported_by})"
    return f"Instructions from: {file.path}"


def _instructions(directory: Path, config: Config) -> Instructions:
    """Memory files (project/memory.py) in their order, then config `instructions` as
    listed: paths (relative to the directory) and URLs; each once, by its real path
    or, the same text under two names, by its text."""
    cache = _read_once.get()
    key = ("sections", directory, tuple(config.instructions), imports_trusted(config))
    if cache is not None and key in cache:
        sections, notes = cache[key]
        return list(sections), list(notes)
    memory = memory_of(directory, config)
    notes: list[str] = list(memory.notes)
    found = [(instruction_heading(f), f.text) for f in memory.files]
    read = {real(path) for path in sources(memory)}
    for entry in config.instructions:
        if is_url(entry):  # fetched before the run (instruction_urls.py)
            found.append((f"Instructions from: {entry}", (url_text(entry) or "").strip()))
            continue
        path = Path(entry).expanduser()
        path = path if path.is_absolute() else directory / path
        if real(path) in read:
            continue
        read.add(real(path))
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError as exc:
            notes.append(f"Instruction file {path} could not be read ({exc.strerror}); skipped.")
            continue
        found.append((f"Instructions from: {path}", text))
    first: dict[str, str] = {}  # text -> heading: the same text under two names goes in once
    for heading, text in found:
        if text:
            first.setdefault(text, heading)
    sections = [f"{heading}\n{text}" for text, heading in first.items()]
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
    replaces the base prompt of the model family (an agent's own, step/request.py).
    """
    sections, notes = _instructions(directory, config)
    sections = [environment_block(model, directory), *sections]
    base = header or paths.read_prompt(base_prompt_name(model)).strip()
    return [base, "\n\n".join(sections)], notes
