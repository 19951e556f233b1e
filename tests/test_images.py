"""Images from tools: the read tool returns PNG, JPEG, GIF and WebP files as images; they
reach Anthropic inside the tool result, OpenAI-style servers in a user message right
after the tool results, models without vision as a note; they count in the estimate,
are pruned like any output, and are stored as files, not in the database."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from agent_tui import paths
from agent_tui.config.settings import Config, ImagesConfig
from agent_tui.errors import ToolError
from agent_tui.provider import loader
from agent_tui.records import ToolStateCompleted
from agent_tui.step.history import load_history
from agent_tui.step.media import NOT_SHOWN, image_placement, image_tokens, part_image_tokens
from agent_tui.step.messages import CLEARED_OUTPUT, last_finished_assistant
from agent_tui.step.request import build_request, estimate_next, estimate_tokens
from agent_tui.tool.base import ToolContext
from agent_tui.tool.images import image_size, sniff_mime
from agent_tui.tool.read import ReadParams, ReadTool
from agent_tui.tool.saved_outputs import DAY_SECONDS, delete_expired
from agent_tui.tui.tool_line import ToolLine
from tests.conftest import MODEL, write_config
from tests.engine_helpers import open_engine, run_cli
from tests.fake_anthropic import Call as AnthropicCall
from tests.fake_anthropic import FakeAnthropic, ToolUse
from tests.fake_anthropic import Text as AnthropicText
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls, misplaced_image
from tests.images import gif_header, jpeg_header, png, webp_vp8, webp_vp8l, webp_vp8x
from tests.tui_helpers import open_app, type_and_send, wait_for

CLAUDE = "anthropic/claude-sonnet-4-5"
SHOT = png(1000, 750)  # 1,000 tokens by Anthropic's rule (width * height / 750)


def read_call(path: str = "shot.png") -> ToolCalls:
    return ToolCalls([Call("read", json.dumps({"file_path": path}))])


def vision_config(project: Path, server: FakeOpenAI, **overrides: Any) -> None:
    limit = {"context": 100_000, "output": 4_000}
    write_config(project, server, models={MODEL: {"limit": limit, "vision": True}}, **overrides)


def data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def image_blocks(messages: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """(message index, block) of every image_url block in OpenAI-format messages."""
    found = []
    for index, message in enumerate(messages):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "image_url":
                found.append((index, block))
    return found


# ---- the read tool ----------------------------------------------------------------------


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir()
    return ToolContext("ses_test", "msg_test", "call_test", work, tmp_path / "tool-output")


@pytest.mark.parametrize(
    ("data", "mime", "size"),
    [
        (png(640, 480), "image/png", (640, 480)),
        (jpeg_header(1920, 1080), "image/jpeg", (1920, 1080)),
        (gif_header(320, 200), "image/gif", (320, 200)),
        (webp_vp8x(3000, 2000), "image/webp", (3000, 2000)),
        (webp_vp8l(800, 600), "image/webp", (800, 600)),
        (webp_vp8(1024, 768), "image/webp", (1024, 768)),
    ],
)
def test_format_and_size_from_the_bytes(data: bytes, mime: str, size: tuple[int, int]) -> None:
    assert sniff_mime(data[:16]) == mime
    assert image_size(data, mime) == size


async def test_read_returns_the_image_with_a_line_naming_it(ctx: ToolContext) -> None:
    (ctx.directory / "shot.png").write_bytes(SHOT)
    result = await ReadTool().execute(ReadParams(file_path="shot.png"), ctx)
    size = f"{len(SHOT) / 1024:.1f} KB"
    assert result.output == f"Image shot.png (PNG, 1000×750, {size})."
    (image,) = result.attachments
    assert (image.mime, image.width, image.height, image.name) == (
        "image/png",
        1000,
        750,
        "shot.png",
    )
    stored = Path(image.path)
    assert stored.parent == ctx.output_dir and stored.name == f"image_{image.sha256}.png"
    assert stored.read_bytes() == SHOT
    # A file named .jpg that holds a PNG is a PNG; a .png that is text stays refused.
    (ctx.directory / "wrong.jpg").write_bytes(SHOT)
    again = await ReadTool().execute(ReadParams(file_path="wrong.jpg"), ctx)
    assert again.attachments[0].mime == "image/png"
    assert again.attachments[0].path == image.path  # the same bytes are stored once
    (ctx.directory / "fake.png").write_text("not a png")
    with pytest.raises(ToolError, match=r"binary file \(its extension is \.png\)"):
        await ReadTool().execute(ReadParams(file_path="fake.png"), ctx)


async def test_images_over_the_limits_are_refused_with_a_clear_line(ctx: ToolContext) -> None:
    (ctx.directory / "big.png").write_bytes(SHOT)
    ctx.images = ImagesConfig(max_bytes=1024)
    with pytest.raises(ToolError) as caught:
        await ReadTool().execute(ReadParams(file_path="big.png"), ctx)
    assert "Cannot show big.png: the image is 3." in str(caught.value)
    assert "over the 1.0 KB images may be (images.max_bytes)" in str(caught.value)
    ctx.images = ImagesConfig(max_side=800)
    with pytest.raises(ToolError, match=r"1000×750 pixels, over the 800 pixels .*max_side"):
        await ReadTool().execute(ReadParams(file_path="big.png"), ctx)
    assert not ctx.output_dir.exists()  # nothing stored for a refused image


def test_stored_images_expire_with_the_saved_outputs(tmp_path: Path) -> None:
    old = tmp_path / "image_abc.png"
    old.write_bytes(SHOT)
    fresh = tmp_path / "image_def.png"
    fresh.write_bytes(SHOT)
    mine = tmp_path / "notes.png"  # not agent-tui's: never deleted
    mine.write_bytes(SHOT)
    long_ago = time.time() - 8 * DAY_SECONDS
    os.utime(old, (long_ago, long_ago))
    os.utime(mine, (long_ago, long_ago))
    assert delete_expired(tmp_path, 7) == 1
    assert not old.exists() and fresh.exists() and mine.exists()


# ---- where the image goes ---------------------------------------------------------------


def test_an_image_read_on_the_anthropic_path_sits_in_the_tool_result(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (isolated / "shot.png").write_bytes(SHOT)
    with FakeAnthropic() as anthropic:
        write_config(
            isolated,
            anthropic,  # type: ignore[arg-type]
            model=CLAUDE,
            provider={"anthropic": {"api_base": anthropic.base_url, "api_key": "test-key"}},
            models={CLAUDE: {"limit": {"context": 200_000, "output": 8_000}}},
        )
        anthropic.script(
            ToolUse([AnthropicCall("read", '{"file_path": "shot.png"}')]),
            AnthropicText("A red rectangle."),
        )
        code, out, err = run_cli(capsys, "run", "what is in shot.png?")
        _, second = anthropic.requests
        usages = list(anthropic.usages)
    assert code == 0, err
    assert out.strip() == "A red rectangle."
    assert "[read] shot.png — completed (image PNG, 1000×750, " in err  # run's tool line
    (turn,) = [m for m in second["messages"] if m["role"] == "user"][1:]
    (result,) = turn["content"]
    assert result["type"] == "tool_result"
    text, image = result["content"]
    assert text["text"].startswith("Image shot.png (PNG, 1000×750, ")
    assert image["type"] == "image"
    assert image["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(SHOT).decode(),
    }
    assert not any(m["role"] == "user" and m is not turn for m in second["messages"][2:])
    # The server billed the image by its pixels: the prompt grew by about its 1,000 tokens.
    grown = sum(
        usages[1][k]
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    ) - sum(
        usages[0][k]
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    assert 1_000 <= grown < 1_200


async def test_on_the_openai_path_the_image_follows_the_tool_results_as_a_user_message(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    (isolated / "shot.png").write_bytes(SHOT)
    (isolated / "notes.txt").write_text("some notes\n")
    vision_config(isolated, fake_llm)
    both = ToolCalls(
        [Call("read", '{"file_path": "shot.png"}'), Call("read", '{"file_path": "notes.txt"}')]
    )
    fake_llm.script(both, Text("A red rectangle and some notes."), Text("ok"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "look at these")
        assert result is not None and result.outcome == "stop", result
        await engine.prompt(session.id, "thanks")
    _, second, third = fake_llm.requests
    messages = second["messages"]
    roles = [m["role"] for m in messages]
    assert roles[-4:] == ["assistant", "tool", "tool", "user"]
    image_result, text_result = messages[-3:-1]
    assert image_result["content"].startswith("Image shot.png (PNG, 1000×750, ")
    assert text_result["content"].startswith("     1\tsome notes")
    carried = messages[-1]["content"]
    assert carried[0] == {
        "type": "text",
        "text": "The image returned by the read call above (shot.png):",
    }
    assert carried[1] == {"type": "image_url", "image_url": {"url": data_url(SHOT)}}
    assert [index for index, _ in image_blocks(messages)] == [len(messages) - 1]
    # The next turn keeps the same bytes before it (the prompt cache's prefix) and the
    # person's new message comes after the reply.
    assert third["messages"][: len(messages)] == messages
    assert third["messages"][-1]["role"] == "user"


def test_the_fake_openai_server_refuses_an_image_in_a_tool_result() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "tool",
                "tool_call_id": "c",
                "content": [{"type": "image_url", "image_url": {"url": data_url(SHOT)}}],
            },
        ]
    }
    problem = misplaced_image(body)
    assert problem is not None and problem.status == 400
    assert "only allowed for messages with role 'user'" in problem.message


async def test_a_model_without_vision_gets_a_one_line_note(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    (isolated / "shot.png").write_bytes(SHOT)
    write_config(isolated, fake_llm)  # openai/test-model: litellm does not know it
    fake_llm.script(read_call(), Text("I cannot see it."))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "look")
    second = fake_llm.requests[1]
    (result,) = [m for m in second["messages"] if m["role"] == "tool"]
    lines = result["content"].splitlines()
    assert lines[0].startswith("Image shot.png (PNG, 1000×750, ") and lines[1:] == [NOT_SHOWN]
    assert "image_url" not in json.dumps(second)
    assert second["messages"][-1]["role"] == "tool"  # no message carries an image after it


async def test_an_image_mentioned_with_at_is_attached_to_the_message(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    (isolated / "shot.png").write_bytes(SHOT)
    vision_config(isolated, fake_llm)
    fake_llm.script(Text("A red rectangle."))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "what is @shot.png?")
    (request,) = fake_llm.requests
    user = request["messages"][-1]
    assert user["role"] == "user"
    texts = [b["text"] for b in user["content"] if b["type"] == "text"]
    assert texts[0] == "what is @shot.png?"
    assert texts[1].startswith('<file path="shot.png">\nImage shot.png (PNG, 1000×750, ')
    assert image_blocks([user]) == [
        (0, {"type": "image_url", "image_url": {"url": data_url(SHOT)}})
    ]


# ---- tokens and pruning -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "width", "height", "tokens"),
    [
        (CLAUDE, 1000, 750, 1000),  # width * height / 750
        (CLAUDE, 4000, 3000, 1600),  # scaled to fit 1568 px and ~1.15 MP
        ("openai/gpt-4o", 1024, 1024, 765),  # 768 x 768: 4 tiles * 170 + 85
        ("openai/gpt-4o", 2048, 4096, 1105),  # 1024 x 2048 -> 768 x 1536: 6 tiles
        ("gemini/gemini-2.5-pro", 300, 300, 258),
        ("gemini/gemini-2.5-pro", 1000, 1000, 4 * 258),
        (MODEL, 1000, 750, 1000),  # a local model: Anthropic's rule
        (MODEL, None, None, 1600),  # size unknown
    ],
)
def test_image_tokens_follow_the_providers_rules(
    model: str, width: int | None, height: int | None, tokens: int
) -> None:
    assert image_tokens(width, height, model) == tokens


def test_an_image_counts_in_the_request_estimate() -> None:
    text = {"type": "text", "text": "Image shot.png (PNG, 1000×750, 3.8 KB)."}
    image = {"type": "image_url", "image_url": {"url": data_url(SHOT)}}
    without = [{"role": "user", "content": [text]}]
    with_image = [{"role": "user", "content": [text, image]}]
    for model, tokens in ((CLAUDE, 1000), ("openai/gpt-4o", 765), (MODEL, 1000)):
        difference = estimate_tokens(with_image, [], model) - estimate_tokens(without, [], model)
        assert difference == tokens


async def test_the_estimate_of_the_next_request_counts_the_image_just_read(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """The pre-send size check counts the last step's tool outputs locally: the image's
    tokens are in it, so a window too small for it compacts before the request fails."""
    (isolated / "shot.png").write_bytes(SHOT)
    vision_config(isolated, fake_llm)
    fake_llm.script(read_call(), Text("seen"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "look")
        history = await load_history(engine.ctx, session)
    step = next(m for m in history if m.info.role == "assistant")
    later = [m for m in history if m.info.id <= step.info.id]
    request, _ = build_request(
        later, model=MODEL, directory=isolated, config=engine.ctx.config, tools=[]
    )
    last = last_finished_assistant(later)
    assert last is not None and last.tokens.total
    estimate = estimate_next(later, request, last)
    (part,) = [p for p in step.parts if getattr(p, "tool", None) == "read"]
    assert part_image_tokens(part, MODEL) == 1000
    assert estimate >= last.tokens.total + 1000


async def test_a_pruned_image_is_cleared(isolated: Path, fake_llm: FakeOpenAI) -> None:
    (isolated / "shot.png").write_bytes(SHOT)
    vision_config(isolated, fake_llm, compaction={"prune_protect": 0, "prune_minimum": 100})
    fake_llm.script(read_call(), Text("seen"), Text("one"), Text("two"), Text("three"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        for text in ("look at shot.png", "next", "and next", "last"):
            await engine.prompt(session.id, text)
    assert image_blocks(fake_llm.requests[1]["messages"])  # sent while the turn was recent
    last = fake_llm.requests[-1]["messages"]
    (result,) = [m for m in last if m["role"] == "tool"]
    assert result["content"].startswith(CLEARED_OUTPUT)
    assert image_blocks(last) == []
    assert "data:image" not in json.dumps(last)


# ---- storage and views ------------------------------------------------------------------


async def test_the_database_holds_the_path_not_the_image(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    (isolated / "shot.png").write_bytes(png(1500, 1500, (1, 2, 3)))
    vision_config(isolated, fake_llm)
    fake_llm.script(read_call(), Text("seen"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "look")
    with sqlite3.connect(paths.database_path()) as conn:
        rows = [json.loads(d) for (d,) in conn.execute("SELECT data FROM part")]
    (tool,) = [r for r in rows if r.get("type") == "tool"]
    state = ToolStateCompleted.model_validate(tool["state"])
    (image,) = state.attachments
    assert Path(image.path).parent == paths.tool_output_dir()
    assert Path(image.path).read_bytes() == (isolated / "shot.png").read_bytes()
    assert len(json.dumps(tool)) < 2_000  # a few hundred bytes, whatever the image's size


async def test_the_app_shows_the_tool_line_naming_the_image(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    (isolated / "shot.png").write_bytes(SHOT)
    vision_config(isolated, fake_llm)
    fake_llm.script(read_call(), Text("A red rectangle."))
    app = await open_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "what is in shot.png?")
        await wait_for(pilot, lambda: len(fake_llm.requests) == 2 and app.chat.status == "idle")
        (line,) = app.query(ToolLine)
        await pilot.pause()
        assert "read shot.png — image PNG, 1000×750, " in str(line.title)
    await app.db.close()


def test_vision_comes_from_the_model_info_or_the_config() -> None:
    # Read from litellm in this process (model_info's contract: loaded before, or litellm
    # already imported here), whichever test of this worker ran first.
    loader.litellm()
    assert image_placement(CLAUDE, Config()) == "tool"
    assert image_placement("openai/gpt-4o", Config()) == "user"
    assert image_placement(MODEL, Config()) == "note"
    assert image_placement(MODEL, Config(models={MODEL: {"vision": True}})) == "user"
    no_vision = Config(models={"openai/gpt-4o": {"vision": False}})
    assert image_placement("openai/gpt-4o", no_vision) == "note"
