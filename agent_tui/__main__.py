"""`agent-tui` and `python -m agent_tui`: keep this import-light (no litellm, no Textual)."""

from __future__ import annotations

import contextlib
import os
import sys

from agent_tui.entry import here


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["run"]:
        from agent_tui.prefork import handover  # os, sys, socket and json only

        code = handover.try_run(args)  # in a child of the prefork, imported already
        if code is not None:
            return code
    return here(args)


def run() -> None:
    """Console entry: exit without tearing the interpreter down (a long while for the
    engine's modules, longer with litellm's): whatever must be saved is closed by now (the
    database, the provider process, tools' processes: `cli.main`'s `finally`)."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`| head`)
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
