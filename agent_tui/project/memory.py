"""Instruction (memory) files, agent-tui's own and Claude Code's, read as Claude Code
reads its memory: in each folder from the working directory up, the first of AGENTS.md
and CONTEXT.md, then `CLAUDE.md`, `.claude/CLAUDE.md`, `CLAUDE.local.md` and the rules
`.claude/rules/**/*.md`; the global AGENTS.md (or CLAUDE.md) of agent-tui's config dir;
Claude Code's own `~/.claude/CLAUDE.md` and `~/.claude/rules/**/*.md`. A folder below the
working directory is read the same way once the model works on a file in it
(`nested_memory`, step/memory_rules.py): Claude Code's nested memory, loaded on demand.

A rule whose YAML front matter has `paths:` (a list, or one string of globs split at
commas) applies only once the model works on a matching file (step/memory_rules.py); a
rule without it always applies. `@path` in a memory file's text (outside code spans and
blocks) imports that file, relative to the importing file, up to MAX_IMPORT_DEPTH hops.

What is never read (a `Refused`, listed by /context): a secret's path
(trust/memory_imports.is_secret: by its name or folder, config `sandbox.deny_read`),
and, until the project is trusted, a file outside the folder of the project memory file
it comes from (`@../outside.md`, `@~/notes.md`, a rule linked elsewhere; for a folder
below, outside the working directory). Those of the working directory's own files are
part of what the project brings: the trust question lists them
(trust/memory_imports.py). Every file goes in once, by its real path."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agent_tui import paths
from agent_tui.project.custom_commands import markdown_text, parse_front_matter
from agent_tui.project.front_matter import split_commas
from agent_tui.trust.memory_imports import (
    MAX_IMPORT_DEPTH,
    RULES_DIR,
    denied,
    folder_files,
    import_path,
    import_references,
    is_secret,
    real,
    rule_files,
)

GLOBAL_NAMES = ("AGENTS.md", "CLAUDE.md")
"""In agent-tui's config dir: the first found."""
MEMORY_TYPES = {"local": "Local", "user": "User"}
"""Claude Code's `memory_type` of a file by the kind it was read as (InstructionsLoaded);
the rest are "Project", an import its importer's."""
BRACES = {"{": 1, "}": -1}
"""Only braces nest in a rule's `paths:` string (`src/*.{ts,tsx}` is one glob)."""


@dataclass(frozen=True)
class MemoryFile:
    path: Path
    text: str
    """What the model reads of it (a rule's front matter removed), stripped."""
    kind: str
    """`project`, `local` (CLAUDE.local.md), `rule`, `user`, or `import`."""
    imported_by: Path | None = None
    depth: int = 0
    globs: tuple[str, ...] = ()
    """A rule's `paths:` (braces expanded); empty: it always applies."""
    base: Path | None = None
    """What a rule's globs are relative to: the folder holding its `.claude`."""
    memory_type: str = "Project"
    """Claude Code's word for whose it is: Project, Local or User (an import, its
    importer's)."""


@dataclass(frozen=True)
class Refused:
    reference: str
    """As written: `@../outside.md`, or the file's path."""
    source: Path
    """The file that names it."""
    reason: str


Group = list[MemoryFile]
"""A memory file and, after it, what it imports."""


@dataclass
class FolderMemory:
    """One folder's memory: its files and unscoped rules, and its path-scoped rules."""

    groups: list[Group] = field(default_factory=list)
    scoped: list[Group] = field(default_factory=list)


@dataclass(frozen=True)
class Reader:
    """How one memory load reads: the trust, the person's deny_read, Claude Code's home."""

    trusted: bool
    deny_read: tuple[Path, ...]
    claude_home: Path


@dataclass
class Memory:
    """The memory files in the order the system prompt carries them (each import right
    after the file importing it), the path-scoped rules with their imports, and what was
    not read; the folders below the working directory read so far (`nested_memory`)."""

    files: list[MemoryFile] = field(default_factory=list)
    scoped: list[Group] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """A line per file that could not be read."""
    seen: set[Path] = field(default_factory=set)
    directory: Path | None = None
    reader: Reader | None = None
    nested: dict[Path, FolderMemory] = field(default_factory=dict)


