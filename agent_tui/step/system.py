"""The system prompt: base prompt by model family, environment block, instructions."""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import platform
from collections.abc import Iterator
from pathlib import Path

from agent_tui import paths
from agent_tui.config.settings import Config
from agent_tui.project.skills import load_skills, skills_section
from agent_tui.step.instruction_urls import is_url, url_text

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "CONTEXT.md")
"""Looked for in each directory from the working directory up; the first found there is
read (projects often keep CLAUDE.md as a copy of AGENTS.md)."""


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


def instruction_sources(directory: Path, config: Config) -> list[Path | str]:
    """Where the instructions come from, in a stable order, each once: AGENTS.md /
    CLAUDE.md / CONTEXT.md walking up from the directory (nearest first, one per
    directory), the global AGENTS.md (or CLAUDE.md) in the config dir, ~/.claude/CLAUDE.md,
    then config `instructions` as listed: paths (relative to the directory) and URLs."""
    found: list[Path | str] = [f for f in _nearest_files(directory) if not links_out(f)]
    for name in INSTRUCTION_FILES[:2]:
        global_file = paths.config_dir() / name
        if global_file.is_file():
            found.append(global_file)
            break
    claude_global = paths.claude_home() / "CLAUDE.md"
    if claude_global.is_file():
        found.append(claude_global)
    for entry in config.instructions:
        if is_url(entry):
            found.append(entry)
            continue
        path = Path(entry).expanduser()
        found.append(path if path.is_absolute() else directory / path)
    unique: dict[Path | str, Path | str] = {}
    for source in found:
        unique.setdefault(source if isinstance(source, str) else _real(source), source)
    return list(unique.values())


def links_out(path: Path) -> bool:
    """An instruction file that is a link out of its folder (a repository's AGENTS.md ->
    ~/.ssh/id_rsa would send that file to the model): never read."""
    return path.is_symlink() and not paths.is_within(path, path.parent)


def _nearest_files(directory: Path) -> Iterator[Path]:
    """The first of INSTRUCTION_FILES in each directory from `directory` up."""
    for folder in (directory, *directory.parents):
        for name in INSTRUCTION_FILES:
            if (folder / name).is_file():
                yield folder / name
                break


def _linked_out(directory: Path) -> list[str]:
    """Notes for the instruction files skipped by `links_out`."""
    return [
        f"Instruction file {file} links outside its folder (to {_real(file)}); skipped."
        for file in _nearest_files(directory)
        if links_out(file)
    ]


def _real(path: Path) -> Path:
    """The file a path names (symlinks followed), so one file linked twice is read once."""
    try:
        return path.resolve()
    except OSError:
        return path


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
    notes: list[str] = _linked_out(directory)
    texts: set[str] = set()
    for source in instruction_sources(directory, config):
        if isinstance(source, str):  # a URL: fetched before the run (instruction_urls.py)
            text = (url_text(source) or "").strip()
        else:
            try:
                text = source.read_text(encoding="utf-8", errors="replace").strip()
            except OSError as exc:
                notes.append(
                    f"Instruction file {source} could not be read ({exc.strerror}); skipped."
                )
                continue
        if text and text not in texts:  # the same text under two names goes in once
            texts.add(text)
            sections.append(f"Instructions from: {source}\n{text}")
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
