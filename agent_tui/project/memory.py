"""Instruction (memory) files, agent-tui's own and Claude Code's, read as Claude Code
reads its memory: in each folder from the working directory up, the first of AGENTS.md
and CONTEXT.md, then `CLAUDE.md`, `.claude/CLAUDE.md`, `CLAUDE.local.md` and the rules
`.claude/rules/**/*.md`; the global AGENTS.md (or CLAUDE.md) of agent-tui's config dir;
Claude Code's own `~/.claude/CLAUDE.md` and `~/.claude/rules/**/*.md`.

A rule whose YAML front matter has `paths:` (a list, or one string of globs split at
commas) applies only once the model works on a matching file (step/memory_rules.py); a
rule without it always applies. `@path` in a memory file's text (outside code spans and
blocks) imports that file, relative to the importing file, up to MAX_IMPORT_DEPTH hops.

What is never read (a `Refused`, listed by /context): a secret's path (SECRET_NAMES,
SECRET_FOLDERS, config `sandbox.deny_read`), and, until the project is trusted, a file
outside the folder of the project memory file it comes from (`@../outside.md`,
`@~/notes.md`, a rule linked elsewhere). Every file goes in once, by its real path."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from agent_tui import paths
from agent_tui.project.custom_commands import markdown_text, parse_front_matter

OWN_NAMES = ("AGENTS.md", "CONTEXT.md")
"""agent-tui's own per folder: the first found there is read."""
CLAUDE_NAMES = ("CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")
"""Claude Code's per folder: each one found is read."""
GLOBAL_NAMES = ("AGENTS.md", "CLAUDE.md")
"""In agent-tui's config dir: the first found."""
RULES_DIR = Path(".claude") / "rules"
"""In a project folder, and (as `rules`) in Claude Code's home."""
MAX_IMPORT_DEPTH = 5
"""Hops of `@path` imports followed (Claude Code's limit)."""
SECRET_NAMES = (".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_dsa*", "id_ecdsa*",
                "id_ed25519*", ".netrc", ".pgpass", ".npmrc", ".pypirc")  # fmt: skip
"""File names of secrets an import never reads (whatever the trust)."""
NOT_SECRET = (".env.example", ".env.sample", ".env.template")
SECRET_FOLDERS = (".ssh", ".gnupg", ".aws")
IMPORT_RE = re.compile(r"(?:^|\s)@((?:[^\s\\]|\\ )+)")
"""`@path` after a start or a space (an e-mail address is not one); `\\ ` escapes a space."""


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


@dataclass(frozen=True)
class Refused:
    reference: str
    """As written: `@../outside.md`, or the file's path."""
    source: Path
    """The file that names it."""
    reason: str


@dataclass
class Memory:
    """The memory files in the order the system prompt carries them (each import right
    after the file importing it), the path-scoped rules with their imports, and what was
    not read."""

    files: list[MemoryFile] = field(default_factory=list)
    scoped: list[list[MemoryFile]] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """A line per file that could not be read."""
    seen: set[Path] = field(default_factory=set)


@dataclass(frozen=True)
class Reader:
    """How one memory load reads: the trust, the person's deny_read, Claude Code's home."""

    trusted: bool
    deny_read: tuple[Path, ...]
    claude_home: Path


def load_memory(directory: Path, *, trusted: bool, deny_read: tuple[str, ...] = ()) -> Memory:
    """Every memory file for a session in `directory` (see the module's doc)."""
    reader = Reader(trusted, tuple(_expanded(p) for p in deny_read), paths.claude_home())
    memory = Memory()
    for folder in (directory, *directory.parents):
        _folder_files(memory, reader, folder)
    for name in GLOBAL_NAMES:
        if (paths.config_dir() / name).is_file():
            _add(memory, reader, paths.config_dir() / name, "user", None)
            break
    if (reader.claude_home / "CLAUDE.md").is_file():
        _add(memory, reader, reader.claude_home / "CLAUDE.md", "user", None)
    _rules(memory, reader, reader.claude_home / "rules", directory, None)
    return memory


def _folder_files(memory: Memory, reader: Reader, folder: Path) -> None:
    """One folder's files, nearest first: agent-tui's, Claude Code's, its rules."""
    own = next((folder / n for n in OWN_NAMES if (folder / n).is_file()), None)
    found = [own] if own is not None else []
    found += [folder / n for n in CLAUDE_NAMES if (folder / n).is_file()]
    for path in found:
        if paths.is_within(path, reader.claude_home):
            continue  # ~/.claude/CLAUDE.md walking up through home: read as the person's
        if path.is_symlink() and not paths.is_within(path, folder):
            memory.notes.append(
                f"Instruction file {path} links outside its folder (to {_real(path)}); skipped."
            )
            continue
        _add(memory, reader, path, "local" if path.name == "CLAUDE.local.md" else "project", folder)
    if not paths.is_within(folder / RULES_DIR, reader.claude_home):
        _rules(memory, reader, folder / RULES_DIR, folder, folder)


