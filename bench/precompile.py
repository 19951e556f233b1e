"""agent_tui's modules compiled before a start-up is timed, as after any first run: where
PYTHONDONTWRITEBYTECODE is set (this machine's shells), every launch would compile them
again (~0.2 s). Used by bench_engine.py, bench_tui.py,
claude_reopen.py and claude_echo.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agent_tui"


def compile_bytecode() -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(PACKAGE)], check=True)
