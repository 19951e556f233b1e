"""The editor's files (`fs/read_text_file`, `fs/write_text_file`) for the tools, when
the client offers them: unsaved buffers are read, edits land in the editor."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import acp
from acp import RequestError


@dataclass
class EditorFiles:
    """`tool.base.EditorFiles` over one ACP session's connection."""

    conn: acp.Client
    session_id: str
    can_read: bool
    can_write: bool

    async def read_text(self, path: Path) -> str:
        try:
            response = await self.conn.read_text_file(session_id=self.session_id, path=str(path))
        except RequestError as exc:
            raise OSError(f"the editor could not read {path}: {exc}") from exc
        return response.content

    async def write_text(self, path: Path, content: str) -> None:
        try:
            await self.conn.write_text_file(
                session_id=self.session_id, path=str(path), content=content
            )
        except RequestError as exc:
            raise OSError(f"the editor could not write {path}: {exc}") from exc
