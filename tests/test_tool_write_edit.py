from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_tui.errors import PermissionDenied, ToolError
from agent_tui.tool.base import ToolContext
from agent_tui.tool.edit import EditParams, EditTool
from agent_tui.tool.write import WriteParams, WriteTool


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir()
    return ToolContext("ses_test", "msg_test", "call_test", work, tmp_path / "tool-output")


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


async def write(ctx: ToolContext, file_path: str, content: str):
    return await WriteTool().execute(WriteParams(file_path=file_path, content=content), ctx)


async def edit(ctx: ToolContext, file_path: str, old: str, new: str, replace_all: bool = False):
    params = EditParams(
        file_path=file_path, old_string=old, new_string=new, replace_all=replace_all
    )
    return await EditTool().execute(params, ctx)


# write


async def test_write_creates_file_and_parent_dirs(ctx: ToolContext) -> None:
    result = await write(ctx, "deep/er/new.py", "print('hi')\n")
    path = ctx.directory / "deep" / "er" / "new.py"
    assert path.read_text() == "print('hi')\n"
    assert result.metadata["files"] == [str(path.resolve())]
    assert result.metadata["created"] is True
    assert "+print('hi')" in result.metadata["diff"]
    assert result.output.startswith("Created deep/er/new.py")
    assert leftovers(path.parent) == []
    assert path.stat().st_mode & 0o777 == 0o666 & ~current_umask()


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


async def test_write_overwrites_atomically_with_diff(ctx: ToolContext) -> None:
    path = ctx.directory / "a.txt"
    path.write_text("old line\nkept\n")
    path.chmod(0o751)
    inode = path.stat().st_ino
    result = await write(ctx, "a.txt", "new line\nkept\n")
    assert path.read_text() == "new line\nkept\n"
    assert path.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert path.stat().st_mode & 0o777 == 0o751  # mode kept
    diff = result.metadata["diff"]
    assert "-old line" in diff and "+new line" in diff and " kept" in diff
    assert result.metadata["additions"] == 1 and result.metadata["deletions"] == 1
    assert leftovers(ctx.directory) == []


