"""Turn sqlite3 failures into StorageError messages a person can act on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agent_tui.errors import StorageError

_ELSEWHERE = "or set AGENT_TUI_DATA_DIR to use another data directory"


def not_a_database(path: Path, detail: str = "") -> StorageError:
    why = f" ({detail})" if detail else ""
    return StorageError(
        f"{path} is not a SQLite database{why}, so agent-tui cannot use it as its "
        f"session store. The file was left untouched. Move it aside (for example "
        f"`mv '{path}' '{path}.bad'`) to let agent-tui start a fresh database there, "
        f"{_ELSEWHERE}."
    )


def foreign_database(path: Path) -> StorageError:
    return StorageError(
        f"{path} is a SQLite database that was not created by agent-tui (it has tables "
        f"but no schema_version table). The file was left untouched. Move it aside or "
        f"{_ELSEWHERE}."
    )


def corrupted(path: Path, detail: str) -> StorageError:
    return StorageError(
        f"The agent-tui database {path} is corrupted ({detail}). Nothing was changed. "
        f"Move it aside (`mv '{path}' '{path}.bad'`) to start a fresh database, try "
        f"`sqlite3 '{path}.bad' .recover | sqlite3 '{path}'` to salvage sessions, "
        f"{_ELSEWHERE}."
    )


def unreadable(path: Path, detail: str) -> StorageError:
    return StorageError(
        f"agent-tui cannot open its database {path}: {detail}. Check that the path is "
        f"a regular file that you can read and write, in a directory you can write "
        f"(SQLite keeps -wal and -shm files beside it), {_ELSEWHERE}."
    )


def locked(path: Path) -> StorageError:
    return StorageError(
        f"The agent-tui database {path} is locked: another agent-tui process is "
        f"holding it and did not release it within the busy timeout. Wait for that "
        f"process to finish (or close it) and try again, {_ELSEWHERE}."
    )


def newer_schema(path: Path, found: int, known: int) -> StorageError:
    return StorageError(
        f"The database {path} was written by a newer agent-tui (schema version {found}; "
        f"this agent-tui knows versions up to {known}). It was left untouched. Upgrade "
        f"agent-tui (`pip install -U agent-tui`) to use it, {_ELSEWHERE}."
    )


def migration_failed(path: Path, version: int, detail: str) -> StorageError:
    return StorageError(
        f"Upgrading the database {path} to schema version {version} failed ({detail}). "
        f"The upgrade was rolled back, so the database is as it was. Please report this "
        f"as an agent-tui bug; meanwhile {_ELSEWHERE.removeprefix('or ')}."
    )


def translate(exc: sqlite3.Error, path: Path) -> StorageError:
    """Map a sqlite3 error to the StorageError that explains it."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    lowered = text.lower()
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in lowered:
        return locked(path)
    if name.startswith("SQLITE_NOTADB") or "not a database" in lowered:
        return not_a_database(path, text)
    if name.startswith("SQLITE_CORRUPT") or "malformed" in lowered:
        return corrupted(path, text)
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_READONLY", "SQLITE_AUTH")) or (
        "unable to open" in lowered or "readonly" in lowered
    ):
        return unreadable(path, text)
    if name.startswith("SQLITE_FULL"):
        return StorageError(f"Cannot write the agent-tui database {path}: the disk is full.")
    return StorageError(f"agent-tui database error on {path}: {text}")
