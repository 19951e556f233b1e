"""`agent-tui run "…" | head`: when whatever reads the answer stops reading, agent-tui
stops the turn and exits quietly, as `git log | head` does: no traceback, what streamed
is kept, nothing it started keeps running. Driven as a real subprocess whose stdout pipe
the test closes, against the fake OpenAI server."""

from __future__ import annotations

import json
import signal

import pytest

from tests.engine_helpers import run_cli
from tests.fake_openai import FakeOpenAI, Text
from tests.serve_helpers import serve
from tests.test_faults_crash import (
    STARTUP_TIMEOUT,
    db_rows,
    read_until,
    reaped,
    spawn,
    wait_for,
)
from tests.test_provider_process import gone, provider_processes

LONG = " ".join(f"word{i}" for i in range(3000))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_reader_that_stops_reading_ends_the_run_quietly(
    configured: FakeOpenAI, isolated, fmt: str
) -> None:
    configured.script(Text(LONG, chunk_size=8, delay=0.01))  # ~30 s if read to the end
    with reaped(spawn(isolated, "run", "--format", fmt, "tell me a long story")) as proc:
        read_until(proc, b"word1", STARTUP_TIMEOUT)
        workers = provider_processes(proc.pid)
        assert proc.stdout is not None
        proc.stdout.close()  # `| head -c 100` has read what it wanted
        _, stderr = proc.communicate(timeout=20)
    err = stderr.decode()
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert err.strip() == "", err  # nothing to report: the reader chose to stop
    assert proc.returncode == 128 + signal.SIGPIPE  # what `yes | head` leaves
    assert all(gone(pid) for pid in workers)
    rows = db_rows("SELECT data FROM part WHERE type = 'text'")
    streamed = [json.loads(row[0])["text"] for row in rows]
    assert any(text.startswith("word0 word1") for text in streamed)  # what streamed is kept
    assert not any(text == LONG for text in streamed)  # the turn stopped, not finished


def test_a_listing_piped_to_a_reader_that_closed_exits_quietly(
    configured: FakeOpenAI, isolated, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Text(LONG))
    code, _, err = run_cli(capsys, "run", "a long answer to export")
    assert code == 0, err
    code, out, _ = run_cli(capsys, "sessions", "--json")
    session_id = json.loads(out)[0]["id"]
    with reaped(spawn(isolated, "export", session_id)) as proc:
        assert proc.stdout is not None
        proc.stdout.close()  # closed before export writes a byte
        _, stderr = proc.communicate(timeout=60)
    assert stderr.decode().strip() == ""
    assert proc.returncode == 128 + signal.SIGPIPE


def test_an_attached_run_whose_reader_stops_reading_ends_quietly(
    configured: FakeOpenAI, isolated
) -> None:
    """`run --attach URL … | head` ends as `run` does here: the turn is cancelled on the
    server (what streamed is kept there), agent-tui exits 141 without a word."""
    with serve(isolated) as server:
        configured.script(Text(LONG, chunk_size=8, delay=0.01))  # ~30 s if read to the end
        argv = ("run", "--attach", server.url, "tell me a long story")
        with reaped(spawn(isolated, *argv)) as proc:
            read_until(proc, b"word1", STARTUP_TIMEOUT)
            assert proc.stdout is not None
            proc.stdout.close()
            _, stderr = proc.communicate(timeout=20)
        assert stderr.decode().strip() == "", stderr.decode()
        assert proc.returncode == 128 + signal.SIGPIPE

        def ended() -> bool:
            rows = db_rows("SELECT info FROM message WHERE role = 'assistant'")
            return any(json.loads(row[0]).get("completed") for row in rows)

        wait_for(ended, "the server ending the turn", timeout=20)
        rows = db_rows("SELECT data FROM part WHERE type = 'text'")
        streamed = [json.loads(row[0])["text"] for row in rows]
        assert any(text.startswith("word0 word1") for text in streamed)
        assert not any(text == LONG for text in streamed)  # cancelled, not finished
