"""Undo / redo of turns: real git snapshots, real files, the fake OpenAI server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent_tui.session import undo as turns
from agent_tui.storage.snapshot import Snapshots
from tests.engine_helpers import conversation, edit, open_engine, run_cli, text_of, write
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls


def bash(command: str) -> ToolCalls:
    return ToolCalls([Call("bash", json.dumps({"command": command, "description": "files"}))])


def git(project: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=project, check=True, capture_output=True, text=True
    ).stdout


def init_repo(project: Path) -> None:
    who = ("-c", "user.email=a@b", "-c", "user.name=a")
    git(project, "init", "-q")
    git(project, *who, "add", "-A")
    git(project, *who, "commit", "-qm", "start", "--allow-empty")


@pytest.mark.parametrize("repo", [True, False], ids=["git-repo", "plain-dir"])
async def test_undo_restores_write_edit_and_bash(
    configured: FakeOpenAI, isolated: Path, repo: bool
) -> None:
    project = isolated
    (project / "keep.txt").write_text("keep\n")
    (project / "old.txt").write_text("old\n")
    (project / ".gitignore").write_text("ignored/\n")
    (project / "ignored").mkdir()
    (project / "ignored" / "big.log").write_text("log\n")
    if repo:
        init_repo(project)
        status_before = git(project, "status", "--porcelain")
        head_before = git(project, "rev-parse", "HEAD")
    configured.script(
        write(project / "new.txt", "new\n"),
        edit(project / "keep.txt", "keep", "kept"),
        bash("mkdir -p made && echo hi > made/a.txt && rm old.txt"),
        Text("done"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(project)
        await engine.prompt(session.id, "change things")
        assert (project / "new.txt").exists() and not (project / "old.txt").exists()
        assert (project / "keep.txt").read_text() == "kept\n"
        stats = await turns.numstat(await engine.scope(session.id))
        assert stats["keep.txt"] == (1, 1) and stats["new.txt"] == (1, 0)
        assert stats["old.txt"] == (0, 1) and stats["made/a.txt"] == (1, 0)
        assert "+kept" in await turns.diff(await engine.scope(session.id))

        done = await turns.undo(await engine.scope(session.id))
        assert done.prompt == "change things"
        assert done.files == ["keep.txt", "made/a.txt", "new.txt", "old.txt"]
        assert not (project / "new.txt").exists() and not (project / "made" / "a.txt").exists()
        assert (project / "old.txt").read_text() == "old\n"
        assert (project / "keep.txt").read_text() == "keep\n"
        assert (project / "ignored" / "big.log").read_text() == "log\n"
        assert await turns.numstat(await engine.scope(session.id)) == {}

        await turns.redo(await engine.scope(session.id))
        assert (project / "made" / "a.txt").read_text() == "hi\n"
        assert (project / "keep.txt").read_text() == "kept\n"
        assert not (project / "old.txt").exists()
    if repo:
        # The person's repository saw nothing: same HEAD, and only the agent's own
        # changes (redone) differ from the commit.
        assert git(project, "rev-parse", "HEAD") == head_before
        assert status_before == ""
        status = git(project, "status", "--porcelain")
        assert set(status.split("\n")) - {""} == {
            " M keep.txt",
            " D old.txt",
            "?? made/",
            "?? new.txt",
        }
        assert "snapshot" not in git(project, "for-each-ref")
    else:
        assert not (project / ".git").exists()


async def test_two_undos_then_redo_and_the_model_no_longer_sees_them(
    configured: FakeOpenAI, isolated: Path
) -> None:
    project = isolated
    target = project / "a.txt"
    configured.script(
        write(target, "one\n"),
        Text("first done"),
        edit(target, "one", "two"),
        Text("second done"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(project)
        await engine.prompt(session.id, "first prompt")
        await engine.prompt(session.id, "second prompt")
        assert target.read_text() == "two\n"

        assert (await turns.undo(await engine.scope(session.id))).prompt == "second prompt"
        assert target.read_text() == "one\n"
        assert (await turns.undo(await engine.scope(session.id))).prompt == "first prompt"
        assert not target.exists()
        with pytest.raises(Exception, match="Nothing to undo"):
            await turns.undo(await engine.scope(session.id))

        assert (await turns.redo(await engine.scope(session.id))).prompt == "first prompt"
        assert target.read_text() == "one\n"

        configured.script(Text("third"))
        await engine.prompt(session.id, "third prompt")
        sent = "\n".join(text_of(m) for m in conversation(configured.requests[-1]))
        assert "first prompt" in sent and "first done" in sent
        assert "second prompt" not in sent and "second done" not in sent
        # A new message ends the redo: the second turn stays undone.
        with pytest.raises(Exception, match="Nothing to redo"):
            await turns.redo(await engine.scope(session.id))
        export = await engine.ctx.db.export_session(session.id)
        undone = [m.info.id for m in export.messages if m.info.undone]
        assert len(undone) == 3  # the second prompt and its two steps, kept in the database


def test_a_file_changed_since_is_not_overwritten(
    configured: FakeOpenAI, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = isolated
    target = project / "a.txt"
    configured.script(write(target, "agent\n"), Text("done"))
    assert run_cli(capsys, "run", "write a.txt")[0] == 0
    target.write_text("mine\n")
    code, _, err = run_cli(capsys, "undo", "--continue")
    assert code != 0 and "a.txt" in err and "Nothing was changed" in err
    assert target.read_text() == "mine\n"

    code, out, err = run_cli(capsys, "undo", "--continue", "--force")
    assert code == 0, err
    assert "a.txt" in out and not target.exists()
    assert "\n  a.txt" not in out and out.count("Overwritten") == 1, out  # said once each
    code, out, err = run_cli(capsys, "redo", "--continue")
    assert code == 0, err
    assert target.read_text() == "agent\n"
    code, _, err = run_cli(capsys, "redo", "--continue")
    assert code != 0 and "Nothing to redo" in err


async def test_undo_without_snapshots_says_so(configured: FakeOpenAI, isolated: Path) -> None:
    from tests.conftest import write_config

    write_config(isolated, configured, snapshot=False)
    configured.script(write(isolated / "a.txt", "x\n"), Text("done"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "write")
        with pytest.raises(Exception, match="no snapshot was taken"):
            await turns.undo(await engine.scope(session.id))
        assert (isolated / "a.txt").exists()


async def test_snapshot_honours_gitignore_and_skips_git_dir(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    init_repo(work)
    (work / ".gitignore").write_text("*.log\n")
    (work / "a.log").write_text("x")
    (work / "b.txt").write_text("b")
    snapshots = Snapshots(work, tmp_path / "snap")
    first = await snapshots.track()
    assert first is not None
    (work / "b.txt").write_text("bb")
    (work / "c.log").write_text("c")
    second = await snapshots.track()
    assert second is not None
    assert await snapshots.changed_files(first, second) == ["b.txt"]
    listed = subprocess.run(
        ["git", "--git-dir", str(snapshots.git_dir), "ls-tree", "-r", "--name-only", second],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert listed == [".gitignore", "b.txt"]


async def test_a_snapshot_never_holds_agent_tuis_own_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project that contains the data dir (agent-tui run in the home directory)."""
    work = tmp_path / "home"
    data = work / ".local" / "agent-tui"
    monkeypatch.setenv("AGENT_TUI_DATA_DIR", str(data))
    (data / "tool-output").mkdir(parents=True)
    (data / "agent-tui.db").write_text("database")
    (work / "notes.txt").write_text("mine")
    snapshots = Snapshots(work, data / "snapshot")
    first = await snapshots.track()
    (data / "tool-output" / "tool_1.txt").write_text("saved output")
    second = await snapshots.track()
    assert first == second, "agent-tui's own files changed, the snapshot did not"
    listed = subprocess.run(
        ["git", "--git-dir", str(snapshots.git_dir), "ls-tree", "-r", "--name-only", second],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert listed == ["notes.txt"]


async def test_an_editor_is_asked_before_an_undo_overwrites_the_persons_changes(
    configured: FakeOpenAI, isolated: Path
) -> None:
    """Over ACP the conflict is a permission question (command/turns.py through
    acp/person_editor.py): no leaves the file as the person left it, yes overwrites it."""
    from acp.exceptions import RequestError

    from tests.acp_client import RecordingClient, acp_agent, prompt

    target = isolated / "a.txt"
    configured.script(write(target, "agent\n"), Text("done"))
    answers = iter(["no", "yes"])
    client = RecordingClient(answer=lambda call, options: next(answers))
    async with acp_agent(client, isolated) as (conn, _):
        sid = (await conn.new_session(cwd=str(isolated), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=prompt("write a.txt"))
        target.write_text("mine\n")
        with pytest.raises(RequestError, match="Nothing was changed"):
            await conn.prompt(session_id=sid, prompt=prompt("/undo"))
        assert target.read_text() == "mine\n"
        await conn.prompt(session_id=sid, prompt=prompt("/undo"))
    (first, options), (second, _) = [(c, o) for _, c, o in client.permissions]
    assert first.title == "Undo and overwrite your changes?" and "a.txt" in str(first.content)
    assert [o.name for o in options] == ["Overwrite", "No"]
    assert second.title == first.title and not target.exists()
    assert "Turn undone" in client.text(sid) and "Overwritten" in client.text(sid)
