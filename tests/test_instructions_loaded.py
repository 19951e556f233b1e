"""Claude Code's InstructionsLoaded hook (issue 51): each memory file as a session starts
(`session_start`; an import `include` with `parent_file_path`), a path-scoped rule once
the model works on a matching file (`path_glob_match`, `globs`, `trigger_file_path`) and
a folder's CLAUDE.md below the working directory once it works on a file there
(`nested_traversal`), each once; `memory_type` Project, Local or User. Observe-only, as in
Claude Code: a hook that blocks changes nothing. Checked against the payloads Claude Code
2.1.197 sent (tests/fixtures/claude_code_hooks/InstructionsLoaded.*.json) with the real
`run` command and hook scripts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import person_config
from tests.engine_helpers import run_cli
from tests.fake_openai import FakeOpenAI, Text
from tests.hook_shapes import RECORDED
from tests.test_hook_contract import call, events, logging_hook

EVENT = "InstructionsLoaded"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def project_with_memory(project: Path) -> None:
    """The shapes of Claude Code's recording (CLAUDE.md importing docs/extra.md, a rule
    for src/**/*.py), with a CLAUDE.local.md, the person's own and a folder's CLAUDE.md."""
    write(project / "CLAUDE.md", "PROJECT-MEMORY, see @docs/extra.md\n")
    write(project / "docs" / "extra.md", "EXTRA\n")
    write(project / "CLAUDE.local.md", "LOCAL\n")
    write(
        project / ".claude" / "rules" / "python.md", '---\npaths: ["src/**/*.py"]\n---\nPY-RULE\n'
    )
    write(project / "src" / "app.py", "def main():\n    return 'hello'\n")
    write(project / "sub" / "CLAUDE.md", "SUB-MEMORY\n")
    write(project / "sub" / "x.py", "x = 1\n")
    write(Path(os.environ["CLAUDE_CONFIG_DIR"]) / "CLAUDE.md", "MINE\n")


def by_reason(log: Path) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for event in events(log, EVENT):
        found.setdefault(event["load_reason"], []).append(event)
    return found


def recorded_keys(reason: str) -> set[str]:
    data = json.loads((RECORDED / f"{EVENT}.{reason}.json").read_text())
    return set(data["input"])


def test_each_memory_file_fires_once_with_claude_codes_fields(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = Path.cwd()
    project_with_memory(project)
    log, nested_log = tmp_path / "events.jsonl", tmp_path / "nested.jsonl"
    blocking = {"decision": "block", "continue": False, "reason": "no"}  # observe-only
    person_config(
        {
            "hooks": {
                EVENT: [
                    logging_hook(log, blocking),
                    logging_hook(nested_log, matcher="nested_traversal"),
                ]
            }
        }
    )
    configured.script(
        call("read", "c1", file_path="src/app.py"),
        call("read", "c2", file_path="sub/x.py"),
        call("read", "c3", file_path="src/app.py"),
        Text("done"),
    )
    code, out, err = run_cli(capsys, "run", "work")
    assert code == 0 and "done" in out, err
    assert len(configured.requests) == 4  # nothing a hook said stopped the turn
    assert "PY-RULE" in json.dumps(configured.requests[1]["messages"])  # nor left the rule out
    found = by_reason(log)
    started = {(Path(e["file_path"]).name, e["memory_type"]) for e in found["session_start"]}
    claude_home = Path(os.environ["CLAUDE_CONFIG_DIR"])
    assert started == {
        ("CLAUDE.md", "Project"),
        ("CLAUDE.local.md", "Local"),
        ("CLAUDE.md", "User"),
    }
    assert {e["file_path"] for e in found["session_start"]} >= {str(claude_home / "CLAUDE.md")}
    (include,) = found["include"]
    assert include["file_path"] == str(project / "docs" / "extra.md")
    assert include["parent_file_path"] == str(project / "CLAUDE.md")
    assert include["memory_type"] == "Project"
    (rule,) = found["path_glob_match"]  # once, though src/app.py was read twice
    assert rule["file_path"] == str(project / ".claude" / "rules" / "python.md")
    assert rule["globs"] == ["src/**/*.py"] and rule["memory_type"] == "Project"
    assert rule["trigger_file_path"] == str(project / "src" / "app.py")
    (nested,) = found["nested_traversal"]
    assert nested["file_path"] == str(project / "sub" / "CLAUDE.md")
    assert nested["trigger_file_path"] == str(project / "sub" / "x.py")
    assert [e["load_reason"] for e in events(nested_log)] == ["nested_traversal"]
    # Claude Code's own fields, no more and no fewer.
    for reason in ("session_start", "include", "path_glob_match"):
        for event in found[reason]:
            assert set(event) - {"env"} == recorded_keys(reason), reason
    assert set(nested) - {"env"} == recorded_keys("path_glob_match") - {"globs"}
    # A later run in the same session: its start again, nothing already brought in.
    configured.script(call("read", "c4", file_path="src/app.py"), Text("again"))
    code, _, err = run_cli(capsys, "run", "--continue", "more")
    assert code == 0, err
    again = by_reason(log)
    assert len(again["session_start"]) == 6 and len(again["include"]) == 2
    assert len(again["path_glob_match"]) == 1 and len(again["nested_traversal"]) == 1
