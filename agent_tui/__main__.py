"""`agent-tui` and `python -m agent_tui`: keep this import-light (no litellm, no Textual)."""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    from agent_tui.cli import main as cli_main

    return cli_main(argv)


def run() -> None:
    """Console entry: exit without tearing down litellm's module graph (~1.5 s)."""
    code = main()
    if "litellm" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
