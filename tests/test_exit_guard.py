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


def run_pytest_on(tmp_path: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    """pytest with the plugin, as a process of its own, on one test file `name`."""
    (tmp_path / name).write_text(source)
    plugin = ["-p", "tests.exit_guard", "-p", "no:cacheprovider"]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *plugin,
            "-q",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / name),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_a_failing_test_that_leaks_a_thread_does_not_hang_the_run(tmp_path: Path) -> None:
    done = run_pytest_on(tmp_path, "test_leaky.py", LEAKY)
    assert done.returncode == 1, done.stdout + done.stderr  # pytest's "tests failed"
    assert "1 failed" in done.stdout
    assert "left-open" in done.stderr and "did not close" in done.stderr


def test_a_passing_run_keeps_its_status(tmp_path: Path) -> None:
    done = run_pytest_on(tmp_path, "test_fine.py", "def test_fine():\n    assert True\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "exit_guard" not in done.stderr