def _rules(memory: Memory, reader: Reader, rules: Path, base: Path, root: Path | None) -> None:
    """The rules of a `rules` folder, by path: unscoped ones with the files, scoped apart."""
    try:
        found = sorted(p for p in rules.glob("**/*.md") if p.is_file())
    except OSError:
        return
    for path in found:
        refusal = _refusal(path, root, reader)
        if refusal is not None:
            memory.refused.append(Refused(str(path), rules, refusal))
            continue
        group = _read_with_imports(memory, reader, path, "rule", root, base=base)
        if group and group[0].globs:
            memory.scoped.append(group)
        else:
            memory.files.extend(group)


def _add(memory: Memory, reader: Reader, path: Path, kind: str, root: Path | None) -> None:
    memory.files.extend(_read_with_imports(memory, reader, path, kind, root))


def _read_with_imports(
    memory: Memory,
    reader: Reader,
    path: Path,
    kind: str,
    root: Path | None,
    *,
    base: Path | None = None,
    imported_by: Path | None = None,
    depth: int = 0,
) -> list[MemoryFile]:
    """The file (unless read already) and, after it, what it imports. `root`: the
    folder an untrusted project's file may import from (None: the person's own)."""
    real = _real(path)
    if real in memory.seen:
        return []
    memory.seen.add(real)
    try:
        text = markdown_text(path)
        meta, body = parse_front_matter(text) if kind == "rule" else ({}, text)
    except ValueError as exc:  # UnreadableFile; front matter that is not valid YAML
        memory.notes.append(f"Instruction file {path} could not be read ({exc}); skipped.")
        return []
    globs = rule_globs(meta.get("paths")) if kind == "rule" else ()
    found = [MemoryFile(path, body.strip(), kind, imported_by, depth, globs, base)]
    for reference in import_references(body):
        target = _import_path(reference, path.parent)
        refusal = _import_refusal(target, root, reader, depth)
        if refusal is not None:
            memory.refused.append(Refused(f"@{reference}", path, refusal))
            continue
        found += _read_with_imports(
            memory, reader, target, "import", root, imported_by=path, depth=depth + 1
        )
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


def is_secret(path: Path, deny_read: tuple[Path, ...] = ()) -> bool:
    """A secret's file: by its name or folder, or under config `sandbox.deny_read`."""
    real = _real(path)
    for candidate in (path.absolute(), real):
        name = candidate.name
        if name not in NOT_SECRET and any(fnmatch.fnmatchcase(name, s) for s in SECRET_NAMES):
            return True
        if any(part in SECRET_FOLDERS for part in candidate.parts):
            return True
        if any(candidate == d or d in candidate.parents for d in deny_read):
            return True
    return False


def import_references(text: str) -> list[str]:
    """The `@path` references of a Markdown text, in order, outside code spans and code
    blocks (markdown-it's tokens, as Claude Code reads them with its Markdown lexer)."""
    found: list[str] = []
    for token in _markdown().parse(text):
        for child in token.children or []:
            if child.type == "text":
                found += [_reference(m) for m in IMPORT_RE.findall(child.content)]
    return found


def _reference(match: str) -> str:
    """A path as written, its escaped spaces unescaped, without the punctuation of the
    sentence it ends (`see @docs/x.md.`)."""
    return match.replace("\\ ", " ").rstrip(".,;:!?)")


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt  # the app's Markdown library (Textual's)

    return MarkdownIt("commonmark")


def _import_path(reference: str, folder: Path) -> Path:
    if reference.startswith("~/") or reference == "~":
        return Path(reference).expanduser()
    path = Path(reference)
    return path if path.is_absolute() else folder / path


def rule_globs(value: object) -> tuple[str, ...]:
    """A rule's `paths:` as globs: a YAML list, or one string split at the commas
    outside braces; braces expanded (`src/*.{ts,tsx}` is two)."""
    if value is None:
        return ()
    if isinstance(value, list):
        items = [str(item) for item in value]
    else:
        items = _split_commas(str(value).strip().removeprefix("[").removesuffix("]"))
    globs = [item.strip().strip("\"'") for item in items]
    return tuple(g for glob in globs if glob for g in expand_braces(glob))


def _split_commas(text: str) -> list[str]:
    items, depth, current = [], 0, ""
    for char in text:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "," and depth <= 0:
            items.append(current)
            current = ""
        else:
            current += char
    return [*items, current]


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


def rule_applies(rule: MemoryFile, file: Path) -> bool:
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


def _expanded(entry: str) -> Path:
    return _real(Path(os.path.expandvars(entry)).expanduser())


def _real(path: Path) -> Path:
    """The file a path names (symlinks followed), so one file linked twice is read once."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a link loop (Python 3.11)
        return path
