from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel, Field

from agent_tui.config.settings import TruncationConfig
from agent_tui.errors import PermissionDenied, ToolError
from agent_tui.tool.base import PermissionRequest, Tool, ToolContext, ToolResult
from agent_tui.tool.registry import ToolRegistry


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir()
    return ToolContext("ses_test", "msg_test", "call_test", work, tmp_path / "tool-output")


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry.default()


class Asker:
    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.requests: list[PermissionRequest] = []

    async def __call__(self, request: PermissionRequest) -> str:
        self.requests.append(request)
        return self.reply


class EchoParams(BaseModel):
    text: str = Field(description="What to echo.")
    times: int = Field(default=1, description="How many times.")


class EchoTool(Tool):
    name: ClassVar[str] = "echo"
    description: ClassVar[str] = "Echo text."
    Params = EchoParams
    failure: BaseException | None = None

    async def execute(self, params: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(params, EchoParams)
        if self.failure is not None:
            raise self.failure
        return ToolResult(title="echo", output="\n".join([params.text] * params.times))


def test_default_registry_definitions(registry: ToolRegistry) -> None:
    definitions = registry.definitions()
    names = [d["function"]["name"] for d in definitions]
    assert names == sorted(names)
    # Other tools (task, ...) may join; these are always there.
    assert {
        "bash", "edit", "glob", "grep", "list", "read", "recall", "write",
        "todowrite", "todoread", "skill", "webfetch",
    } <= set(names)  # fmt: skip
    for definition in definitions:
        assert definition["type"] == "function"
        assert definition["function"]["description"]
        for prop in definition["function"]["parameters"]["properties"].values():
            assert prop["description"]
    assert registry.get("read") is not None
    assert registry.get("nope") is None
    expected = {
        "bash": "ask", "edit": "ask", "write": "ask", "webfetch": "ask", "enter_worktree": "ask",
        "glob": "allow", "grep": "allow", "list": "allow", "read": "allow", "recall": "allow",
        "todowrite": "allow", "todoread": "allow", "skill": "allow",
    }  # fmt: skip
    defaults = {name: registry.get(name).default_permission for name in expected}  # type: ignore[union-attr]
    assert defaults == expected


async def test_unknown_tool(registry: ToolRegistry, ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as info:
        await registry.run("rm", "{}", ctx)
    assert str(info.value) == f"Unknown tool 'rm'. Available tools: {', '.join(registry.names())}."
    assert "bash, edit, enter_worktree, glob, grep, list, read, recall" in str(info.value)


async def test_invalid_json(registry: ToolRegistry, ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as info:
        await registry.run("read", '{"file_path": "a.txt"', ctx)
    message = str(info.value)
    assert "not valid JSON" in message
    assert "line 1, column" in message
    assert '{"file_path": "a.txt"' in message


async def test_arguments_must_be_an_object(registry: ToolRegistry, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="must be a JSON object, got list"):
        await registry.run("read", "[1, 2]", ctx)


async def test_invalid_arguments(registry: ToolRegistry, ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as info:
        await registry.run("read", {"offset": "soon"}, ctx)
    message = str(info.value)
    assert message.startswith("Invalid arguments for tool read: ")
    assert "file_path: Field required" in message
    assert "offset: Input should be a valid integer" in message
    assert (
        "Expected parameters: {file_path: string (required), offset: integer = 1, "
        "limit: integer = 2000}" in message
    )


async def test_runs_with_dict_or_json_arguments(registry: ToolRegistry, ctx: ToolContext) -> None:
    (ctx.directory / "a.txt").write_text("hello\n")
    for args in ({"file_path": "a.txt"}, json.dumps({"file_path": "a.txt"})):
        result = await registry.run("read", args, ctx)
        assert result.output.startswith("     1\thello")


async def test_empty_arguments_mean_no_arguments(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await registry.run("list", "", ctx)
    assert result.output.endswith("(empty)")


async def test_denied_by_config(registry: ToolRegistry, ctx: ToolContext) -> None:
    ctx.permissions["read"] = "deny"
    ctx.ask = Asker("once")
    with pytest.raises(PermissionDenied) as info:
        await registry.run("read", {"file_path": "a.txt"}, ctx)
    assert str(info.value) == 'The read tool is denied by config (permission.read = "deny").'
    assert ctx.ask.requests == []


async def test_ask_without_a_person(registry: ToolRegistry, ctx: ToolContext) -> None:
    marker = ctx.directory / "ran"
    with pytest.raises(PermissionDenied) as info:
        await registry.run("bash", {"command": f"touch {marker}"}, ctx)
    message = str(info.value)
    assert "approval" in message
    assert '"permission": {"bash": "allow"} in agent-tui.json' in message
    assert "--allow bash" in message
    assert not marker.exists()


async def test_ask_once(registry: ToolRegistry, ctx: ToolContext) -> None:
    asker = Asker("once")
    ctx.ask = asker
    await registry.run("bash", {"command": "echo one"}, ctx)
    result = await registry.run("bash", {"command": "echo two"}, ctx)
    assert result.output == "two"
    assert len(asker.requests) == 2
    request = asker.requests[0]
    assert request.tool == "bash"
    assert request.session_id == "ses_test"
    assert (request.title, request.detail) == ("echo one", "echo one")
    assert request.input["command"] == "echo one"
    assert "bash" not in ctx.permissions


async def test_ask_always_is_remembered(registry: ToolRegistry, ctx: ToolContext) -> None:
    asker = Asker("always")
    ctx.ask = asker
    await registry.run("write", {"file_path": "a.txt", "content": "1"}, ctx)
    await registry.run("write", {"file_path": "b.txt", "content": "2"}, ctx)
    assert len(asker.requests) == 1
    assert asker.requests[0].title == "write a.txt"
    assert ctx.permissions["write"] == "allow"
    assert (ctx.directory / "b.txt").read_text() == "2"


async def test_ask_denied_by_the_person(registry: ToolRegistry, ctx: ToolContext) -> None:
    ctx.ask = Asker("deny")
    with pytest.raises(PermissionDenied) as info:
        await registry.run("write", {"file_path": "a.txt", "content": "x"}, ctx)
    assert str(info.value) == "The person denied permission to run this tool call."
    assert not (ctx.directory / "a.txt").exists()


async def test_edit_that_cannot_apply_fails_before_asking(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    (ctx.directory / "m.py").write_text("a = 1\n")
    asker = Asker("once")
    ctx.ask = asker
    with pytest.raises(ToolError, match="old_string not found"):
        await registry.run("edit", {"file_path": "m.py", "old_string": "b", "new_string": "c"}, ctx)
    assert asker.requests == []


async def test_edit_permission_detail_is_the_diff(registry: ToolRegistry, ctx: ToolContext) -> None:
    (ctx.directory / "m.py").write_text("a = 1\n")
    asker = Asker("once")
    ctx.ask = asker
    result = await registry.run(
        "edit", {"file_path": "m.py", "old_string": "a = 1", "new_string": "a = 2"}, ctx
    )
    assert "-a = 1\n+a = 2" in asker.requests[0].detail
    assert result.metadata["diff"] == asker.requests[0].detail


async def test_config_can_make_a_read_only_tool_ask(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    ctx.permissions["glob"] = "ask"
    with pytest.raises(PermissionDenied, match="--allow glob"):
        await registry.run("glob", {"pattern": "*"}, ctx)


async def test_output_is_truncated_and_metadata_merged(ctx: ToolContext) -> None:
    registry = ToolRegistry([EchoTool()])
    ctx.truncation = TruncationConfig(max_lines=5)
    result = await registry.run("echo", {"text": "hi", "times": 20}, ctx)
    assert result.metadata["truncated"] is True
    assert result.metadata["total_lines"] == 20
    assert result.output.startswith("hi\nhi\nhi\nhi\nhi\n\n... 15 lines truncated ...")
    assert Path(result.metadata["output_path"]).read_text() == "\n".join(["hi"] * 20)


async def test_bash_output_is_truncated_keeping_the_tail(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    ctx.permissions["bash"] = "allow"
    ctx.truncation = TruncationConfig(max_lines=3)
    result = await registry.run("bash", {"command": "seq 1 10"}, ctx)
    assert result.output.startswith("... 7 lines truncated ...\n\n8\n9\n10\n")


async def test_small_output_is_marked_not_truncated(ctx: ToolContext) -> None:
    result = await ToolRegistry([EchoTool()]).run("echo", {"text": "hi"}, ctx)
    assert result.output == "hi"
    assert result.metadata == {"truncated": False}


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (PermissionError(13, "Permission denied", "/root/x"), "Permission denied: /root/x."),
        (OSError(28, "No space left on device"), "No space left on device."),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "could not be"),
        (RuntimeError("boom"), "failed unexpectedly: RuntimeError: boom"),
    ],
)
async def test_tool_exceptions_become_tool_errors(
    ctx: ToolContext, failure: Exception, expected: str
) -> None:
    tool = EchoTool()
    tool.failure = failure
    with pytest.raises(ToolError) as info:
        await ToolRegistry([tool]).run("echo", {"text": "x"}, ctx)
    assert expected in str(info.value)
    assert str(info.value).startswith("The echo tool failed")
