"""Images a tool returns: the format from the bytes, the size from the header, a stored
copy under the data dir.

PNG, JPEG, GIF and WebP are what every vision API takes. Their dimensions are read from
the header in pure Python (no imaging library): they size the request (each provider
prices an image by its pixels) and the line that names the image. The bytes are kept in
the saved-outputs folder as `image_<sha256>.<ext>` (one copy per distinct image; reading
it again touches it), deleted with the saved outputs after `truncation.retention_days`:
the database holds only the path, so it never grows by the images themselves.
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from agent_tui import paths
from agent_tui.config.settings import ImagesConfig
from agent_tui.records import ImageAttachment
from agent_tui.tool.saved_outputs import IMAGE_PREFIX, human_size

EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
FORMAT_NAMES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}
SNIFF_BYTES = 16
"""Bytes enough to tell the four formats apart."""


def sniff_mime(head: bytes) -> str | None:
    """The media type of PNG, JPEG, GIF or WebP bytes (from their magic numbers), else None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Walk the JPEG markers to the first start-of-frame (SOF0-15 but DHT, JPG, DAC)."""
    pos = 2
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            pos += 2
            continue
        (length,) = struct.unpack(">H", data[pos + 2 : pos + 4])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            if pos + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[pos + 5 : pos + 9])
            return width, height
        pos += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    return None


def image_size(data: bytes, mime: str) -> tuple[int, int] | None:
    """(width, height) in pixels from the image's header; None when it cannot be read."""
    try:
        if mime == "image/png" and len(data) >= 24 and data[12:16] == b"IHDR":
            return struct.unpack(">II", data[16:24])
        if mime == "image/gif" and len(data) >= 10:
            return struct.unpack("<HH", data[6:10])
        if mime == "image/jpeg":
            return _jpeg_size(data)
        if mime == "image/webp":
            return _webp_size(data)
    except struct.error:
        return None
    return None


@dataclass(frozen=True)
class ImageFile:
    """An image read from disk: its bytes, media type and size."""

    data: bytes
    mime: str
    width: int | None
    height: int | None

    def describe(self) -> str:
        """`PNG, 800×600, 12.3 KB`."""
        size = f"{self.width}×{self.height}, " if self.width and self.height else ""
        return f"{FORMAT_NAMES[self.mime]}, {size}{human_size(len(self.data))}"


def image_mime(path: Path) -> str | None:
    """The media type when `path` holds a PNG, JPEG, GIF or WebP image (by its bytes)."""
    with path.open("rb") as handle:
        return sniff_mime(handle.read(SNIFF_BYTES))


def load_image(path: Path, mime: str) -> ImageFile:
    data = path.read_bytes()
    return ImageFile(data, mime, *(image_size(data, mime) or (None, None)))


def store_image(image: ImageFile, output_dir: Path, name: str) -> ImageAttachment:
    """Keep a copy under the data dir (content-addressed) and describe it for the part."""
    digest = hashlib.sha256(image.data).hexdigest()
    path = output_dir / f"{IMAGE_PREFIX}{digest}.{EXTENSIONS[image.mime]}"
    if path.is_file():
        os.utime(path)  # in use again: not expired with the old saved outputs
    else:
        paths.atomic_write(path, image.data)
    return ImageAttachment(
        mime=image.mime,
        path=str(path),
        name=name,
        bytes=len(image.data),
        width=image.width,
        height=image.height,
        sha256=digest,
    )


def too_large(shown: str, size: int, limits: ImagesConfig) -> str | None:
    """Why an image of `size` bytes is not sent, or None when it may be."""
    if size <= limits.max_bytes:
        return None
    return (
        f"Cannot show {shown}: the image is {human_size(size)}, over the "
        f"{human_size(limits.max_bytes)} images may be (images.max_bytes). Make a smaller "
        "copy (e.g. `convert in.png -resize 1568x1568 out.png`) and read that."
    )


def too_wide(shown: str, image: ImageFile, limits: ImagesConfig) -> str | None:
    """Why an image of these dimensions is not sent, or None when it may be."""
    if max(image.width or 0, image.height or 0) <= limits.max_side:
        return None
    return (
        f"Cannot show {shown}: the image is {image.width}×{image.height} pixels, over the "
        f"{limits.max_side} pixels a side images may have (images.max_side). Make a "
        "smaller copy and read that."
    )


def image_from_bytes(data: bytes, mime: str) -> ImageFile | None:
    """Bytes a tool got (e.g. an MCP server's base64 image) as an image, when they are
    one of the four formats; `mime` is only a claim, the bytes decide."""
    sniffed = sniff_mime(data[:SNIFF_BYTES])
    if sniffed is None or (mime and sniffed != mime and mime != "image/jpg"):
        return None
    return ImageFile(data, sniffed, *(image_size(data, sniffed) or (None, None)))
