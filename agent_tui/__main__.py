"""`agent-tui` and `python -m agent_tui`: keep this import-light (no litellm, no Textual)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from agent_tui.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
