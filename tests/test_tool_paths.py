from __future__ import annotations

from pathlib import Path

import pytest

from agent_tui.errors import PermissionDenied
from agent_tui.tool.base import PermissionRequest, ToolContext
from agent_tui.tool.tool_paths import display_path, resolve_path


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "outside").mkdir()
    return ToolContext("ses_test", "msg_test", "call_test", work, tmp_path / "tool-output")


class Asker:
    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.requests: list[PermissionRequest] = []

    async def __call__(self, request: PermissionRequest) -> str:
        self.requests.append(request)
        return self.reply


async def test_relative_and_absolute_paths_inside(ctx: ToolContext) -> None:
    work = ctx.directory.resolve()
    assert await resolve_path(ctx, "a/b.txt") == work / "a" / "b.txt"
    assert await resolve_path(ctx, str(work / "c.txt")) == work / "c.txt"
    assert await resolve_path(ctx, None) == work
    assert await resolve_path(ctx, "") == work
    assert display_path(ctx, work / "a" / "b.txt") == "a/b.txt"
    assert display_path(ctx, work) == "."


async def test_outside_path_is_asked_by_default_and_refused_without_a_person(
    ctx: ToolContext,
) -> None:
    with pytest.raises(PermissionDenied) as info:
        await resolve_path(ctx, "../outside/x.txt")
    message = str(info.value)
    assert "outside the working directory" in message
    assert '"permission": {"external_directory": "allow"}' in message
    assert "agent-tui.json" in message


async def test_outside_path_allowed_by_config(ctx: ToolContext) -> None:
    ctx.permissions["external_directory"] = "allow"
    path = await resolve_path(ctx, "../outside/x.txt")
    assert path == (ctx.directory / ".." / "outside" / "x.txt").resolve()


async def test_outside_path_denied_by_config(ctx: ToolContext) -> None:
    ctx.permissions["external_directory"] = "deny"
    ctx.ask = Asker("always")
    with pytest.raises(PermissionDenied) as info:
        await resolve_path(ctx, "/etc/hostname")
    assert "/etc/hostname" in str(info.value)
    assert "permission.external_directory" in str(info.value)
    assert ctx.ask.requests == []


async def test_outside_path_asks_the_person(ctx: ToolContext) -> None:
    asker = Asker("once")
    ctx.ask = asker
    target = str(ctx.directory.parent / "outside" / "x.txt")
    assert str(await resolve_path(ctx, target)) == str(Path(target).resolve())
    assert len(asker.requests) == 1
    request = asker.requests[0]
    assert request.tool == "external_directory"
    assert request.session_id == "ses_test"
    assert request.input == {"path": str(Path(target).resolve())}
    # "once" is not remembered
    await resolve_path(ctx, target)
    assert len(asker.requests) == 2
    assert "external_directory" not in ctx.permissions


async def test_outside_path_always_is_remembered(ctx: ToolContext) -> None:
    asker = Asker("always")
    ctx.ask = asker
    await resolve_path(ctx, "../outside/a")
    await resolve_path(ctx, "../outside/b")
    assert len(asker.requests) == 1
    assert ctx.permissions["external_directory"] == "allow"


async def test_outside_path_denied_by_the_person(ctx: ToolContext) -> None:
    ctx.ask = Asker("deny")
    with pytest.raises(PermissionDenied, match="denied access"):
        await resolve_path(ctx, "../outside/a")


async def test_symlink_pointing_outside_counts_as_outside(ctx: ToolContext) -> None:
    (ctx.directory / "link").symlink_to(ctx.directory.parent / "outside")
    with pytest.raises(PermissionDenied):
        await resolve_path(ctx, "link/secret.txt")


async def test_symlinked_working_directory_is_inside(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    ctx = ToolContext("s", "m", "c", alias, tmp_path / "out")
    assert await resolve_path(ctx, "f.txt") == real / "f.txt"
