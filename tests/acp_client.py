"""An ACP client for tests, on the SDK's real client side: it starts `agent-tui acp` as a
subprocess over stdio and records every session update it is sent."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.connection import StreamDirection, StreamEvent
from acp.core import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from tests.process_helpers import agent_tui_argv

Answer = Callable[[Any, list[Any]], str | None]
"""(tool call, options) -> the option id to choose, or None to answer cancelled."""


@dataclass
class RecordingClient:
    """Records updates per session; answers permission requests with `answer`."""

    answer: Answer = lambda call, options: "allow_once"
    updates: list[tuple[str, Any]] = field(default_factory=list)
    permissions: list[tuple[str, Any, list[Any]]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    """The editor's buffers: read_text_file serves them (unsaved text); write_text_file
    fills them and saves to disk, as Zed does."""
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append((session_id, tool_call, options))
        self.changed.set()
        choice = self.answer(tool_call, options)
        if choice == "wait":  # never answered: the agent must give up on cancel
            await asyncio.Event().wait()
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice)
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        text = self.files.get(path)
        if text is None:
            text = Path(path).read_text(encoding="utf-8")
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = (line or 1) - 1
            text = "".join(lines[start : start + limit if limit else None])
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.files[path] = content
        self.writes.append(path)
        Path(path).write_text(content, encoding="utf-8")
        return WriteTextFileResponse()

    def of(self, session_id: str, kind: str | None = None) -> list[Any]:
        """The updates of one session (of one `sessionUpdate` kind)."""
        return [
            u
            for s, u in self.updates
            if s == session_id and (kind is None or u.session_update == kind)
        ]

    def text(self, session_id: str) -> str:
        return "".join(u.content.text for u in self.of(session_id, "agent_message_chunk"))

    async def wait_for(self, check: Callable[[], Any], timeout: float = 20) -> Any:
        """Until `check()` is truthy (re-checked whenever something arrives)."""
        async with asyncio.timeout(timeout):
            while not (found := check()):
                self.changed.clear()
                await self.changed.wait()
            return found


def capabilities(fs: bool = False) -> ClientCapabilities:
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=False
    )


class InProcess:
    """Stands in for the agent's process when it serves in the test's own: the protocol
    crosses real pipes as over stdio; `returncode` is None while it serves."""

    def __init__(self, task: asyncio.Task[int]) -> None:
        self.task = task

    @property
    def returncode(self) -> int | None:
        return self.task.result() if self.task.done() else None


@contextlib.asynccontextmanager
async def acp_agent(
    client: RecordingClient,
    project: Path,
    *,
    initialize: bool = True,
    fs: bool = False,
    wire: list[dict[str, Any]] | None = None,
    subprocess: bool = False,
) -> AsyncIterator[tuple[ClientSideConnection, Any]]:
    """The ACP agent in `project` with this process's environment (the test's data and
    config dirs), driven by the SDK's client side. By default it serves in this process
    over a pair of pipes (`agent_tui.acp.stdio._serve`, what `agent-tui acp` runs on its
    stdio); `subprocess`: `python -m agent_tui acp` itself, its stderr in
    project/../acp-stderr.log. `wire` gets every message the agent sends, in order."""

    def observe(event: StreamEvent) -> None:
        if wire is not None and event.direction == StreamDirection.INCOMING:
            wire.append(event.message)

    opened = _spawned(client, project, observe) if subprocess else _in_process(client, observe)
    async with opened as (conn, process):
        if initialize:
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities(fs)
            )
        yield conn, process


@contextlib.asynccontextmanager
async def _spawned(
    client: RecordingClient, project: Path, observe: Callable[[StreamEvent], None]
) -> AsyncIterator[tuple[ClientSideConnection, Any]]:
    log = (project.parent / "acp-stderr.log").open("ab")
    try:
        async with spawn_agent_process(
            client,
            *agent_tui_argv("acp"),
            env=dict(os.environ),
            cwd=project,
            transport_kwargs={"stderr": log},
            use_unstable_protocol=True,
            observers=[observe],
        ) as (conn, process):
            yield conn, process
    finally:
        log.close()


@contextlib.asynccontextmanager
async def _in_process(
    client: RecordingClient, observe: Callable[[StreamEvent], None]
) -> AsyncIterator[tuple[ClientSideConnection, Any]]:
    from agent_tui.acp.stdio import _serve, _streams

    to_agent, to_client = os.pipe(), os.pipe()
    task = asyncio.create_task(
        _serve(os.fdopen(to_agent[0], "rb", 0), os.fdopen(to_client[1], "wb", 0))
    )
    writer, reader = await _streams(
        os.fdopen(to_client[0], "rb", 0), os.fdopen(to_agent[1], "wb", 0)
    )
    conn = ClientSideConnection(
        client, writer, reader, use_unstable_protocol=True, observers=[observe]
    )
    try:
        yield conn, InProcess(task)
    finally:
        await conn.close()
        writer.close()  # the agent reads the end of its input, as when an editor quits
        await asyncio.wait_for(task, 30)


def prompt(text: str) -> list[Any]:
    return [text_block(text)]
