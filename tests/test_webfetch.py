"""The webfetch tool against a local HTTP server: conversion, size cap, timeout, types."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agent_tui.errors import PermissionDenied, ToolError
from agent_tui.tool.base import ToolContext
from agent_tui.tool.registry import ToolRegistry
from agent_tui.tool.webfetch import MAX_RESPONSE_BYTES
from tests.engine_helpers import open_engine
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls

PAGE = b"""<!doctype html><html><head><title>Docs</title><style>p{color:red}</style>
<script>alert('no')</script></head><body><h1>Install</h1>
<p>Run <code>pip install thing</code> then read <a href="/guide">the guide</a>.</p>
<ul><li>fast</li><li>small</li></ul></body></html>"""
RELEASE = threading.Event()
"""Set at teardown so a sleeping handler lets the server stop."""


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def send(self, body: bytes, content_type: str, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/page":
            self.send(PAGE, "text/html; charset=utf-8")
        elif self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/page")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/json":
            self.send(b'{"name": "thing", "tags": ["<b>x</b>"]}', "application/json")
        elif self.path == "/plain":
            self.send(b"just <text>\n", "text/plain")
        elif self.path == "/image":
            self.send(b"\x89PNG\r\n\x1a\n\x00\x00", "image/png")
        elif self.path == "/missing":
            self.send(b"gone", "text/plain", status=404)
        elif self.path == "/huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()  # no length: streamed until the client stops reading
            line = b"x" * 1023 + b"\n"
            try:
                for _ in range(MAX_RESPONSE_BYTES // len(line) * 3):
                    self.wfile.write(line)
            except OSError:
                pass
        elif self.path == "/slow":
            RELEASE.wait(10)
            self.send(b"late", "text/plain")


@pytest.fixture
def server() -> Iterator[str]:
    RELEASE.clear()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    RELEASE.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(
        session_id="ses_test",
        message_id="msg_test",
        call_id="call_test",
        directory=tmp_path,
        output_dir=tmp_path / "tool-output",
        permissions={"webfetch": "allow"},
    )


async def fetch(ctx: ToolContext, **args: object) -> str:
    return (await ToolRegistry.default().run("webfetch", args, ctx)).output


async def test_html_becomes_markdown_after_redirects(server: str, ctx: ToolContext) -> None:
    result = await ToolRegistry.default().run("webfetch", {"url": f"{server}/moved"}, ctx)
    assert result.title == f"{server}/page"
    out = result.output
    assert "# Install" in out
    assert "Run `pip install thing` then read [the guide](/guide)." in out
    assert "- fast\n- small" in out
    assert "alert" not in out and "color:red" not in out and "<p>" not in out


async def test_text_strips_tags_and_html_keeps_them(server: str, ctx: ToolContext) -> None:
    text = await fetch(ctx, url=f"{server}/page", format="text")
    assert "Install" in text and "pip install thing" in text
    assert "<" not in text and "alert" not in text
    html = await fetch(ctx, url=f"{server}/page", format="html")
    assert html == PAGE.decode()


async def test_non_html_is_returned_as_is(server: str, ctx: ToolContext) -> None:
    assert await fetch(ctx, url=f"{server}/json") == '{"name": "thing", "tags": ["<b>x</b>"]}'
    assert await fetch(ctx, url=f"{server}/plain", format="text") == "just <text>\n"


async def test_binary_errors_and_bad_urls_are_refused_clearly(
    server: str, ctx: ToolContext
) -> None:
    with pytest.raises(ToolError, match=r"image/png .*not text"):
        await fetch(ctx, url=f"{server}/image")
    with pytest.raises(ToolError, match="HTTP 404"):
        await fetch(ctx, url=f"{server}/missing")
    with pytest.raises(ToolError, match="must start with http"):
        await fetch(ctx, url="file:///etc/passwd")
    with pytest.raises(ToolError, match="timeout"):
        await fetch(ctx, url=f"{server}/plain", timeout=500)


async def test_reading_stops_at_the_size_cap(server: str, ctx: ToolContext) -> None:
    result = await ToolRegistry.default().run("webfetch", {"url": f"{server}/huge"}, ctx)
    assert result.metadata["bytes"] == MAX_RESPONSE_BYTES and result.metadata["cut"]
    assert result.output.startswith("(Stopped reading at 5 MB")
    assert result.metadata["truncated"]  # and the registry's truncation applies as usual


async def test_a_slow_server_times_out(server: str, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"timed out after 0\.3 seconds"):
        await fetch(ctx, url=f"{server}/slow", timeout=0.3)


async def test_webfetch_asks_by_default(
    server: str, configured: FakeOpenAI, ctx: ToolContext
) -> None:
    ctx.permissions = {}
    with pytest.raises(PermissionDenied, match="needs the person's approval"):
        await fetch(ctx, url=f"{server}/plain")
    configured.script(
        ToolCalls([Call("webfetch", json.dumps({"url": f"{server}/plain"}))]), Text("ok")
    )
    async with open_engine() as engine:  # headless: nobody to ask, so it is refused
        session = await engine.new_session(Path.cwd())
        await engine.prompt(session.id, "fetch it")
    results = [m["content"] for m in configured.requests[1]["messages"] if m["role"] == "tool"]
    assert "needs the person's approval" in results[0]
