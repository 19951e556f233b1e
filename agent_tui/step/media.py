"""Images in model requests: where a tool's image goes, and what it costs in tokens.

Where (`ImagePlacement`), decided per model and so the same at every step:
- `tool`: inside the tool result, as Anthropic's Messages API takes it;
- `user`: the tool result is text only and the images follow in a synthetic user
  message right after the step's tool results (OpenAI chat completions and most local
  servers accept images only from the user);
- `note`: the model takes no images: a one-line note after the result's text.

A pruned output loses its images with its text. An image whose stored copy is gone
(deleted after `truncation.retention_days`) becomes a line saying so.

Tokens follow each provider's rule: Anthropic ~ width*height/750 after fitting 1568 px
and ~1.15 megapixels; OpenAI 85 + 170 per 512 px tile after fitting 2048 px and 768 px
on the short side; Gemini 258 per 768 px tile; other (local) models the Anthropic rule,
which is close to the 28x28 px patches of Qwen-VL and LLaVA-style encoders.
"""

from __future__ import annotations

import base64
import binascii
import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

from agent_tui.config.settings import Config
from agent_tui.provider.limits import model_info
from agent_tui.records import FilePart, ImageAttachment, ToolPart, ToolStateCompleted
from agent_tui.tool.images import image_size, sniff_mime

ImagePlacement = Literal["tool", "user", "note"]

FALLBACK_IMAGE_TOKENS = 1600
"""An image whose size cannot be read: Anthropic's most for one image."""
ANTHROPIC_MAX_SIDE = 1568
ANTHROPIC_MAX_TOKENS = 1600
ANTHROPIC_PIXELS_PER_TOKEN = 750
OPENAI_FIT, OPENAI_SHORT_SIDE, OPENAI_TILE = 2048, 768, 512
OPENAI_BASE_TOKENS, OPENAI_TILE_TOKENS = 85, 170
MINI_BASE_TOKENS, MINI_TILE_TOKENS = 2833, 5667
"""gpt-4o-mini counts its tiles this many tokens (priced to cost what gpt-4o's do)."""
GEMINI_SMALL_SIDE, GEMINI_TILE, GEMINI_TILE_TOKENS = 384, 768, 258
DATA_URL_CACHE = 16
"""Encoded images kept in memory (each at most `images.max_bytes` * 4/3)."""
HEADER_SAMPLE = 128 * 1024
"""Base64 characters decoded to find an image's size (a JPEG's frame header can sit
behind tens of KB of EXIF data)."""

NOT_SHOWN = "(The image is not shown: this model does not take images.)"
GONE = (
    "[Image {name} is no longer stored (saved images are deleted after truncation.retention_days).]"
)


def _takes_tool_images(model: str) -> bool:
    """Anthropic's Messages API takes images inside tool results (litellm's route)."""
    lowered = model.lower()
    return lowered.startswith("anthropic/") or ("/" not in lowered and "claude" in lowered)


def image_placement(model: str, config: Config) -> ImagePlacement:
    """Where `model`'s requests carry the images tools return."""
    if not model_info(model, config).vision:
        return "note"
    return "tool" if _takes_tool_images(model) else "user"


# ---- what goes in the request ---------------------------------------------------------


def live_images(part: ToolPart) -> list[ImageAttachment]:
    """The images of a completed call that the model still sees (not pruned)."""
    state = part.state
    if not isinstance(state, ToolStateCompleted) or state.time.compacted:
        return []
    return state.attachments


