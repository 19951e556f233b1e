"""`agent-tui acp`: the ACP agent over stdio. Only protocol goes to stdout: the protocol
gets its own copies of stdin and stdout, and fds 0 and 1 become /dev/null and stderr, so
no print, library or child process can write into (or read from) the protocol."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import BinaryIO

from agent_tui import paths
from agent_tui.config.settings import load_config
from agent_tui.errors import AgentTuiError
from agent_tui.provider.defaults import choose_model

LOG_FILE = "acp.log"


def _protocol_pipes() -> tuple[BinaryIO, BinaryIO]:
    """(input, output) of the protocol, moved off fds 0 and 1."""
    protocol_in = os.fdopen(os.dup(0), "rb", buffering=0)
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_in, protocol_out


def log_to_file(name: str = LOG_FILE, *, stderr: bool = True) -> Path:
    """Everything to `<data dir>/logs/NAME`; warnings and errors to stderr too (editors
    show it in their logs) unless `stderr` is False."""
    path = paths.data_dir() / "logs" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    if stderr:
        err = logging.StreamHandler(sys.stderr)
        err.setLevel(logging.WARNING)
        root.addHandler(err)
    root.setLevel(logging.INFO)
    return path


async def _streams(
    protocol_in: BinaryIO, protocol_out: BinaryIO
) -> tuple[asyncio.StreamWriter, asyncio.StreamReader]:
    from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES
    from acp.stdio import _WritePipeProtocol

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), protocol_in)
    protocol = _WritePipeProtocol()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, protocol_out)
    return asyncio.StreamWriter(transport, protocol, None, loop), reader


async def _serve(protocol_in: BinaryIO, protocol_out: BinaryIO) -> int:
    import acp

    from agent_tui.acp.agent import AcpAgent, Unconfigured
    from agent_tui.session.opening import open_engine

    writer, reader = await _streams(protocol_in, protocol_out)
    try:
        config = load_config()
        await choose_model(config, probe=True)
    except AgentTuiError as exc:  # the editor shows it on each request instead of a dead agent
        logging.getLogger(__name__).error("%s", exc)
        await acp.run_agent(Unconfigured(exc), writer, reader, use_unstable_protocol=True)
        return 1
    async with open_engine(config, "acp") as engine:  # "busy in agent-tui acp"
        agent = AcpAgent(engine)
        try:
            # Unstable routes on: session/resume and session/close are in the SDK's list.
            await acp.run_agent(
                agent, writer, reader, use_unstable_protocol=True, observers=[agent.observe]
            )
        finally:
            await agent.close()
    return 0


def serve_stdio() -> int:
    protocol_in, protocol_out = _protocol_pipes()
    log_path = log_to_file()
    logging.getLogger(__name__).info("agent-tui acp started; log at %s", log_path)
    from agent_tui.provider import remote

    if remote.start() is None:  # the relay (or a provider process): litellm is there
        from agent_tui.provider.loader import preload_in_background

        preload_in_background(tokenizer=False)  # the first prompt need not wait for litellm
    return asyncio.run(_serve(protocol_in, protocol_out))
