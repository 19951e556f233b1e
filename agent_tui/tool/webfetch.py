"""The webfetch tool: one URL's content, HTML as Markdown (or text, or as is).

httpx follows redirects; the body is streamed and reading stops at MAX_RESPONSE_BYTES;
the whole fetch has one deadline. HTML is converted with markdownify over
BeautifulSoup's stdlib parser (scripts, styles and other non-content removed first);
other text (JSON, plain text, XML...) is returned as it came; binary content is refused.
Over-long results are truncated by the registry like every tool's output.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_tui.aborting import unless_aborted
from agent_tui.errors import ToolError
from agent_tui.tool.base import Tool, ToolContext, ToolResult
from agent_tui.tool.files import looks_binary

DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 120.0
MAX_RESPONSE_BYTES = 5 * 1024 * 1024
"""Reading stops here; the model is told the content was cut."""
SNIFF_BYTES = 8192
"""How much of a body without a usable content type is checked for binary bytes."""
USER_AGENT = "agent-tui webfetch (+https://github.com/agent-tui)"
ACCEPT = "text/markdown;q=1.0, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1"
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/x-sh",
        "application/toml",
        "application/yaml",
        "application/x-yaml",
        "application/sql",
        "application/graphql",
        "application/x-ndjson",
    }
)
NON_CONTENT_TAGS = ("script", "style", "noscript", "template", "iframe", "object", "embed", "svg")
_BLANK_LINES = re.compile(r"\n\s*\n\s*\n+")

Format = Literal["markdown", "text", "html"]


class WebFetchParams(BaseModel):
    url: str = Field(description="The http:// or https:// URL to fetch.")
    format: Format = Field(
        default="markdown",
        description="markdown (HTML converted, the default), text (tags stripped) or html "
        "(as received). Content that is not HTML is returned as is in every format.",
    )
    timeout: float = Field(
        default=DEFAULT_TIMEOUT,
        gt=0,
        le=MAX_TIMEOUT,
        description=f"Seconds for the whole fetch (default {DEFAULT_TIMEOUT:g}, "
        f"at most {MAX_TIMEOUT:g}).",
    )


@dataclass
class Fetched:
    url: str
    """After redirects."""
    status: int
    content_type: str
    charset: str | None
    body: bytes
    cut: bool
    """Reading stopped at MAX_RESPONSE_BYTES."""


def media_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()


def _content(html: str) -> Any:
    """The parsed page without its NON_CONTENT_TAGS."""
    from bs4 import BeautifulSoup  # imported on first use: not on the path to --help

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(NON_CONTENT_TAGS):
        tag.decompose()
    return soup


def html_to_markdown(html: str) -> str:
    from markdownify import MarkdownConverter

    markdown = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(_content(html))
    return _BLANK_LINES.sub("\n\n", markdown).strip()


def html_to_text(html: str) -> str:
    soup = _content(html)
    lines = (line.strip() for line in soup.get_text("\n").splitlines())
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


async def fetch(url: str, timeout: float) -> Fetched:
    """GET `url` (redirects followed), reading at most MAX_RESPONSE_BYTES of the body."""
    import httpx  # imported on first use: tens of milliseconds off the app's start

    headers = {"User-Agent": USER_AGENT, "Accept": ACCEPT}
    async with (
        httpx.AsyncClient(follow_redirects=True, timeout=timeout, headers=headers) as client,
        client.stream("GET", url) as response,
    ):
        if response.status_code >= 400:
            raise ToolError(f"{url} answered HTTP {response.status_code} {response.reason_phrase}.")
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_RESPONSE_BYTES:
                break
        return Fetched(
            url=str(response.url),
            status=response.status_code,
            content_type=response.headers.get("content-type", ""),
            charset=response.charset_encoding,
            body=bytes(body[:MAX_RESPONSE_BYTES]),
            cut=len(body) > MAX_RESPONSE_BYTES,
        )


async def _fetch_abortable(url: str, timeout: float, abort: asyncio.Event) -> Fetched:
    import httpx

    try:
        async with asyncio.timeout(timeout):
            if (fetched := await unless_aborted(fetch(url, timeout), abort)) is None:
                raise ToolError(f"Fetching {url} was interrupted.")
            return fetched
    except (TimeoutError, httpx.TimeoutException) as exc:
        raise ToolError(f"Fetching {url} timed out after {timeout:g} seconds.") from exc
    except httpx.HTTPError as exc:
        detail = str(exc) or type(exc).__name__
        raise ToolError(f"Could not fetch {url}: {detail}") from exc


def render(fetched: Fetched, fmt: Format) -> tuple[str, str]:
    """(output, kind) of a fetched body; ToolError for binary content."""
    kind = media_type(fetched.content_type)
    size = f"{len(fetched.body):,} bytes"
    text_type = kind.startswith("text/") or kind.endswith(("+json", "+xml", "+yaml"))
    if kind and kind not in HTML_TYPES | TEXT_TYPES and not text_type:
        raise ToolError(
            f"{fetched.url} is {kind} ({size}), not text: webfetch returns text and HTML "
            "only. Download binary files with bash (e.g. curl -o) if you need them."
        )
    if looks_binary(fetched.body[:SNIFF_BYTES]):
        raise ToolError(
            f"{fetched.url} returned binary content ({kind or 'no content type'}, {size}): "
            "webfetch returns text and HTML only."
        )
    text = fetched.body.decode(fetched.charset or "utf-8", errors="replace")
    if kind in HTML_TYPES or (not kind and text.lstrip()[:15].lower().startswith("<!doctype html")):
        convert = {"markdown": html_to_markdown, "text": html_to_text}.get(fmt)
        return (convert(text) if convert else text), "html"
    return text, kind or "text"


class WebFetchTool(Tool[WebFetchParams]):
    name = "webfetch"
    description = (
        "Fetch a URL (http or https, redirects followed) and return its content: HTML as "
        "Markdown by default (format text strips the tags, html keeps them); JSON, plain "
        "text and other text as is. Binary content is refused. At most 5 MB is read; the "
        "timeout is in seconds (default 30, at most 120)."
    )
    Params = WebFetchParams
    default_permission = "ask"

    def describe(self, params: WebFetchParams, ctx: ToolContext) -> tuple[str, str]:
        return params.url, f"format: {params.format}"

    async def execute(self, params: WebFetchParams, ctx: ToolContext) -> ToolResult:
        url = params.url.strip()
        if not url.lower().startswith(("http://", "https://")):
            raise ToolError(f"The URL must start with http:// or https://, got {url!r}.")
        fetched = await _fetch_abortable(url, params.timeout, ctx.abort)
        output, kind = await asyncio.to_thread(render, fetched, params.format)
        if fetched.cut:  # said first: a truncated preview keeps its head
            output = (
                f"(Stopped reading at {MAX_RESPONSE_BYTES // (1024 * 1024)} MB: the response "
                "is larger; what follows is its beginning.)\n\n" + output
            )
        return ToolResult(
            title=fetched.url,
            output=output,
            metadata={
                "url": fetched.url,
                "status": fetched.status,
                "content_type": kind,
                "bytes": len(fetched.body),
                "cut": fetched.cut,
            },
        )
