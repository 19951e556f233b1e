"""A database agent-tui cannot use, seen from the command line: one clear paragraph
naming the file and what to do, exit code 1, no traceback, and the file left as it was."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from agent_tui import paths
from agent_tui.storage.schema import latest_version
from tests.engine_helpers import run_cli
from tests.fake_openai import FakeOpenAI


def one_paragraph(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("agent-tui: ")
    return lines[0]


def siblings(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir()}


@pytest.fixture
def db_path() -> Path:
    path = paths.database_path()
    path.parent.mkdir(parents=True)
    return path


def test_random_bytes_database(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    garbage = os.urandom(64 * 1024)
    db_path.write_bytes(garbage)
    for argv in (["sessions"], ["sessions", "--json"], ["export", "ses_x"], ["context"]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 1, argv
        assert out == ""
        message = one_paragraph(err)
        assert str(db_path) in message
        assert "not a SQLite database" in message
        assert "left untouched" in message and "Move it aside" in message
        assert "AGENT_TUI_DATA_DIR" in message
    assert db_path.read_bytes() == garbage
    assert siblings(db_path) == {db_path.name}  # no -wal / -shm / journal created


def test_random_bytes_database_refuses_run_before_calling_the_model(
    db_path: Path, configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage = os.urandom(10_000)
    db_path.write_bytes(garbage)
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 1
    assert str(db_path) in one_paragraph(err)
    assert configured.requests == []
    assert db_path.read_bytes() == garbage


def test_sqlite_header_followed_by_garbage(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = b"SQLite format 3\x00" + os.urandom(8 * 1024)
    db_path.write_bytes(data)
    code, _, err = run_cli(capsys, "sessions")
    assert code == 1
    message = one_paragraph(err)
    assert str(db_path) in message
    assert "corrupted" in message or "not a SQLite database" in message
    assert db_path.read_bytes() == data


def test_newer_schema_version(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with sqlite3.connect(db_path) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (?)", (latest_version() + 7,))
    conn.close()
    before = db_path.read_bytes()
    code, _, err = run_cli(capsys, "sessions")
    assert code == 1
    message = one_paragraph(err)
    assert str(db_path) in message
    assert "newer agent-tui" in message
    assert f"schema version {latest_version() + 7}" in message
    assert "pip install -U agent-tui" in message
    assert db_path.read_bytes() == before


def test_another_applications_database(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with sqlite3.connect(db_path) as conn:
        conn.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO photos (name) VALUES ('holiday.jpg')")
    conn.close()
    before = db_path.read_bytes()
    code, _, err = run_cli(capsys, "sessions")
    assert code == 1
    message = one_paragraph(err)
    assert str(db_path) in message and "not created by agent-tui" in message
    assert db_path.read_bytes() == before


def test_data_dir_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("I am a file")
    monkeypatch.setenv("AGENT_TUI_DATA_DIR", str(blocker))
    code, _, err = run_cli(capsys, "sessions")
    assert code == 1
    message = one_paragraph(err)
    assert str(blocker) in message
    assert "cannot" in message and "AGENT_TUI_DATA_DIR" in message
    assert blocker.read_text() == "I am a file"


def test_database_path_is_a_directory(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_path.mkdir()
    code, _, err = run_cli(capsys, "sessions", "--json")
    assert code == 1
    message = one_paragraph(err)
    assert str(db_path) in message and "directory" in message
    assert db_path.is_dir() and not any(db_path.iterdir())


def test_a_good_database_still_works_after_the_fault_is_cleared(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Following the advice in the message (move the file aside) gives a fresh store."""
    db_path.write_bytes(os.urandom(4096))
    assert run_cli(capsys, "sessions")[0] == 1
    db_path.rename(db_path.with_name(db_path.name + ".bad"))
    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert code == 0 and json.loads(out) == []
