"""`agent-tui run --attach URL` (or `run.attach` in the config): the prompt is sent to a
running `agent-tui serve` as an ACP client, and the answer printed as `run` prints it,
with its exit codes: 0 done, 1 error, 130 interrupted (the first Ctrl+C cancels the turn
on the server, which keeps what streamed; a second one quits at once)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from agent_tui import __version__, errors
from agent_tui.attach.render import JsonRenderer, Renderer, TextRenderer, tool_name
from agent_tui.attach.rpc import RESOURCE_NOT_FOUND, ConnectionLost, Rpc, RpcError
from agent_tui.attach.target import Target
from agent_tui.attach.websocket import WebSocket, WebSocketError
from agent_tui.editor import run_message
from agent_tui.errors import AgentTuiError, NotFoundError, UsageError
from agent_tui.run_output import READER_GONE_EXIT, START_HINT, exit_code
from agent_tui.server_link import discovery, server_token

PROTOCOL_VERSION = 1
ENDPOINT = "/acp"
DEFAULT_AGENT = "build"
UNSANDBOXED = "unsandboxed"
"""The permission a sandbox-blocked command asks to run outside (tool/escalation.py)."""


def _endpoint(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith(ENDPOINT) else url + ENDPOINT


def _token_for(target: Target) -> str:
    if target.token:
        return target.token
    running = discovery.running_server()
    if running is not None and _endpoint(running.url) == _endpoint(target.url):
        return running.token
    if found := server_token.read_token():
        return found
    raise UsageError(
        f"No token for {target.url}: give the server's token with --token or "
        f"${server_token.TOKEN_ENV} (agent-tui serve keeps it in {server_token.token_path()})."
    )


def connect(target: Target) -> WebSocket | None:
    """The socket to the server; None when an automatically found one cannot be reached."""
    url = _endpoint(target.url)
    headers = {"Authorization": server_token.header(_token_for(target)), "User-Agent": "agent-tui"}
    try:
        return WebSocket.connect(url, headers)
    except WebSocketError as exc:
        if exc.status in (401, 403):
            raise AgentTuiError(
                f"agent-tui serve at {target.url} refused the token (HTTP {exc.status}). Give "
                f"that server's token with --token or ${server_token.TOKEN_ENV}; on its own "
                f"machine it is in {server_token.token_path()}."
            ) from exc
        if target.auto and exc.status is None:
            return None  # server.json named a process that does not serve: run here
        raise AgentTuiError(
            f"Cannot reach agent-tui serve at {target.url}: {exc}. Start it with "
            "`agent-tui serve`, or run without --attach."
        ) from exc


@contextlib.contextmanager
def _interrupts() -> Iterator[socket.socket]:
    """Ctrl+C while the prompt runs: the first writes to the socket given (the turn is
    cancelled on the server), the second quits at once (as in `run`)."""
    reader, writer = socket.socketpair()
    count = 0

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal count
        count += 1
        if count > 1:
            raise KeyboardInterrupt
        writer.send(b"!")

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield reader
    finally:
        signal.signal(signal.SIGINT, previous)
        reader.close()
        writer.close()


class AttachedRun:
    def __init__(self, args: argparse.Namespace, rpc_ws: WebSocket, renderer: Renderer) -> None:
        self.args = args
        self.renderer = renderer
        self.allowed = set(args.allow)
        if getattr(args, "allow_unsandboxed", False):
            self.allowed.add(UNSANDBOXED)
        self.session_id: str | None = None
        self.rpc = Rpc(rpc_ws, self._notification, self._request)

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "session/update" and params.get("sessionId") == self.session_id:
            if isinstance(update := params.get("update"), dict):
                self.renderer.update(str(self.session_id), update)

    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method != "session/request_permission":
            raise RpcError(-32601, f"{method} is not offered by run --attach")
        call = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        # Headless: what --allow names runs, anything else is refused (the plan agent's
        # plan is kept, not built: `run --agent plan` prints it).
        wanted = "allow_once" if tool_name(call) in self.allowed else "reject_once"
        chosen = next((o for o in options if o.get("kind") == wanted), None)
        self.renderer.permission(str(params.get("sessionId")), call, wanted)
        if chosen is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": chosen.get("optionId")}}

    # ---- the steps of one run --------------------------------------------------------

    def initialize(self) -> None:
        self.rpc.call(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {
                    "fs": {"readTextFile": False, "writeTextFile": False},
                    "terminal": False,
                },
                "clientInfo": {"name": "agent-tui-attach", "version": __version__},
            },
        )

    def open_session(self) -> dict[str, Any]:
        cwd = str(Path.cwd())
        args = self.args
        if not (args.session or args.cont):
            return self.rpc.call("session/new", {"cwd": cwd, "mcpServers": []})
        if args.cont:
            if not (listed := self.rpc.call("session/list", {"cwd": cwd}).get("sessions") or []):
                raise NotFoundError(f"No session to continue in {cwd}. {START_HINT}")
            session_id = listed[0]["sessionId"]
        else:
            session_id = args.session
        params = {"sessionId": session_id, "cwd": cwd, "mcpServers": []}
        try:
            opened = self.rpc.call("session/resume", params)
        except RpcError as exc:
            if exc.code != RESOURCE_NOT_FOUND or args.cont:
                raise
            params["sessionId"] = session_id = self._by_prefix(session_id)
            opened = self.rpc.call("session/resume", params)
        return {**opened, "sessionId": session_id}

    def _by_prefix(self, prefix: str) -> str:
        listed = self.rpc.call("session/list", {}).get("sessions") or []
        ids = [str(s.get("sessionId")) for s in listed]
        starts = (prefix,) if prefix.startswith("ses_") else (prefix, f"ses_{prefix}")
        found = [i for i in ids if i.startswith(starts)]
        if len(found) == 1:
            return found[0]
        if found:
            raise UsageError(f"Session id prefix {prefix!r} matches several sessions: give more.")
        raise NotFoundError(
            f"No session id starts with {prefix!r} on the server (list them with: "
            "agent-tui sessions)."
        )

    def configure(self, opened: dict[str, Any]) -> None:
        sid = self.session_id
        wanted = self.args.agent or DEFAULT_AGENT
        if (opened.get("modes") or {}).get("currentModeId") != wanted:
            self.rpc.call("session/set_mode", {"sessionId": sid, "modeId": wanted})
        if self.args.model:
            self.rpc.call(
                "session/set_config_option",
                {"sessionId": sid, "configId": "model", "value": self.args.model},
            )

    def prompt(self, text: str) -> str:
        """How the turn stopped: Ctrl+C, or a reader that closed the pipe, cancels it."""
        sid = self.session_id
        self.renderer.on_reader_gone = cancel = lambda: self.rpc.notify(
            "session/cancel", {"sessionId": sid}
        )
        with _interrupts() as wakeup:
            result = self.rpc.call(
                "session/prompt",
                {"sessionId": sid, "prompt": [{"type": "text", "text": text}]},
                wakeup=wakeup,
                on_wakeup=cancel,
            )
        return str((result or {}).get("stopReason") or "end_turn")


def _exit_code(kind: str | None) -> int:
    found = getattr(errors, kind, None) if kind else None
    return found.exit_code if isinstance(found, type) and issubclass(found, AgentTuiError) else 1


def run_attached(args: argparse.Namespace, target: Target) -> int | None:
    """`run` through the server; None when `run.attach: auto` found no server to reach."""
    if (ws := connect(target)) is None:
        return None  # before reading the message: a prompt on stdin is still there for `run`
    renderer: Renderer = JsonRenderer() if args.format == "json" else TextRenderer()
    run = AttachedRun(args, ws, renderer)
    prompting = False
    try:
        text = run_message(args.message)
        run.initialize()
        opened = run.open_session()
        run.session_id = str(opened["sessionId"])
        run.configure(opened)
        prompting = True
        stop = run.prompt(text)
        if renderer.reader_gone:  # `| head` has what it wanted: nobody is left to tell
            return READER_GONE_EXIT
        renderer.finished(run.session_id, stop)
        return exit_code("aborted" if stop == "cancelled" else "done")
    except RpcError as exc:
        renderer.failed(run.session_id, exc.kind or "error", exc.reason())
        # Invalid parameters before the prompt: the session, agent or model asked for.
        refused = exc.code == -32602 and not prompting
        code = UsageError.exit_code if refused else _exit_code(exc.kind)
        return exit_code("error", exc.reason(), code)
    except (ConnectionLost, WebSocketError) as exc:
        raise AgentTuiError(
            f"agent-tui serve at {target.url} closed the connection before the answer ended "
            f"({exc or 'the server stopped?'})."
        ) from exc
    finally:
        ws.close()