async def test_write_failure_leaves_original_and_no_temp_file(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = ctx.directory / "a.txt"
    path.write_text("original\n")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device", str(dst))

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        await write(ctx, "a.txt", "new\n")
    assert path.read_text() == "original\n"
    assert leftovers(ctx.directory) == []


async def test_write_to_folder_is_an_error(ctx: ToolContext) -> None:
    (ctx.directory / "pkg").mkdir()
    with pytest.raises(ToolError, match="is a folder"):
        await write(ctx, "pkg", "x")


async def test_write_outside_needs_permission(ctx: ToolContext) -> None:
    with pytest.raises(PermissionDenied):
        await write(ctx, "../escape.txt", "x")
    assert not (ctx.directory.parent / "escape.txt").exists()


def test_write_describe_shows_diff_or_content(ctx: ToolContext) -> None:
    tool = WriteTool()
    title, detail = tool.describe(WriteParams(file_path="n.txt", content="hello\n"), ctx)
    assert (title, detail) == ("write n.txt", "hello\n")
    (ctx.directory / "n.txt").write_text("bye\n")
    title, detail = tool.describe(WriteParams(file_path="n.txt", content="hello\n"), ctx)
    assert "-bye" in detail and "+hello" in detail


# edit


async def test_edit_replaces_unique_string(ctx: ToolContext) -> None:
    path = ctx.directory / "m.py"
    path.write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    result = await edit(ctx, "m.py", "    return 1\n", "    return 10\n")
    assert path.read_text() == "def f():\n    return 10\n\ndef g():\n    return 2\n"
    assert result.metadata["files"] == [str(path.resolve())]
    assert result.metadata["additions"] == 1
    assert result.metadata["deletions"] == 1
    assert "-    return 1\n+    return 10" in result.metadata["diff"]
    assert leftovers(ctx.directory) == []


async def test_edit_refuses_ambiguous_match(ctx: ToolContext) -> None:
    path = ctx.directory / "m.py"
    path.write_text("x = 1\nx = 1\nx = 1\n")
    with pytest.raises(ToolError) as info:
        await edit(ctx, "m.py", "x = 1", "x = 2")
    message = str(info.value)
    assert "matches 3 times" in message
    assert "replace_all" in message
    assert path.read_text() == "x = 1\nx = 1\nx = 1\n"


async def test_edit_replace_all(ctx: ToolContext) -> None:
    path = ctx.directory / "m.py"
    path.write_text("x = 1\nx = 1\n")
    result = await edit(ctx, "m.py", "x = 1", "x = 2", replace_all=True)
    assert path.read_text() == "x = 2\nx = 2\n"
    assert result.metadata["replacements"] == 2
    assert "2 occurrences" in result.output


async def test_edit_old_string_not_found(ctx: ToolContext) -> None:
    (ctx.directory / "m.py").write_text("def f():\n    pass\n")
    with pytest.raises(ToolError) as info:
        await edit(ctx, "m.py", "def g():", "def h():")
    assert str(info.value).startswith(
        "old_string not found in m.py. Read the file first and copy the exact text including "
        "whitespace."
    )


async def test_edit_not_found_hints_at_whitespace(ctx: ToolContext) -> None:
    (ctx.directory / "m.py").write_text("a\n    pass\n")
    with pytest.raises(ToolError, match="appears at line 2"):
        await edit(ctx, "m.py", "  pass  ", "return")


async def test_edit_identical_strings(ctx: ToolContext) -> None:
    (ctx.directory / "m.py").write_text("a\n")
    with pytest.raises(ToolError, match="identical"):
        await edit(ctx, "m.py", "a", "a")


async def test_edit_missing_file(ctx: ToolContext) -> None:
    (ctx.directory / "main.py").write_text("")
    with pytest.raises(ToolError, match="Did you mean"):
        await edit(ctx, "mian.py", "a", "b")


async def test_edit_empty_old_string_creates_file(ctx: ToolContext) -> None:
    result = await edit(ctx, "pkg/new.py", "", "VALUE = 1\n")
    assert (ctx.directory / "pkg" / "new.py").read_text() == "VALUE = 1\n"
    assert "+VALUE = 1" in result.metadata["diff"]
    assert result.output.startswith("Created pkg/new.py")


async def test_edit_empty_old_string_fills_an_empty_file(ctx: ToolContext) -> None:
    (ctx.directory / "e.txt").write_text("")
    await edit(ctx, "e.txt", "", "content\n")
    assert (ctx.directory / "e.txt").read_text() == "content\n"


async def test_edit_empty_old_string_on_existing_content_is_an_error(ctx: ToolContext) -> None:
    (ctx.directory / "e.txt").write_text("keep me\n")
    with pytest.raises(ToolError, match="already exists and is not empty"):
        await edit(ctx, "e.txt", "", "content\n")
    assert (ctx.directory / "e.txt").read_text() == "keep me\n"


async def test_edit_keeps_crlf_line_endings(ctx: ToolContext) -> None:
    path = ctx.directory / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    # The model copies text from read, which shows lines without \r.
    await edit(ctx, "win.txt", "two\nthree", "2\n3")
    assert path.read_bytes() == b"one\r\n2\r\n3\r\n"


async def test_edit_keeps_bytes_that_are_not_utf8(ctx: ToolContext) -> None:
    path = ctx.directory / "legacy.txt"
    path.write_bytes(b"caf\xe9\nold\n")
    await edit(ctx, "legacy.txt", "old", "new")
    assert path.read_bytes() == b"caf\xe9\nnew\n"


async def test_edit_failure_leaves_original(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = ctx.directory / "a.txt"
    path.write_text("before\n")

    def broken_replace(src: str, dst: str) -> None:
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(PermissionError):
        await edit(ctx, "a.txt", "before", "after")
    assert path.read_text() == "before\n"
    assert leftovers(ctx.directory) == []


def test_edit_describe_returns_the_diff(ctx: ToolContext) -> None:
    (ctx.directory / "m.py").write_text("a = 1\n")
    params = EditParams(file_path="m.py", old_string="a = 1", new_string="a = 2")
    title, detail = EditTool().describe(params, ctx)
    assert title == "edit m.py"
    assert "-a = 1\n+a = 2" in detail


def test_edit_describe_raises_when_the_edit_cannot_apply(ctx: ToolContext) -> None:
    (ctx.directory / "m.py").write_text("a = 1\n")
    params = EditParams(file_path="m.py", old_string="b = 1", new_string="b = 2")
    with pytest.raises(ToolError, match="not found"):
        EditTool().describe(params, ctx)
