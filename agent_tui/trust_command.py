"""`agent-tui trust`: show a project's trust and what waits, grant it (asked on a
terminal, `--yes` otherwise), list the trusted projects, revoke one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agent_tui.config import load_config
from agent_tui.errors import UsageError
from agent_tui.trust import store
from agent_tui.workspace.describe import report


def trust_command(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    directory = Path(args.directory or ".").resolve()
    if not directory.is_dir():
        raise UsageError(f"agent-tui trust: {directory} is not a folder.")
    if args.revoke:
        gone = store.revoke(directory)
        print(f"{directory}: " + ("trust revoked." if gone else "was not trusted."))
        return 0
    project = load_config(directory=directory).project
    assert project is not None
    print(report(project))
    if project.trusted:
        return 0
    if not args.yes:
        if not sys.stdin.isatty():
            print("Not trusted: add --yes to trust it without a question.", file=sys.stderr)
            return 1
        answer = input("Trust this project? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("Not trusted.")
            return 1
    store.trust(directory, project.files)  # what the person was shown, as shown
    print(f"Trusted: {directory} (asked again when one of its files changes).")
    return 0


def _list() -> int:
    recorded = store.recorded()
    if not recorded:
        print("No project is trusted (your own config's trusted_projects aside).")
        return 0
    for directory, record in sorted(recorded.items()):
        print(f"{directory}  (since {record.get('at', '?')}, {len(record.get('files', {}))} files)")
    return 0
