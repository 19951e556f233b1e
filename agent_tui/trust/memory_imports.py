"""What a project's memory files (project/memory.py) reach outside it: the `@path`
imports of its own CLAUDE.md, AGENTS.md and `.claude/rules`, followed through the files
they import inside it, that name a file outside the project, and the rules linked
elsewhere. Until the project is trusted none of them is read; they are part of what it
brings, so the trust question lists them and the trust vouches for the files naming them
(trusted_files.py): a CLAUDE.md that starts importing `@~/notes.md` is asked about again.

Also the grammar both sides read by: the file names, `@path` references (outside code,
with markdown-it as Claude Code reads them with its Markdown lexer) and a secret's path,
which is never read, trusted or not."""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from agent_tui import read_once

OWN_NAMES = ("AGENTS.md", "CONTEXT.md")
"""agent-tui's own per folder: the first found there is read."""
CLAUDE_NAMES = ("CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")
"""Claude Code's per folder: each one found is read."""
RULES_DIR = Path(".claude") / "rules"
"""In a project folder, and (as `rules`) in Claude Code's home."""
MAX_IMPORT_DEPTH = 5
"""Hops of `@path` imports followed (Claude Code's limit)."""
SECRET_NAMES = (".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_dsa*", "id_ecdsa*",
                "id_ed25519*", ".netrc", ".pgpass", ".npmrc", ".pypirc")  # fmt: skip
"""File names of secrets an import never reads (whatever the trust)."""
NOT_SECRET = (".env.example", ".env.sample", ".env.template")
SECRET_FOLDERS = (".ssh", ".gnupg", ".aws")
PARSED_KEPT = 256
"""Files whose references are kept parsed (by path, inode, size and time)."""
IMPORT_RE = re.compile(r"(?:^|\s)@((?:[^\s\\]|\\ )+)")
"""`@path` after a start or a space (an e-mail address is not one); `\\ ` escapes a space."""


@dataclass(frozen=True)
class OutsideImport:
    """A file outside the project that one of its memory files would bring in."""

    reference: str
    """As written (`@../outside.md`), or a linked rule's path."""
    source: Path
    """The project file naming it (the rule itself for a linked one)."""
    target: Path
    """Where it is, symlinks followed."""
    secret: bool
    """A secret's path (by its name or folder, or the person's `sandbox.deny_read`):
    never read, trusted or not."""

    def named(self, directory: Path) -> str:
        """`@../outside.md in CLAUDE.md`: the reference and the file naming it."""
        inside = self.source.is_relative_to(directory)
        return (
            f"{self.reference} in {self.source.relative_to(directory) if inside else self.source}"
        )

    def line(self, directory: Path) -> str:
        return f"{self.named(directory)} ({self.target})"


def outside_imports(directory: Path, deny_read: tuple[Path, ...] = ()) -> list[OutsideImport]:
    """Every file outside `directory` its memory files would read, in reading order
    (`deny_read`: the person's, see `denied`)."""
    root = real(directory)
    found: list[OutsideImport] = []
    seen: set[Path] = set()
    for path in folder_files(root):
        if _inside(path, root):  # one linking elsewhere is never read (memory.py)
            _scan(path, root, 0, seen, found)
    for rule in rule_files(root / RULES_DIR):
        if _inside(rule, root):
            _scan(rule, root, 0, seen, found)
        else:
            found.append(OutsideImport(str(rule.relative_to(root)), rule, real(rule), False))
    return [
        dataclasses.replace(i, target=real(i.target), secret=is_secret(i.target, deny_read))
        for i in found
    ]


def importing_files(directory: Path) -> list[Path]:
    """The project files that name a file outside it that trust would let be read
    (a secret's never is): what a trust vouches for of its memory."""
    return list(dict.fromkeys(i.source for i in outside_imports(directory) if not i.secret))


def folder_files(folder: Path) -> list[Path]:
    """A folder's memory files in reading order: the first of agent-tui's own names,
    then each of Claude Code's."""
    own = next((folder / n for n in OWN_NAMES if (folder / n).is_file()), None)
    return ([own] if own is not None else []) + [
        folder / n for n in CLAUDE_NAMES if (folder / n).is_file()
    ]


def rule_files(rules: Path) -> list[Path]:
    """The rules of a `rules` folder, by path."""
    try:
        return sorted(p for p in rules.glob("**/*.md") if p.is_file())
    except OSError:
        return []


def _scan(path: Path, root: Path, depth: int, seen: set[Path], found: list[OutsideImport]) -> None:
    """`path`'s imports outside `root`, and those of the files it imports inside it, as
    deep as memory.py follows them."""
    if real(path) in seen or depth + 1 > MAX_IMPORT_DEPTH:
        return
    seen.add(real(path))
    for reference in _references_of(path):
        target = import_path(reference, path.parent)
        if not _inside(target, root):
            found.append(OutsideImport(f"@{reference}", path, target, False))
        elif target.is_file() and not is_secret(target):
            _scan(target, root, depth + 1, seen, found)


def _references_of(path: Path) -> list[str]:
    """A file's references, parsed again only once it changed (the trust's digests are
    taken whenever a project command is about to run)."""
    try:
        info = path.stat()
    except OSError:
        return []
    return _parsed(real(path), info.st_ino, info.st_size, info.st_mtime_ns)


@lru_cache(maxsize=PARSED_KEPT)
def _parsed(path: Path, inode: int, size: int, mtime: int) -> list[str]:
    try:
        return import_references(read_once.read_bytes(path).decode("utf-8", errors="replace"))
    except OSError:
        return []


def _inside(path: Path, root: Path) -> bool:
    return root in real(path).parents


def is_secret(path: Path, deny_read: Iterable[Path] = ()) -> bool:
    """A secret's file: by its name or folder, or under config `sandbox.deny_read`
    (`denied`'s paths)."""
    denied = tuple(deny_read)
    for candidate in (path.absolute(), real(path)):
        name = candidate.name
        if name not in NOT_SECRET and any(fnmatch.fnmatchcase(name, s) for s in SECRET_NAMES):
            return True
        if any(part in SECRET_FOLDERS for part in candidate.parts):
            return True
        if any(candidate == d or d in candidate.parents for d in denied):
            return True
    return False


def denied(deny_read: Iterable[str]) -> tuple[Path, ...]:
    """Config `sandbox.deny_read` as the real paths `is_secret` compares with."""
    return tuple(real(Path(os.path.expandvars(entry)).expanduser()) for entry in deny_read)


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


def import_path(reference: str, folder: Path) -> Path:
    """Where a reference points: `~/…` from home, else relative to the importing file."""
    if reference.startswith("~/") or reference == "~":
        return Path(reference).expanduser()
    path = Path(reference)
    return path if path.is_absolute() else folder / path


def real(path: Path) -> Path:
    """The file a path names (symlinks followed), so one file linked twice is read once."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a link loop (an older Python)
        return path