def load_memory(directory: Path, *, trusted: bool, deny_read: tuple[str, ...] = ()) -> Memory:
    """Every memory file for a session in `directory` (see the module's doc)."""
    reader = Reader(trusted, denied(deny_read), paths.claude_home())
    memory = Memory(directory=directory, reader=reader)
    for folder in (directory, *directory.parents):
        found = _folder_memory(memory, reader, folder, folder)
        memory.files += [f for group in found.groups for f in group]
        memory.scoped += found.scoped
    own = next((p for p in (paths.config_dir() / n for n in GLOBAL_NAMES) if p.is_file()), None)
    for path in (own, reader.claude_home / "CLAUDE.md"):
        if path is not None and path.is_file():
            memory.files += _read_with_imports(memory, reader, path, "user", None)
    found = FolderMemory()
    _rules(memory, reader, reader.claude_home / "rules", directory, None, found)
    memory.files += [f for group in found.groups for f in group]
    memory.scoped += found.scoped
    return memory


def nested_memory(memory: Memory, folder: Path) -> FolderMemory:
    """The memory of a folder below the working directory, read the first time it is
    asked for (then kept: every later request rebuilds the same bytes). Its files may
    import from anywhere in the working directory until the project is trusted."""
    found = memory.nested.get(folder)
    if found is None:
        assert memory.reader is not None and memory.directory is not None
        found = _folder_memory(memory, memory.reader, folder, memory.directory)
        memory.nested[folder] = found
    return found


def absolute(name: str, directory: str) -> str:
    """A file named in a call, absolute and normalised (no file system call)."""
    name = os.path.expanduser(name) if name.startswith("~") else name
    return os.path.normpath(os.path.join(directory, name))


def folders_below(directory: str, file: str) -> list[str]:
    """The folders between `directory` (not itself) and `file` (absolute, normalised),
    outermost first: those whose memory a call on `file` brings in. Strings, no file
    system call: run over the history at every request."""
    prefix = directory.rstrip(os.sep) + os.sep
    if not file.startswith(prefix):
        return []
    parts = file[len(prefix) :].split(os.sep)[:-1]
    return [prefix + os.sep.join(parts[: i + 1]) for i in range(len(parts))]


def _folder_memory(memory: Memory, reader: Reader, folder: Path, root: Path) -> FolderMemory:
    """One folder's files, nearest first: agent-tui's, Claude Code's, its rules. `root`:
    what an untrusted project's file there may import from."""
    found = FolderMemory()
    for path in folder_files(folder):
        if paths.is_within(path, reader.claude_home):
            continue  # ~/.claude/CLAUDE.md walking up through home: read as the person's
        if path.is_symlink() and not paths.is_within(path, folder):
            memory.notes.append(
                f"Instruction file {path} links outside its folder (to {real(path)}); skipped."
            )
            continue
        kind = "local" if path.name == "CLAUDE.local.md" else "project"
        found.groups.append(_read_with_imports(memory, reader, path, kind, root))
    if not paths.is_within(folder / RULES_DIR, reader.claude_home):
        _rules(memory, reader, folder / RULES_DIR, folder, root, found)
    found.groups = [group for group in found.groups if group]
    return found


def _rules(
    memory: Memory, reader: Reader, rules: Path, base: Path, root: Path | None, into: FolderMemory
) -> None:
    """The rules of a `rules` folder, by path: unscoped ones with the files, scoped apart."""
    for path in rule_files(rules):
        refusal = _refusal(path, root, reader)
        if refusal is not None:
            memory.refused.append(Refused(str(path), rules, refusal))
            continue
        group = _read_with_imports(memory, reader, path, "rule", root, base=base)
        if group and group[0].globs:
            into.scoped.append(group)
        elif group:
            into.groups.append(group)


