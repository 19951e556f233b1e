"""Sessions in their own git worktrees (issue 53): `run -w` against the fake OpenAI
server in a real repository made with git; the worktree's layout, where the session
works, `.worktreeinclude`, what leaving does, and the trust carried into worktrees."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from agent_tui.config.settings import load_config
from agent_tui.project.custom_commands import load_custom_commands
from agent_tui.worktrees.git_worktree import create
from tests.conftest import cloned_project
from tests.engine_helpers import run_cli, write
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, check=True)
    return done.stdout


def commit_all(folder: Path) -> None:
    git(folder, "add", "-A")
    git(folder, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "work")


def make_repo(project: Path) -> Path:
    """The test's project as a git repository with one commit, an ignored `.env` and a
    `.worktreeinclude` naming it (and an ignored file it does not name)."""
    git(project, "init", "-q")
    (project / ".gitignore").write_text(".env\nbuild/\n")
    (project / ".worktreeinclude").write_text(".env\n")
    (project / "a.txt").write_text("from the main checkout\n")
    commit_all(project)
    (project / ".env").write_text("TOKEN=local\n")
    (project / "build").mkdir()
    (project / "build" / "out.bin").write_text("not included\n")
    return project


@pytest.fixture
def repo(configured: FakeOpenAI, isolated: Path) -> Path:
    return make_repo(isolated)


def sessions(capsys: pytest.CaptureFixture[str]) -> list[dict]:
    code, out, err = run_cli(capsys, "sessions", "--json")
    assert code == 0, err
    return json.loads(out)


def test_run_w_works_in_its_worktree_and_keeps_it_when_changed(
    repo: Path, configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    worktree = repo / ".claude" / "worktrees" / "feature"
    configured.script(
        write("new.txt", "made in the worktree\n"),
        ToolCalls([Call("bash", json.dumps({"command": "pwd; cat .env"}))]),
        ToolCalls([Call("bash", json.dumps({"command": f"touch {repo}/escaped.txt"}))]),
        Text("Done."),
    )
    code, _, err = run_cli(capsys, "run", "-w", "feature", "add new.txt")
    assert code == 0, err
    assert (worktree / "new.txt").read_text() == "made in the worktree\n"
    assert not (repo / "new.txt").exists()  # the main checkout is untouched
    assert not (repo / "escaped.txt").exists()  # the sandbox's root is the worktree
    pwd = configured.requests[2]["messages"][-1]["content"]
    assert str(worktree) in pwd and "TOKEN=local" in pwd
    assert (worktree / ".env").read_text() == "TOKEN=local\n"  # .worktreeinclude
    assert not (worktree / "build").exists()  # ignored, but not named there
    assert git(repo, "branch", "--list", "worktree-feature").strip()
    assert git(worktree, "rev-parse", "--abbrev-ref", "HEAD").strip() == "worktree-feature"
    assert git(repo, "status", "--porcelain") == ""  # the worktrees are no untracked files
    assert f"kept the worktree {worktree} (branch worktree-feature)" in err
    (listed,) = sessions(capsys)
    assert listed["directory"] == str(worktree)
    assert listed["worktree"]["path"] == str(worktree)
    assert listed["worktree"]["branch"] == "worktree-feature"
    assert listed["worktree"]["removed"] is False


def test_run_w_removes_an_unchanged_worktree_and_its_branch(
    repo: Path, configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Text("Nothing to change."))
    code, _, err = run_cli(capsys, "run", "-w", "look", "just look")
    assert code == 0, err
    assert not (repo / ".claude" / "worktrees" / "look").exists()
    assert git(repo, "branch", "--list", "worktree-look").strip() == ""
    assert "kept the worktree" not in err
    (listed,) = sessions(capsys)
    assert listed["worktree"]["branch"] == "worktree-look"
    assert listed["worktree"]["removed"] is True


def test_run_w_generates_a_name(
    repo: Path, configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(write("x.txt", "x\n"), Text("Done."))
    code, _, err = run_cli(capsys, "run", "go", "-w")
    assert code == 0, err
    (listed,) = sessions(capsys)
    path = Path(listed["worktree"]["path"])
    assert path.parent == repo / ".claude" / "worktrees" and path.name.count("-") == 2
    assert listed["worktree"]["branch"] == f"worktree-{path.name}"
    assert (path / "x.txt").is_file()


def test_w_outside_a_repository_says_so(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "run", "-w", "x", "go")
    assert code == 1
    assert "not in a git repository" in err and "git init" in err
    assert len(err.splitlines()) == 1
    assert configured.requests == []


def test_trust_carries_into_a_worktree_with_the_same_config(
    untrusted: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    cloned_project(untrusted, fake_llm, permission={"webfetch": "allow"})
    make_repo(untrusted)
    load_config(directory=untrusted, trust=True)  # the person trusts the main checkout
    fake_llm.script(Text("Fine."))
    code, _, err = run_cli(capsys, "run", "-w", "same", "go")
    assert code == 0, err
    assert "not trusted" not in err

    # The main checkout's config changed (and trusted so): the worktree, made from the
    # commit, differs, and is asked about as any untrusted project.
    (untrusted / "agent-tui.json").write_text(json.dumps({"permission": {"grep": "allow"}}))
    load_config(directory=untrusted, trust=True)
    fake_llm.script(Text("Fine."))
    code, _, err = run_cli(capsys, "run", "-w", "other", "go")
    assert code == 0, err
    assert "This project is not trusted" in err
    assert "agent-tui trust" in err


def test_the_worktrees_are_no_part_of_the_main_checkouts_config(repo: Path) -> None:
    before = load_config(directory=repo).project.files
    made = Path(asyncio.run(create(repo, "cfg")).path)
    (made / ".agent-tui" / "commands").mkdir(parents=True)
    (made / ".agent-tui" / "commands" / "x.md").write_text("hi\n")
    (made / ".claude" / "settings.json").parent.mkdir(exist_ok=True)
    (made / ".claude" / "settings.json").write_text('{"permissions": {"allow": ["Bash"]}}')
    assert load_config(directory=repo).project.files == before
    assert "x" not in load_custom_commands(repo, set()).commands
    assert git(repo, "status", "--porcelain") == ""


def test_enter_worktree_moves_the_session_once_the_person_allows_it(
    repo: Path, configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    worktree = repo / ".claude" / "worktrees" / "asked"
    enter = ToolCalls([Call("enter_worktree", json.dumps({"name": "asked"}))])
    configured.script(
        enter,
        write("moved.txt", "after the move\n"),
        ToolCalls([Call("bash", json.dumps({"command": f"pwd; touch {repo}/escaped.txt"}))]),
        Text("Done."),
    )
    code, _, err = run_cli(capsys, "run", "--allow", "enter_worktree", "work in a worktree")
    assert code == 0, err
    assert (worktree / "moved.txt").read_text() == "after the move\n"
    assert not (repo / "moved.txt").exists()
    assert not (repo / "escaped.txt").exists()  # the sandbox's root moved with it
    assert str(worktree) in configured.requests[3]["messages"][-1]["content"]
    assert f"kept the worktree {worktree} (branch worktree-asked)" in err
    (listed,) = sessions(capsys)
    assert listed["directory"] == str(worktree)
    assert listed["worktree"]["branch"] == "worktree-asked"


def test_enter_worktree_waits_for_the_persons_approval(
    repo: Path, configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(
        ToolCalls([Call("enter_worktree", json.dumps({"name": "refused"}))]), Text("Ok.")
    )
    code, _, err = run_cli(capsys, "run", "work in a worktree")
    assert code == 0, err
    (result,) = [m for m in configured.requests[1]["messages"] if m["role"] == "tool"]
    assert "The enter_worktree tool needs the person's approval" in result["content"]
    assert not (repo / ".claude" / "worktrees" / "refused").exists()
    (listed,) = sessions(capsys)
    assert listed["directory"] == str(repo) and listed["worktree"] is None


WRITER = """---
name: writer
description: Writes the files it is asked for
tools: Write
isolation: worktree
---
Write what you are asked to.
"""


def task_call(**arguments: str) -> ToolCalls:
    return ToolCalls([Call("task", json.dumps({"description": "go", "prompt": "go", **arguments}))])


def test_a_subagent_with_isolation_works_in_its_own_worktree(
    repo: Path, configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / ".claude" / "agents").mkdir(parents=True)
    (repo / ".claude" / "agents" / "writer.md").write_text(WRITER)
    configured.script(
        task_call(agent="writer"),  # the parent
        write("sub.txt", "from the subagent\n"),  # the subagent
        Text("Wrote sub.txt."),
        Text("Done."),  # the parent
    )
    code, _, err = run_cli(capsys, "run", "have it written")
    assert code == 0, err
    assert not (repo / "sub.txt").exists()
    (made,) = (repo / ".claude" / "worktrees").iterdir()
    assert (made / "sub.txt").read_text() == "from the subagent\n"
    result = [m for m in configured.requests[3]["messages"] if m["role"] == "tool"][-1]
    branch = f"worktree-{made.name}"
    assert f"changes are in the worktree {made}, on the branch {branch}" in result["content"]
    assert git(repo, "branch", "--list", branch).strip()
    parent, child = sorted(sessions(capsys), key=lambda s: s["depth"])
    assert parent["worktree"] is None and parent["directory"] == str(repo)
    assert child["directory"] == str(made) and child["worktree"]["branch"] == branch


def test_an_isolated_subagent_that_changed_nothing_leaves_no_worktree(
    repo: Path, configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(
        task_call(isolation="worktree"),
        ToolCalls([Call("list", "{}")]),
        Text("Looked around."),
        Text("Done."),
    )
    code, _, err = run_cli(capsys, "run", "look in isolation")
    assert code == 0, err
    listed = [m for m in configured.requests[2]["messages"] if m["role"] == "tool"][-1]
    assert "/.claude/worktrees/" in listed["content"]  # it ran there
    assert list((repo / ".claude" / "worktrees").iterdir()) == []
    assert git(repo, "branch", "--list", "worktree-*").strip() == ""


def test_worktreeinclude_copies_only_ignored_files_it_names(repo: Path) -> None:
    """gitignore syntax, read by git: a folder pattern, a glob, a negation; a tracked file
    is the worktree's own checkout, never overwritten from the main checkout."""
    (repo / ".gitignore").write_text(".env\nbuild/\nsecrets/\n*.local.json\n")
    (repo / ".worktreeinclude").write_text("secrets/\n*.local.json\n!skip.local.json\na.txt\n")
    commit_all(repo)
    (repo / "secrets" / "deep").mkdir(parents=True)
    (repo / "secrets" / "deep" / "dev.key").write_text("key\n")
    (repo / "app.local.json").write_text("{}\n")
    (repo / "skip.local.json").write_text("{}\n")
    (repo / "a.txt").write_text("changed in the main checkout\n")
    made = Path(asyncio.run(create(repo, "inc")).path)
    assert (made / "secrets" / "deep" / "dev.key").read_text() == "key\n"
    assert (made / "app.local.json").is_file()
    assert not (made / "skip.local.json").exists()
    assert not (made / ".env").exists()  # ignored, but no longer named
    assert (made / "a.txt").read_text() == "from the main checkout\n"  # tracked: as committed


def test_run_w_that_fails_before_its_session_leaves_no_worktree(
    repo: Path, configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "run", "-w", "early", "--agent", "nosuch", "go")
    assert code != 0 and "nosuch" in err
    assert not (repo / ".claude" / "worktrees" / "early").exists()
    assert git(repo, "branch", "--list", "worktree-early").strip() == ""
    assert Path.cwd() == repo  # back where it started


def test_a_commit_in_the_worktree_keeps_it(
    repo: Path, configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    """Committed work leaves `git status` clean: a commit beyond the base is a change."""
    commit = "echo x > c.txt && git add c.txt && git -c user.email=m@m -c user.name=m commit -qm c"
    configured.script(ToolCalls([Call("bash", json.dumps({"command": commit}))]), Text("Done."))
    code, _, err = run_cli(capsys, "run", "-w", "committed", "commit it")
    assert code == 0, err
    worktree = repo / ".claude" / "worktrees" / "committed"
    assert git(worktree, "status", "--porcelain") == ""
    assert git(repo, "log", "-1", "--format=%s", "worktree-committed").strip() == "c"
    assert f"kept the worktree {worktree}" in err
    assert git(repo, "log", "-1", "--format=%s").strip() == "work"  # main's branch as it was
