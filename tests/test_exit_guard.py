"""The test run ends when pytest has reported, even when a failing test leaked a thread."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

LEAKY = """
import threading

stop = threading.Event()


def test_fails_and_leaks_a_thread():
    threading.Thread(target=stop.wait, name="left-open").start()  # not a daemon
    assert False, "deliberate"
"""


def test_a_failing_test_that_leaks_a_thread_does_not_hang_the_run(tmp_path: Path) -> None:
    (tmp_path / "test_leaky.py").write_text(LEAKY)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.exit_guard",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_leaky.py"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # pytest's "tests failed"
    assert "1 failed" in done.stdout
    assert "left-open" in done.stderr and "did not close" in done.stderr


def test_a_passing_run_keeps_its_status(tmp_path: Path) -> None:
    (tmp_path / "test_fine.py").write_text("def test_fine():\n    assert True\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.exit_guard",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_fine.py"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "exit_guard" not in done.stderr