def _read_with_imports(
    memory: Memory,
    reader: Reader,
    path: Path,
    kind: str,
    root: Path | None,
    *,
    base: Path | None = None,
    imported_by: MemoryFile | None = None,
) -> Group:
    """The file (unless read already) and, after it, what it imports. `root`: the
    folder an untrusted project's file may import from (None: the person's own)."""
    if real(path) in memory.seen:
        return []
    memory.seen.add(real(path))
    try:
        text = markdown_text(path)
        meta, body = parse_front_matter(text) if kind == "rule" else ({}, text)
    except ValueError as exc:  # UnreadableFile; front matter that is not valid YAML
        memory.notes.append(f"Instruction file {path} could not be read ({exc}); skipped.")
        return []
    depth = 0 if imported_by is None else imported_by.depth + 1
    memory_type = MEMORY_TYPES.get(kind, "User" if root is None else "Project")
    if imported_by is not None:  # an import is its importer's
        memory_type = imported_by.memory_type
    globs = rule_globs(meta.get("paths")) if kind == "rule" else ()
    parent = None if imported_by is None else imported_by.path
    file = MemoryFile(path, body.strip(), kind, parent, depth, globs, base, memory_type)
    found = [file]
    for reference in import_references(body):
        target = import_path(reference, path.parent)
        refusal = _import_refusal(target, root, reader, depth)
        if refusal is not None:
            memory.refused.append(Refused(f"@{reference}", path, refusal))
            continue
        found += _read_with_imports(memory, reader, target, "import", root, imported_by=file)
    return found


def _import_refusal(target: Path, root: Path | None, reader: Reader, depth: int) -> str | None:
    """Why an import is not read, or None: a secret or a file outside an untrusted
    project is named so whether or not it exists."""
    if depth + 1 > MAX_IMPORT_DEPTH:
        return f"imports are followed {MAX_IMPORT_DEPTH} levels deep"
    refusal = _refusal(target, root, reader)
    if refusal is None and not target.is_file():
        return "not found" if not target.exists() else "not a file"
    return refusal


def _refusal(path: Path, root: Path | None, reader: Reader) -> str | None:
    """Why `path` is never read, or None."""
    if is_secret(path, reader.deny_read):
        return "a secret's path: never read"
    if root is not None and not reader.trusted and not paths.is_within(path, root):
        return "outside the project: read only in a project you trusted (or your trusted_projects)"
    return None


def rule_globs(value: object) -> tuple[str, ...]:
    """A rule's `paths:` as globs: a YAML list, or one string split at the commas
    outside braces; braces expanded (`src/*.{ts,tsx}` is two)."""
    if value is None:
        return ()
    if isinstance(value, list):
        items = [str(item) for item in value]
    else:
        items = split_commas(str(value).strip().removeprefix("[").removesuffix("]"), BRACES)
    globs = [item.strip().strip("\"'") for item in items]
    return tuple(g for glob in globs if glob for g in expand_braces(glob))


def expand_braces(glob: str) -> list[str]:
    """`a.{ts,tsx}` -> `a.ts`, `a.tsx` (innermost first, so nested braces work)."""
    match = re.search(r"\{([^{}]*)\}", glob)
    if match is None:
        return [glob]
    head, tail = glob[: match.start()], glob[match.end() :]
    return [g for option in match.group(1).split(",") for g in expand_braces(head + option + tail)]


def matches(relative: str, glob: str) -> bool:
    """Whether a path relative to the rule's base matches one of its globs: `*` within
    a name, `**` across folders (also none: `src/**/x.ts` matches `src/x.ts`), and a glob
    without a slash at any depth (`*.md`)."""
    glob = glob.removeprefix("./")
    candidates = {glob, glob.replace("/**/", "/")}
    candidates |= {c.removeprefix("**/") for c in candidates}
    if "/" not in glob:
        relative = relative.rpartition("/")[2]
    return any(fnmatch.fnmatchcase(relative, c) for c in candidates)


def rule_applies(rule: MemoryFile, file: Path | str) -> bool:
    """Whether a scoped rule applies to `file` (absolute): inside its base, matching.
    Paths compared as written, normalised (no file system calls: run over the history at
    every request)."""
    if rule.base is None:
        return False
    try:
        relative = Path(os.path.normpath(file)).relative_to(rule.base).as_posix()
    except ValueError:
        return False
    return any(matches(relative, glob) for glob in rule.globs)


def sources(memory: Memory) -> Iterator[Path]:
    """Every file the memory read (scoped rules included)."""
    yield from (f.path for f in memory.files)
    yield from (f.path for group in memory.scoped for f in group)
