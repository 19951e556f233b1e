"""`agent-tui serve`: one warm server (litellm imported, config read, database open) that
`run --attach` and other ACP clients reach over a WebSocket on 127.0.0.1, with a token."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import socket
import sys

from agent_tui.acp.stdio import log_to_file
from agent_tui.config.settings import Config, load_config
from agent_tui.errors import UsageError
from agent_tui.provider.defaults import choose_model, context_window, model_catalog
from agent_tui.server_link import discovery, server_token

LOG_FILE = "serve.log"
GRACE_SECONDS = 10
"""On Ctrl+C / SIGTERM: how long running turns get to stop before connections are cut."""
PING_SECONDS = 20.0
"""WebSocket pings: a client that vanished without closing is noticed within ~2× this."""

log = logging.getLogger(__name__)


class _DenialNoise(logging.Filter):
    """uvicorn's websockets-sansio logs "returned without completing handshake" after a
    handshake refused with an HTTP response (our 401), which is the ASGI way to refuse."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "without completing handshake" not in record.getMessage()


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything is announced (port 0: any free one)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UsageError(f"serve --host {host}: not an address of this machine ({exc}).") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(
                f"Port {port} on {host} is in use (another agent-tui serve?). Choose another "
                "with --port N, or --port 0 for any free one."
            ) from exc
        raise UsageError(f"Cannot listen on {host}:{port}: {exc.strerror or exc}.") from exc
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    if sock.family == socket.AF_INET6:
        host = f"[{host}]"
    if host in ("0.0.0.0", "[::]"):  # reachable on every address: attach through loopback
        host = "127.0.0.1" if sock.family == socket.AF_INET else "[::1]"
    return f"http://{host}:{port}"


async def _serve(config: Config, sock: socket.socket, token: str) -> None:
    import uvicorn

    from agent_tui.provider import remote
    from agent_tui.provider.loader import load_litellm
    from agent_tui.server.asgi import ENDPOINT, ServerApp
    from agent_tui.session.opening import open_engine

    await choose_model(config, probe=True)
    async with open_engine(config, "serve") as engine:  # "busy in agent-tui serve"
        if remote.current() is None:  # litellm here: warm, the first prompt does not wait
            await load_litellm()
        # ...nor for what a first session reads once: the price map and the model's window.
        await asyncio.to_thread(context_window, config.model, config)
        await asyncio.to_thread(model_catalog, config, [config.model])
        app = ServerApp(engine, token)
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                lifespan="off",
                ws="websockets-sansio",
                ws_ping_interval=PING_SECONDS,
                ws_ping_timeout=PING_SECONDS,
                log_level="warning",
                timeout_graceful_shutdown=GRACE_SECONDS,
            )
        )
        server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign]
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, lambda: setattr(server, "should_exit", True))
        url = _url(sock)
        discovery.write_state(discovery.RunningServer(url=url, pid=os.getpid(), token=token))
        try:
            socket_url = "ws" + url.removeprefix("http") + ENDPOINT
            print(f"agent-tui serve: listening on {url} (ACP over a WebSocket: {socket_url})")
            print(
                f"agent-tui serve: token in {server_token.token_path()}",
                file=sys.stderr,
                flush=True,
            )
            sys.stdout.flush()
            log.info("serving on %s", url)
            await server.serve(sockets=[sock])
        finally:
            discovery.remove_state(os.getpid())
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)


def serve(host: str | None, port: int | None, token: str | None) -> int:
    config = load_config()
    host = host or config.server.host
    port = config.server.port if port is None else port
    if token is not None and len(token.strip()) < 16:
        raise UsageError("serve --token: use at least 16 characters (or omit it: one is made).")
    token = token.strip() if token else server_token.load_or_create_token()
    from agent_tui.provider import remote

    if remote.start() is None:  # the relay (or a provider process): litellm is there
        from agent_tui.provider.loader import preload_in_background

        preload_in_background(tokenizer=True)
    log_path = log_to_file(LOG_FILE, stderr=False)
    logging.getLogger("uvicorn.error").addFilter(_DenialNoise())
    sock = _bind(host, port)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"agent-tui serve: listening on {host}, not only this machine: whoever has the "
            "token can run commands here.",
            file=sys.stderr,
        )
    log.info("agent-tui serve starting; log at %s", log_path)
    try:
        asyncio.run(_serve(config, sock, token))
    finally:
        sock.close()
    return 0
