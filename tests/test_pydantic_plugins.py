"""No process of agent-tui scans the installed distributions for pydantic plugins
(agent_tui/pydantic_plugins.py): the app's data models and the config's are built
without it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.process_helpers import python_argv

ROOT = Path(__file__).resolve().parent.parent

SCANS = """
import importlib.metadata, sys
scans = []
real = importlib.metadata.entry_points
def entry_points(**selection):
    scans.append(selection.get("group"))
    return real(**selection)
importlib.metadata.entry_points = entry_points
import {module}
print(scans.count("pydantic"))
"""


def test_no_plugin_scan_for_the_data_models_or_the_config() -> None:
    for module in ("agent_tui.session.newest_page", "agent_tui.config.settings"):
        done = subprocess.run(
            python_argv("-c", SCANS.format(module=module)),
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["0"], module


def test_the_data_models_import_no_distribution_metadata() -> None:
    """Reading the newest page before the first frame: `importlib.metadata` (~10 ms)
    is no part of it."""
    code = "import sys, agent_tui.session.newest_page; print('importlib.metadata' in sys.modules)"
    done = subprocess.run(
        python_argv("-c", code), capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]
