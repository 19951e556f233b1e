from __future__ import annotations

from pathlib import Path

import pytest

from agent_tui.config.settings import TruncationConfig
from agent_tui.errors import PermissionDenied, ToolError
from agent_tui.tool.base import ToolContext
from agent_tui.tool.read import ReadParams, ReadTool


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir()
    return ToolContext("ses_test", "msg_test", "call_test", work, tmp_path / "tool-output")


async def read(ctx: ToolContext, file_path: str, **kwargs: int):
    return await ReadTool().execute(ReadParams(file_path=file_path, **kwargs), ctx)


async def test_reads_with_line_numbers(ctx: ToolContext) -> None:
    (ctx.directory / "src").mkdir()
    (ctx.directory / "src" / "a.py").write_text("first\n\tsecond\nthird\n")
    result = await read(ctx, "src/a.py")
    assert result.title == "src/a.py"
    lines = result.output.splitlines()
    assert lines[:3] == ["     1\tfirst", "     2\t\tsecond", "     3\tthird"]
    assert "(End of file - 3 lines total)" in result.output
    assert result.metadata["more"] is False


async def test_absolute_path(ctx: ToolContext) -> None:
    path = ctx.directory / "a.txt"
    path.write_text("x\n")
    result = await read(ctx, str(path))
    assert result.output.startswith("     1\tx")


async def test_offset_and_limit(ctx: ToolContext) -> None:
    (ctx.directory / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, 101)))
    result = await read(ctx, "big.txt", offset=10, limit=5)
    lines = result.output.splitlines()
    assert lines[0] == "    10\trow 10"
    assert lines[4] == "    14\trow 14"
    assert "row 15" not in result.output
    assert result.output.endswith(
        "(File has more lines. Use 'offset' parameter to read beyond line 14)"
    )
    assert result.metadata["more"] is True


async def test_default_limit_is_2000_lines(ctx: ToolContext) -> None:
    (ctx.directory / "big.txt").write_text("".join(f"{i}\n" for i in range(1, 3001)))
    result = await read(ctx, "big.txt")
    assert "  2000\t2000" in result.output
    assert "2001\t" not in result.output
    assert "read beyond line 2000" in result.output


async def test_output_is_capped_by_bytes(ctx: ToolContext) -> None:
    ctx.truncation = TruncationConfig(max_bytes=1000)
    (ctx.directory / "wide.txt").write_text(("y" * 90 + "\n") * 50)
    result = await read(ctx, "wide.txt")
    assert len(result.output.encode()) < 1300
    assert "Output capped by size. File has more lines" in result.output
    assert result.metadata["truncated"] is False  # sized by read itself: not saved again


async def test_long_lines_are_cut(ctx: ToolContext) -> None:
    (ctx.directory / "min.js").write_text("z" * 5000 + "\nshort\n")
    result = await read(ctx, "min.js")
    first = result.output.splitlines()[0]
    assert first.startswith("     1\t" + "z" * 2000 + "...")
    assert "3000 more characters" in first
    assert "     2\tshort" in result.output


async def test_crlf_is_not_shown(ctx: ToolContext) -> None:
    (ctx.directory / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    result = await read(ctx, "win.txt")
    assert result.output.splitlines()[:2] == ["     1\tone", "     2\ttwo"]


async def test_empty_file(ctx: ToolContext) -> None:
    (ctx.directory / "empty.txt").write_text("")
    result = await read(ctx, "empty.txt")
    assert "empty" in result.output


async def test_offset_beyond_end(ctx: ToolContext) -> None:
    (ctx.directory / "a.txt").write_text("1\n2\n")
    with pytest.raises(ToolError, match=r"Offset 5 is beyond the end of a\.txt, which has 2 lines"):
        await read(ctx, "a.txt", offset=5)


async def test_refuses_binary_by_content(ctx: ToolContext) -> None:
    (ctx.directory / "blob").write_bytes(b"abc\x00def" * 10)
    with pytest.raises(ToolError, match="binary file") as info:
        await read(ctx, "blob")
    assert "NUL byte" in str(info.value)


async def test_refuses_binary_by_extension(ctx: ToolContext) -> None:
    (ctx.directory / "logo.png").write_text("not really a png")
    with pytest.raises(ToolError, match=r"binary file \(its extension is \.png\)"):
        await read(ctx, "logo.png")


async def test_non_utf8_is_replaced_and_reported(ctx: ToolContext) -> None:
    (ctx.directory / "latin1.txt").write_bytes("café\nnaïve\n".encode("latin-1"))
    result = await read(ctx, "latin1.txt")
    assert "caf\ufffd" in result.output
    assert result.metadata["encoding_errors"] is True
    assert "not valid UTF-8" in result.output


async def test_missing_file_suggests_similar_names(ctx: ToolContext) -> None:
    (ctx.directory / "config/").write_text("")
    (ctx.directory / "other.txt").write_text("")
    with pytest.raises(ToolError) as info:
        await read(ctx, "confg.py")
    message = str(info.value)
    assert "File not found" in message
    assert "Did you mean" in message
    assert str(ctx.directory.resolve() / "config/") in message
    assert "other.txt" not in message


async def test_missing_folder(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="does not exist either"):
        await read(ctx, "nope/file.txt")


async def test_directory_points_to_list_tool(ctx: ToolContext) -> None:
    (ctx.directory / "pkg").mkdir()
    with pytest.raises(ToolError, match="Use the list tool"):
        await read(ctx, "pkg")


async def test_outside_working_directory_needs_permission(ctx: ToolContext) -> None:
    outside = ctx.directory.parent / "secret.txt"
    outside.write_text("s\n")
    with pytest.raises(PermissionDenied):
        await read(ctx, str(outside))
    ctx.permissions["external_directory"] = "allow"
    result = await read(ctx, str(outside))
    assert result.title == str(outside.resolve())


def test_params_schema_has_descriptions() -> None:
    schema = ReadTool().definition()["function"]["parameters"]
    assert schema["required"] == ["file_path"]
    for prop in schema["properties"].values():
        assert prop["description"]
