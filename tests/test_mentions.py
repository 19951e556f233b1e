"""`@path` mentions: the file (read tool format) or folder listing reaches the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_tui.context.restate import person_texts
from agent_tui.records import TextPart
from agent_tui.session.mentions import FileIndex, mentioned_paths
from agent_tui.tool.walk import walk_project_files
from tests.engine_helpers import open_engine, run_cli, text_of
from tests.fake_openai import FakeOpenAI, Text


def last_user(request: dict) -> str:
    return text_of([m for m in request["messages"] if m["role"] == "user"][-1])


def test_file_mention_in_run_attaches_numbered_content(
    configured: FakeOpenAI, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (isolated / "src").mkdir()
    (isolated / "src" / "app.py").write_text("import os\nprint('mention-me')\n")
    configured.script(Text("Seen."))
    code, _, err = run_cli(capsys, "run", "explain @src/app.py, please")
    assert code == 0, err
    sent = last_user(configured.requests[-1])
    assert sent.startswith("explain @src/app.py, please")
    assert '<file path="src/app.py">' in sent
    assert "     1\timport os\n     2\tprint('mention-me')" in sent
    assert "(End of file - 2 lines total)" in sent


def test_folder_mention_lists_and_unknown_word_stays_text(
    configured: FakeOpenAI, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (isolated / "pkg").mkdir()
    (isolated / "pkg" / "one.txt").write_text("1")
    (isolated / "pkg" / "two.txt").write_text("2")
    configured.script(Text("Seen."))
    code, _, err = run_cli(capsys, "run", "look at @pkg and @nothing here, mail me@pkg")
    assert code == 0, err
    sent = last_user(configured.requests[-1])
    assert '<directory path="pkg">' in sent
    assert "one.txt" in sent and "two.txt" in sent
    assert "@nothing" in sent and '<file path="nothing"' not in sent
    assert sent.count("<directory") == 1  # the e-mail address is not a mention


async def test_attachment_is_synthetic_and_not_restated(
    configured: FakeOpenAI, isolated: Path
) -> None:
    (isolated / "notes.md").write_text("secret plans\n")
    configured.script(Text("Ok."))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "read @notes.md")
        messages = await engine.ctx.db.all_messages(session.id)
    parts = [p for p in messages[0].parts if isinstance(p, TextPart)]
    assert [p.synthetic for p in parts] == [False, True]
    assert "secret plans" in parts[1].text
    assert person_texts(messages) == ["read @notes.md"]


def test_mentioned_paths() -> None:
    # Trailing punctuation is dropped when the path is resolved, if it does not exist.
    assert mentioned_paths("see @a.py and @b/c, not x@y.z or @a.py") == ["a.py", "b/c,"]


def test_walk_honours_gitignore(tmp_path: Path) -> None:
    tmp_path = tmp_path / "tree"  # beside the test's config and data dirs
    tmp_path.mkdir()
    (tmp_path / ".gitignore").write_text("*.log\nbuild/\n/top.txt\n!keep.log\n")
    for rel in ["a.py", "x.log", "keep.log", "top.txt", "sub/top.txt", "build/out.js"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    (tmp_path / "sub" / ".gitignore").write_text("local.txt\n")
    (tmp_path / "sub" / "local.txt").write_text("")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("")
    assert walk_project_files(tmp_path) == [
        ".gitignore",
        "a.py",
        "keep.log",
        "sub/.gitignore",
        "sub/top.txt",
    ]


def test_fuzzy_filter_ranks_file_names_first() -> None:
    index = FileIndex(["docs/app_notes.md", "src/app.py", "agent/pp.py", "zzz.txt"])
    assert index.filter("app")[:2] == ["src/app.py", "docs/app_notes.md"]
    assert index.filter("apy") == ["src/app.py", "agent/pp.py"]
    assert index.filter("apyy") == []  # narrowed from the matches of "apy"
    assert index.filter("appy") == ["src/app.py", "agent/pp.py"]
    assert index.filter("srcapp") == ["src/app.py"]
    assert index.filter("") == index.paths
