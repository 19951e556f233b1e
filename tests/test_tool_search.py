"""grep, glob and list: searching and listing the working directory."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agent_tui.errors import PermissionDenied, ToolError
from agent_tui.tool import grep as grep_module
from agent_tui.tool.base import ToolContext
from agent_tui.tool.glob import GlobParams, GlobTool
from agent_tui.tool.grep import GrepParams, GrepTool
from agent_tui.tool.ls import ListParams, ListTool


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir()
    return ToolContext("ses_test", "msg_test", "call_test", work, tmp_path / "tool-output")


def make(root: Path, files: dict[str, str | bytes], *, mtimes: dict[str, int] | None = None):
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    for name, when in (mtimes or {}).items():
        os.utime(root / name, (when, when))


@pytest.fixture(params=["python", "rg"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "rg" and shutil.which("rg") is None:
        pytest.skip("ripgrep is not installed")
    if request.param == "python":
        monkeypatch.setattr(grep_module.shutil, "which", lambda _name: None)
    return request.param


async def grep(ctx: ToolContext, pattern: str, **kwargs: str):
    return await GrepTool().execute(GrepParams(pattern=pattern, **kwargs), ctx)


# grep


async def test_grep_finds_lines_newest_file_first(ctx: ToolContext, backend: str) -> None:
    make(
        ctx.directory,
        {"old.py": "x = 1\nneedle = 2\n", "src/new.py": "needle()\n", "other.txt": "nothing\n"},
        mtimes={"old.py": 1_000_000, "src/new.py": 2_000_000},
    )
    result = await grep(ctx, r"needle")
    assert result.output.splitlines() == ["src/new.py:1: needle()", "old.py:2: needle = 2"]
    assert result.metadata["matches"] == 2


async def test_grep_include_filter(ctx: ToolContext, backend: str) -> None:
    make(ctx.directory, {"a.py": "hit\n", "b.txt": "hit\n", "c/d.ts": "hit\n", "c/e.tsx": "hit\n"})
    result = await grep(ctx, "hit", include="*.py")
    assert result.output.splitlines() == ["a.py:1: hit"]
    result = await grep(ctx, "hit", include="*.{ts,tsx}")
    assert sorted(result.output.splitlines()) == ["c/d.ts:1: hit", "c/e.tsx:1: hit"]


async def test_grep_skips_tooling_folders_and_binary_files(ctx: ToolContext, backend: str) -> None:
    make(
        ctx.directory,
        {
            "keep.py": "secret\n",
            ".git/config": "secret\n",
            "node_modules/x/index.js": "secret\n",
            "__pycache__/m.txt": "secret\n",
            ".venv/lib/site.py": "secret\n",
            "blob.bin2": b"secret\x00\x01\x02",
        },
    )
    result = await grep(ctx, "secret")
    assert result.output.splitlines() == ["keep.py:1: secret"]


async def test_grep_line_anchors_and_path_to_a_file(ctx: ToolContext, backend: str) -> None:
    make(ctx.directory, {"m.py": "import os\ndef main():\n    def inner():\n"})
    result = await grep(ctx, r"^def ", path="m.py")
    assert result.output.splitlines() == ["m.py:2: def main():"]


async def test_grep_caps_matches(ctx: ToolContext, backend: str) -> None:
    make(ctx.directory, {"many.txt": "match\n" * 250})
    result = await grep(ctx, "match")
    lines = result.output.splitlines()
    assert lines[:2] == ["many.txt:1: match", "many.txt:2: match"]
    assert sum(1 for line in lines if line.startswith("many.txt:")) == 100
    assert "Showing 100 of 250 matches" in result.output


async def test_grep_no_match(ctx: ToolContext, backend: str) -> None:
    make(ctx.directory, {"a.txt": "hello\n"})
    result = await grep(ctx, "absent")
    assert result.output == "No matches found."


async def test_grep_python_only_syntax_works(ctx: ToolContext, backend: str) -> None:
    make(ctx.directory, {"a.txt": "foobar\nfoobaz\n"})
    result = await grep(ctx, r"foo(?=baz)")  # look-ahead: not supported by ripgrep's engine
    assert result.output.splitlines() == ["a.txt:2: foobaz"]


async def test_grep_invalid_regex(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"Invalid regular expression 'foo\(': missing \)"):
        await grep(ctx, "foo(")


async def test_grep_missing_path(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="Path not found"):
        await grep(ctx, "x", path="nope")


async def test_grep_outside_needs_permission(ctx: ToolContext) -> None:
    with pytest.raises(PermissionDenied):
        await grep(ctx, "x", path="/etc")


# glob


async def glob(ctx: ToolContext, pattern: str, **kwargs: str):
    return await GlobTool().execute(GlobParams(pattern=pattern, **kwargs), ctx)


async def test_glob_recursive_newest_first(ctx: ToolContext) -> None:
    make(
        ctx.directory,
        {"a.py": "", "pkg/b.py": "", "pkg/deep/c.py": "", "d.txt": ""},
        mtimes={"a.py": 3_000_000, "pkg/b.py": 1_000_000, "pkg/deep/c.py": 2_000_000},
    )
    result = await glob(ctx, "**/*.py")
    assert result.output.splitlines() == ["a.py", "pkg/deep/c.py", "pkg/b.py"]
    result = await glob(ctx, "pkg/*.py")
    assert result.output.splitlines() == ["pkg/b.py"]
    result = await glob(ctx, "*.py")  # no "/": file names at any depth
    assert len(result.output.splitlines()) == 3


async def test_glob_relative_to_path_and_braces(ctx: ToolContext) -> None:
    make(ctx.directory, {"web/app.ts": "", "web/view.tsx": "", "web/x.js": ""})
    result = await glob(ctx, "*.{ts,tsx}", path="web")
    assert sorted(result.output.splitlines()) == ["app.ts", "view.tsx"]


async def test_glob_absolute_pattern(ctx: ToolContext) -> None:
    make(ctx.directory, {"pkg/a.py": "", "pkg/sub/b.py": "", "c.py": ""})
    result = await glob(ctx, f"{ctx.directory}/pkg/**/*.py")
    assert sorted(result.output.splitlines()) == ["a.py", "sub/b.py"]


async def test_glob_skips_tooling_folders(ctx: ToolContext) -> None:
    make(ctx.directory, {"a.js": "", "node_modules/b.js": "", ".git/c.js": "", ".venv/d.js": ""})
    result = await glob(ctx, "**/*.js")
    assert result.output.splitlines() == ["a.js"]


async def test_glob_caps_results(ctx: ToolContext) -> None:
    make(ctx.directory, {f"f{i:03}.txt": "" for i in range(150)})
    result = await glob(ctx, "*.txt")
    lines = result.output.splitlines()
    assert len([line for line in lines if line.endswith(".txt")]) == 100
    assert "Showing 100 of 150 files" in result.output
    assert result.metadata["count"] == 150


async def test_glob_no_match_and_bad_path(ctx: ToolContext) -> None:
    result = await glob(ctx, "*.rs")
    assert result.output == "No files found matching '*.rs'."
    make(ctx.directory, {"file.txt": ""})
    with pytest.raises(ToolError, match="not a folder"):
        await glob(ctx, "*", path="file.txt")


# list


async def ls(ctx: ToolContext, **kwargs: object):
    return await ListTool().execute(ListParams(**kwargs), ctx)


async def test_list_tree(ctx: ToolContext) -> None:
    make(
        ctx.directory,
        {
            "README.md": "",
            "src/app/main.py": "",
            "src/util.py": "",
            "node_modules/x/i.js": "",
            ".git/HEAD": "",
            "dist/bundle.js": "",
            "__pycache__/a.pyc": "",
        },
    )
    result = await ls(ctx)
    assert result.output.splitlines() == [
        f"{ctx.directory.resolve()}/",
        "  src/",
        "    app/",
        "      main.py",
        "    util.py",
        "  README.md",
    ]
    assert result.title == "."


async def test_list_ignore_patterns_and_subfolder(ctx: ToolContext) -> None:
    make(ctx.directory, {"src/a.py": "", "src/a.log": "", "src/tmp/x.py": ""})
    result = await ls(ctx, path="src", ignore=["*.log", "tmp"])
    assert result.output.splitlines() == [f"{ctx.directory.resolve()}/src/", "  a.py"]


async def test_list_caps_entries_breadth_first(ctx: ToolContext) -> None:
    make(ctx.directory, {f"big/f{i:03}.txt": "" for i in range(150)})
    make(ctx.directory, {"top.txt": ""})
    result = await ls(ctx)
    lines = result.output.splitlines()
    assert "  top.txt" in lines  # breadth first: the big folder does not crowd it out
    assert "    ... (52 more)" in lines
    assert "Showing 100 of 152 entries" in result.output


async def test_list_errors(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="Folder not found"):
        await ls(ctx, path="missing")
    make(ctx.directory, {"f.txt": ""})
    with pytest.raises(ToolError, match="Use the read tool"):
        await ls(ctx, path="f.txt")


async def test_list_empty(ctx: ToolContext) -> None:
    result = await ls(ctx)
    assert result.output.endswith("(empty)")