@lru_cache(maxsize=DATA_URL_CACHE)
def _data_url(path: str, sha256: str, mime: str) -> str | None:
    """The stored image as a data URL; None when it is gone. `sha256` keys the cache."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def image_block(image: ImageAttachment) -> dict[str, Any]:
    """An OpenAI-style image block (litellm converts it for each provider), or a text
    block saying the stored copy is gone."""
    if (url := _data_url(image.path, image.sha256, image.mime)) is None:
        return {"type": "text", "text": GONE.format(name=image.name or image.path)}
    if image.width and image.height:
        _sizes[url] = (image.width, image.height)
    return {"type": "image_url", "image_url": {"url": url}}


def file_image_block(part: FilePart, placement: ImagePlacement) -> dict[str, Any]:
    """An image attached to a user message (`@shot.png`): a stored copy (`file://`) is
    sent as data, a data or web URL as it is; a note for a model without vision."""
    name = part.filename or part.url
    if placement == "note":
        return {
            "type": "text",
            "text": f"[Image {name} not shown: this model does not take images.]",
        }
    url: str | None = part.url
    if part.url.startswith("file://"):
        url = _data_url(unquote(urlparse(part.url).path), "", part.mime)
    if url is None:
        return {"type": "text", "text": GONE.format(name=name)}
    return {"type": "image_url", "image_url": {"url": url}}


def tool_result_content(
    part: ToolPart, text: str, placement: ImagePlacement
) -> str | list[dict[str, Any]]:
    """The content of a tool result message: its text, with its images when they go there."""
    if not (images := live_images(part)):
        return text
    if placement == "tool":
        return [{"type": "text", "text": text}, *(image_block(image) for image in images)]
    if placement == "note":
        return f"{text}\n{NOT_SHOWN}"
    return text


def images_message(parts: list[ToolPart], placement: ImagePlacement) -> dict[str, Any] | None:
    """The synthetic user message that carries a step's images after its tool results
    (placement `user`), each after a line naming the call it came from; else None."""
    if placement != "user":
        return None
    content: list[dict[str, Any]] = []
    for part in parts:
        for image in live_images(part):
            label = f"The image returned by the {part.tool} call above ({image.name}):"
            content += [{"type": "text", "text": label}, image_block(image)]
    return {"role": "user", "content": content} if content else None


# ---- tokens ---------------------------------------------------------------------------


def _scaled(width: int, height: int, factor: float) -> tuple[float, float]:
    return (width * factor, height * factor) if factor < 1 else (width, height)


def _openai_tiles(lowered: str) -> bool:
    """OpenAI's own vision models (gpt-4o, gpt-4.1, gpt-5, o-series) price by tiles."""
    provider, _, name = lowered.rpartition("/")
    return (provider or "openai") in ("openai", "azure") and name.startswith(
        ("gpt-4o", "gpt-4.1", "gpt-5", "chatgpt", "o1", "o3", "o4")
    )


def image_tokens(width: int | None, height: int | None, model: str) -> int:
    """What one image costs in `model`'s requests by its provider's rule."""
    if not width or not height:
        return FALLBACK_IMAGE_TOKENS
    lowered = model.lower()
    if "gemini" in lowered:
        if width <= GEMINI_SMALL_SIDE and height <= GEMINI_SMALL_SIDE:
            return GEMINI_TILE_TOKENS
        tiles = math.ceil(width / GEMINI_TILE) * math.ceil(height / GEMINI_TILE)
        return tiles * GEMINI_TILE_TOKENS
    if _openai_tiles(lowered):
        w, h = _scaled(width, height, OPENAI_FIT / max(width, height))
        w, h = _scaled(int(w), int(h), OPENAI_SHORT_SIDE / min(w, h))
        tiles = math.ceil(w / OPENAI_TILE) * math.ceil(h / OPENAI_TILE)
        if "gpt-4o-mini" in lowered:
            return MINI_BASE_TOKENS + MINI_TILE_TOKENS * tiles
        return OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * tiles
    w, h = _scaled(width, height, ANTHROPIC_MAX_SIDE / max(width, height))
    tokens = math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN)
    return min(tokens, ANTHROPIC_MAX_TOKENS)


_sizes: dict[str, tuple[int, int] | None] = {}
"""Data URL -> its image's size (a str caches its hash, so a lookup is cheap)."""


def _url_size(url: str) -> tuple[int, int] | None:
    if url in _sizes:
        return _sizes[url]
    size = None
    if url.startswith("data:") and ";base64," in url:
        head = url.split(",", 1)[1][:HEADER_SAMPLE]
        try:
            data = base64.b64decode(head[: len(head) // 4 * 4])
        except (binascii.Error, ValueError):
            data = b""
        mime = sniff_mime(data[:16])
        size = image_size(data, mime) if mime else None
    if len(_sizes) > 4 * DATA_URL_CACHE:
        _sizes.clear()
    _sizes[url] = size
    return size


def content_image_tokens(content: Any, model: str) -> int:
    """Tokens of the image blocks in a message's content."""
    if not isinstance(content, list):
        return 0
    total = 0
    for block in content:
        if isinstance(block, dict) and block.get("type") == "image_url":
            url = block.get("image_url")
            url = url.get("url", "") if isinstance(url, dict) else str(url or "")
            total += image_tokens(*(_url_size(url) or (None, None)), model)
    return total


def part_image_tokens(part: ToolPart, model: str) -> int:
    """Tokens of the images a call's result still carries (0 once pruned)."""
    return sum(image_tokens(image.width, image.height, model) for image in live_images(part))
