"""A prompt's content blocks as the engine takes them: the typed text, texts the model
reads with it (files the editor attached), and images."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp.schema import (
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from agent_tui.records import FilePart


def _path_of(uri: str, directory: Path) -> str:
    """A file:// URI as a path relative to the session's folder when inside it."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    path = Path(unquote(parsed.path))
    try:
        return str(path.relative_to(directory))
    except ValueError:
        return str(path)


def _image(data: str, mime: str, name: str | None) -> FilePart:
    # Ids are given by Engine.prompt when the message is saved.
    return FilePart(
        id="",
        session_id="",
        message_id="",
        mime=mime,
        filename=name,
        url=f"data:{mime};base64,{data}",
    )


def prompt_parts(blocks: list[Any], directory: Path) -> tuple[str, list[str], list[FilePart]]:
    """(text, context, images). A linked file is named in the text as `@path` (the
    engine attaches it as the app's @ does); an embedded one is named, and its text is
    context the model reads."""
    texts: list[str] = []
    context: list[str] = []
    files: list[FilePart] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, ImageContentBlock):
            files.append(_image(block.data, block.mime_type, block.uri))
        elif isinstance(block, ResourceContentBlock):
            texts.append(f"@{_path_of(block.uri, directory)}")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                name = _path_of(resource.uri, directory)
                # The editor's text (unsaved changes included), not the disk's: no @.
                context.append(f'<file path="{name}">\n{resource.text}\n</file>')
                texts.append(name)
            elif isinstance(resource, BlobResourceContents) and (
                resource.mime_type or ""
            ).startswith("image/"):
                files.append(_image(resource.blob, resource.mime_type or "", resource.uri))
    return " ".join(t for t in texts if t), context, files
