"""agent-tui as an ACP agent: protocol messages in, engine commands out, engine events
back as session updates. One engine serves every session of the connection."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import acp
from acp import RequestError
from acp.schema import (
    AgentCapabilities,
    AvailableCommandsUpdate,
    ClientCapabilities,
    CloseSessionResponse,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    DeleteSessionResponse,
    ForkSessionResponse,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
    StopReason,
    ToolCallUpdate,
)

from agent_tui import __version__
from agent_tui.acp import draft, options
from agent_tui.acp.editor_files import EditorFiles
from agent_tui.acp.person_editor import AcpPerson, available
from agent_tui.acp.prompt_blocks import prompt_parts
from agent_tui.acp.replay import replay
from agent_tui.acp.tool_calls import permission_content, text_content, tool_kind, tool_meta
from agent_tui.acp.updates import (
    SessionUpdates,
    Update,
    iso,
    turn_usage,
    usage_update,
)
from agent_tui.command import catalog
from agent_tui.command.core import ACP, Call, Command, present
from agent_tui.config.settings import McpLocalConfig, McpRemoteConfig
from agent_tui.context.stats import SessionStats
from agent_tui.errors import AgentTuiError, NotFoundError, UsageError
from agent_tui.events import AgentSwitched, Event, Notice, SessionUpdated, session_of
from agent_tui.project.agents import DEFAULT_AGENT, PLAN_EXIT_TOOL
from agent_tui.provider.defaults import context_window, model_catalog
from agent_tui.records import MessageWithParts, Session
from agent_tui.session.engine import Engine
from agent_tui.session.expansion import Expansion
from agent_tui.session.fork import fork
from agent_tui.session.loop import LoopResult
from agent_tui.tool.base import PermissionReply, PermissionRequest

log = logging.getLogger(__name__)
Opened = TypeVar(
    "Opened", NewSessionResponse, LoadSessionResponse, ResumeSessionResponse, ForkSessionResponse
)

SESSIONS_LISTED = 200
PLAN_ROUNDS = 5
"""Plans the plan agent may propose in one prompt before the turn ends anyway."""

PERMISSION_OPTIONS = [
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Allow always", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    PermissionOption(option_id="reject_always", name="Reject always", kind="reject_always"),
]
REPLIES: dict[str, PermissionReply] = {
    "allow_once": "once",
    "allow_always": "always",
    "reject_once": "deny",
    "reject_always": "never",
}
MODE_SWITCH = "by choosing another mode in the editor's mode selector"
"""How a person leaves plan mode here (an editor has no Tab: it has session modes)."""
PLAN_OPTIONS = [
    PermissionOption(option_id="approve", name="Approve and build", kind="allow_once"),
    PermissionOption(option_id="keep", name="Keep planning", kind="reject_once"),
    PermissionOption(option_id="reject", name="Reject the plan", kind="reject_always"),
]


@dataclass
class AcpSession:
    updates: SessionUpdates
    mode: str = DEFAULT_AGENT
    model: str | None = None
    """Chosen with the model option; None: the session's own."""
    effort: str = "default"
    commands: tuple[Command, ...] = ()
    """What it offers: the built-ins ACP offers, then the project's custom commands."""
    asks: set[asyncio.Future[Any]] = field(default_factory=set)
    """Permission requests waiting for the client (answered as cancelled on cancel)."""
    cancelled: bool = False
    turns: int = 0
    """Prompts of this connection running in the session (asks go to the one prompting)."""

    @property
    def id(self) -> str:
        return self.updates.session_id

    @property
    def directory(self) -> Path:
        return Path(self.updates.directory)


def initialize_response(protocol_version: int) -> InitializeResponse:
    return InitializeResponse(
        protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
        agent_capabilities=AgentCapabilities(
            load_session=True,
            prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
            mcp_capabilities=McpCapabilities(http=True),
            session_capabilities=SessionCapabilities(
                list=SessionListCapabilities(),
                resume=SessionResumeCapabilities(),
                close=SessionCloseCapabilities(),
                fork=SessionForkCapabilities(),
                delete=SessionDeleteCapabilities(),
            ),
        ),
        agent_info=Implementation(name="agent-tui", title="agent-tui", version=__version__),
        auth_methods=[],
    )


def _directory(cwd: str) -> Path:
    """A session's folder as the client gives it (`cwd`)."""
    directory = Path(cwd)
    if not directory.is_absolute() or not directory.is_dir():
        raise RequestError.invalid_params(
            {"cwd": cwd, "reason": "must be the absolute path of an existing folder"}
        )
    return directory


def _client_servers(servers: list[Any] | None) -> dict[str, McpLocalConfig | McpRemoteConfig]:
    """The client's own MCP servers (`mcpServers`) as agent-tui's server configs."""
    found: dict[str, McpLocalConfig | McpRemoteConfig] = {}
    for server in servers or []:
        if isinstance(server, McpServerStdio):
            found[server.name] = McpLocalConfig(
                command=[server.command, *server.args],
                environment={v.name: v.value for v in server.env},
            )
        elif isinstance(server, (HttpMcpServer, SseMcpServer)):
            found[server.name] = McpRemoteConfig(
                url=server.url, headers={h.name: h.value for h in server.headers}
            )
    return found


def _error(exc: AgentTuiError) -> RequestError:
    """A person's or provider's error as JSON-RPC: the sentence `run` prints."""
    return RequestError(-32603, str(exc), {"kind": type(exc).__name__})


class AcpAgent:
    """The `acp.Agent` of agent-tui. Every method is protocol: the work is the engine's."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.conn: acp.Client | None = None
        self.client = ClientCapabilities()
        self.compaction_updates = False
        """The client declared `session.compaction` (acp/draft.py)."""
        self.sessions: dict[str, AcpSession] = {}
        self._roots: dict[str, str] = {}
        """Subagents' sessions -> the session they were started from."""
        self._mode_changes: set[asyncio.Task[None]] = set()
        """The modes an answered plan switched to, being announced."""
        self._outbox: asyncio.Queue[tuple[str, Update]] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._unsubscribe = engine.subscribe(self._on_event)
        AskRouter.of(engine).agents.append(self)
        engine.name_mode_switch(MODE_SWITCH)

    def on_connect(self, conn: acp.Client) -> None:
        self.conn = conn
        draft.serve_delete(conn, self)

    def observe(self, event: Any) -> None:
        """Every message on the wire (the connection's observer): what the SDK's models
        drop from the client's `initialize`."""
        message = getattr(event, "message", None)
        found = draft.declares_compaction(message) if isinstance(message, dict) else None
        if found is not None:
            self.compaction_updates = found

    # ---- sending updates in order ------------------------------------------------------

    def send(self, session_id: str, *updates: Update) -> None:
        if self._sender is None:
            self._sender = asyncio.get_running_loop().create_task(self._send_loop())
        for update in updates:
            self._outbox.put_nowait((session_id, update))

    async def _send_loop(self) -> None:
        while True:
            session_id, item = await self._outbox.get()
            try:
                found = await item() if callable(item) else [item]
                for update in found:
                    if self.conn is None:
                        continue
                    if isinstance(update, draft.Raw):
                        await draft.send(self.conn, session_id, update)
                    else:
                        await self.conn.session_update(session_id=session_id, update=update)
            except Exception:
                log.exception("sending an update to the client failed")
            finally:
                self._outbox.task_done()

    async def _flush(self) -> None:
        """Until every update queued so far has been sent."""
        if self._sender is not None:
            await self._outbox.join()

    def _later(self, session_id: str, *updates: Update) -> None:
        """Send after the response now being returned, which gives the client the session
        id it routes updates by (the TypeScript SDK drops updates of a session it does not
        know yet). Call it last, with no `await` before the `return`: the SDK queues the
        response for writing in the step the handler returns, and this callback runs in
        a later step, so its updates queue behind the response."""
        asyncio.get_running_loop().call_soon(self.send, session_id, *updates)

    # ---- engine events -----------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        if isinstance(event, SessionUpdated) and (parent := event.session.parent_id):
            if (root := self._root_of(parent)) is not None:
                self._roots[event.session.id] = root
        if (session_id := session_of(event)) is None:
            if isinstance(event, Notice) and event.level != "info":
                for open_ in self.sessions.values():
                    self.send(open_.id, *open_.updates(event))
            return
        if (open_ := self.sessions.get(session_id)) is None:
            return
        if isinstance(event, AgentSwitched) and event.agent != open_.mode:
            task = asyncio.create_task(self._set_mode(open_, event.agent))
            self._mode_changes.add(task)
            task.add_done_callback(self._mode_changes.discard)
        self.send(session_id, *open_.updates(event))

    def follows(self, session_id: str) -> AcpSession | None:
        """The open session a session's events and asks belong to (itself or a subagent's
        parent), if this connection has it open."""
        return self.sessions.get(root) if (root := self._root_of(session_id)) else None

    def _root_of(self, session_id: str) -> str | None:
        return session_id if session_id in self.sessions else self._roots.get(session_id)

    # ---- permissions -------------------------------------------------------------------

    async def _ask(self, request: PermissionRequest) -> PermissionReply:
        open_ = self.follows(request.session_id)
        if open_ is None or self.conn is None or open_.cancelled:
            return "deny"
        await self._flush()  # the tool call is on the client before the question
        content = permission_content(
            request.tool, request.input, request.detail, str(open_.directory)
        )
        call = ToolCallUpdate(
            tool_call_id=request.call_id or f"ask-{request.tool}",
            title=request.title,
            kind=tool_kind(request.tool),
            status="pending",
            content=content or None,
            raw_input=request.input,
            field_meta=tool_meta(request.tool),
        )
        outcome = await self.ask(open_, call, PERMISSION_OPTIONS)
        return REPLIES.get(outcome or "", "deny")

    async def ask(
        self, open_: AcpSession, call: ToolCallUpdate, choices: list[PermissionOption]
    ) -> str | None:
        """The option the person chose; None when cancelled (or the client failed)."""
        assert self.conn is not None
        asked = asyncio.ensure_future(
            self.conn.request_permission(session_id=open_.id, tool_call=call, options=choices)
        )
        open_.asks.add(asked)
        try:
            response = await asked
        except (asyncio.CancelledError, RequestError, ConnectionError):
            return None
        finally:
            open_.asks.discard(asked)
        outcome = response.outcome
        return getattr(outcome, "option_id", None) if outcome.outcome == "selected" else None

    # ---- initialize and sessions -------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.client = client_capabilities or ClientCapabilities()
        return initialize_response(protocol_version)

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        session = await self.engine.new_session(_directory(cwd))
        open_ = await self._open(session, servers=mcp_servers)
        return await self._opened(open_, NewSessionResponse, session_id=session.id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        open_, messages = await self._reopen(cwd, session_id, mcp_servers)
        # The history before the response (the spec's order), then the usual updates.
        for update in replay(messages, str(open_.directory), self.compaction_updates):
            self.send(session_id, update)
        await self._flush()
        return await self._opened(open_, LoadSessionResponse)

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> ResumeSessionResponse:
        open_, _ = await self._reopen(cwd, session_id, mcp_servers)  # no replay: the client has it
        return await self._opened(open_, ResumeSessionResponse)

    async def fork_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> ForkSessionResponse:
        """A new session with this one's history (up to `_meta.messageId` when given); the
        client loads nothing: what it showed of the original is the fork's history."""
        await self._reopen(cwd, session_id, None)  # the servers are the fork's
        try:
            forked = await fork(await self.engine.scope(session_id), kwargs.get("messageId"))
        except UsageError as exc:
            raise RequestError.invalid_params({"messageId": str(exc)}) from exc
        open_ = await self._open(forked.session, servers=mcp_servers)
        return await self._opened(open_, ForkSessionResponse, session_id=forked.session.id)

    async def delete_session(self, session_id: str, **kwargs: Any) -> DeleteSessionResponse:
        """Delete a session (and its subagents'); one whose turn runs here is stopped
        first, one busy in another process is refused."""
        if (open_ := self.sessions.get(session_id)) is not None:
            await self.close_session(open_.id)
        if (holder := self.engine.locks.holder(session_id)) is not None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "reason": f"busy in {holder.describe()}"}
            )
        try:
            await self.engine.queries.delete_session(session_id)
        except NotFoundError as exc:
            raise RequestError.resource_not_found(session_id) from exc
        return DeleteSessionResponse()

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        found = await self.engine.queries.list_sessions(cwd, limit=SESSIONS_LISTED, roots_only=True)
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=s.id,
                    cwd=s.directory,
                    title=s.title or None,
                    updated_at=iso(s.updated),
                )
                for s in found
            ]
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        open_ = self._session(session_id)
        await self.cancel(session_id)
        await self.engine.wait_idle(session_id)
        self.sessions.pop(open_.id, None)
        await self.engine.live(open_.id).detach()
        return CloseSessionResponse()

    async def _reopen(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None
    ) -> tuple[AcpSession, list[MessageWithParts]]:
        """A session the client names, opened with its MCP servers, and its messages
        (read once)."""
        _directory(cwd)
        try:
            session = await self.engine.queries.session(session_id)
        except NotFoundError as exc:
            raise RequestError.resource_not_found(session_id) from exc
        messages = await self.engine.queries.messages(session.id)
        return await self._open(session, messages, mcp_servers), messages

    async def _open(
        self,
        session: Session,
        messages: list[MessageWithParts] | None = None,
        servers: list[Any] | None = None,
    ) -> AcpSession:
        """Start following a session: its figures so far, its mode, its commands, and the
        client's own MCP servers for it alone (stopped when the client closes it or goes)."""
        workspace = self.engine.workspace(Path(session.directory))
        if found := _client_servers(servers):
            self.engine.live(session.id).attach_servers(workspace, found)
        if messages is None:
            messages = await self.engine.queries.messages(session.id)
        model = await (await self.engine.scope(session.id)).model()
        updates = SessionUpdates(
            session_id=session.id,
            directory=session.directory,
            load_message=self.engine.queries.message,
            window=await asyncio.to_thread(context_window, model, workspace.config),
            stats=SessionStats.of(messages),
            compaction_updates=self.compaction_updates,
        )
        open_ = AcpSession(updates)
        if users := [m.info for m in messages if m.info.role == "user"]:
            open_.mode = getattr(users[-1], "agent", DEFAULT_AGENT)
        open_.commands = await catalog.offered(ACP, open_.directory)
        self.sessions[session.id] = open_
        fs = self.client.fs
        if self.conn is not None and fs is not None and (fs.read_text_file or fs.write_text_file):
            live = self.engine.live(session.id)
            live.editor = EditorFiles(
                self.conn, session.id, bool(fs.read_text_file), bool(fs.write_text_file)
            )
        return open_

    async def _opened(self, open_: AcpSession, response: type[Opened], **fields: Any) -> Opened:
        """The response to a session opened: its modes and options; the commands and the
        usage so far follow right after it (nothing awaited after `_later`)."""
        config_options = await self._config_options(open_)
        self._later(
            open_.id,
            AvailableCommandsUpdate(
                session_update="available_commands_update",
                available_commands=available(open_.commands),
            ),
            usage_update(open_.updates.stats, open_.updates.window),
        )
        modes = options.modes(self.engine.workspace(open_.directory).agent_catalog(), open_.mode)
        return response(modes=modes, config_options=config_options, **fields)

    def _session(self, session_id: str) -> AcpSession:
        if (found := self.sessions.get(session_id)) is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "reason": "no such session open: session/new or load"}
            )
        return found

    # ---- modes, models, reasoning --------------------------------------------------------

    async def _config_options(self, open_: AcpSession) -> list[Any]:
        workspace = self.engine.workspace(open_.directory)
        config, agents = workspace.config, workspace.agent_catalog()
        model = open_.model or await (await self.engine.scope(open_.id)).model()
        rows = await asyncio.to_thread(model_catalog, config, [model])
        return options.config_options(agents, config, open_.mode, model, rows, open_.effort)

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        await self._set_mode(self._session(session_id), mode_id)
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        open_ = self._session(session_id)
        if not isinstance(value, str):
            raise RequestError.invalid_params({"configId": config_id, "reason": "a select value"})
        if config_id == options.MODE:
            await self._set_mode(open_, value)
        elif config_id == options.MODEL:
            config = self.engine.workspace(open_.directory).config
            rows = await asyncio.to_thread(model_catalog, config, [value])
            if value not in {row.id for row in rows}:
                raise RequestError.invalid_params({"configId": config_id, "value": value})
            open_.model = value
        elif config_id == options.THOUGHT and value in options.EFFORTS:
            open_.effort = value
            live = self.engine.live(open_.id)
            live.reasoning_effort = None if value == "default" else value  # type: ignore[assignment]
        else:
            raise RequestError.invalid_params({"configId": config_id, "value": value})
        return SetSessionConfigOptionResponse(config_options=await self._config_options(open_))

    async def _set_mode(self, open_: AcpSession, mode: str) -> None:
        try:
            self.engine.workspace(open_.directory).agent_catalog().chosen(mode)
        except AgentTuiError as exc:
            raise RequestError.invalid_params({"modeId": mode, "reason": str(exc)}) from exc
        open_.mode = mode
        self.send(
            open_.id,
            CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode),
            ConfigOptionUpdate(
                session_update="config_option_update",
                config_options=await self._config_options(open_),
            ),
        )

    # ---- prompts -----------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        open_ = self._session(session_id)
        open_.cancelled = False
        open_.turns += 1
        open_.updates.turn = []
        try:
            return await self._prompt_turn(open_, prompt)
        finally:
            open_.turns -= 1

    async def _prompt_turn(self, open_: AcpSession, prompt: list[Any]) -> PromptResponse:
        text, context, files = prompt_parts(prompt, open_.directory)
        try:
            name, typed = catalog.parse(text) or ("", "")
            if (command := catalog.called(name.lower(), open_.commands)) is None:
                result = await self.prompt_text(open_, text, open_.model, context, files)
                return await self._stop(open_, result)
            person = AcpPerson(self, open_, context, files)
            call = Call(self.engine, person, open_.directory, open_.id, open_.model)
            await present(person, command, await command.run(call, command.parse(typed)))
            await self.engine.wait_idle(open_.id)
            return await self._stop(open_, person.result)
        except AgentTuiError as exc:
            await self._flush()
            raise _error(exc) from exc

    async def prompt_text(
        self,
        open_: AcpSession,
        text: str,
        model: str | None,
        context: list[str],
        files: list[Any],
        expansion: Expansion | None = None,
    ) -> LoopResult | None:
        """One prompt; a plan the plan agent proposes is put to the person, and an
        approval carries on building in the same turn. `expansion`: the custom command
        the person typed, when `text` is its body."""
        result = await self.engine.prompt(
            open_.id,
            text,
            model=model,
            agent=open_.mode,
            context=context,
            files=files,
            expansion=expansion,
        )
        for _ in range(PLAN_ROUNDS):
            if result is None:  # queued into the running loop: it answers there
                await self.engine.wait_idle(open_.id)
                return None
            if result.plan is None or result.outcome != "stop" or open_.cancelled:
                return result
            if (choice := await self._ask_plan(open_, result.plan)) not in ("approve", "reject"):
                return result
            result = await self.engine.answer_plan(open_.id, result.plan, choice, model=model)
        return result

    async def _ask_plan(self, open_: AcpSession, plan: str) -> str | None:
        await self._flush()
        call = ToolCallUpdate(
            tool_call_id=f"plan-{open_.id}-{len(open_.asks)}",
            title="Approve the plan and start building?",
            kind="switch_mode",
            status="pending",
            content=[text_content(plan)],
            raw_input={"tool": PLAN_EXIT_TOOL, "plan": plan},
        )
        return await self.ask(open_, call, PLAN_OPTIONS)

    async def _stop(self, open_: AcpSession, result: LoopResult | None) -> PromptResponse:
        await self._flush()
        if result is not None and result.outcome == "error" and not open_.cancelled:
            raise RequestError(-32603, result.error or "The run failed.", {"kind": "provider"})
        return PromptResponse(
            stop_reason=_stop_reason(open_, result), usage=turn_usage(open_.updates.turn)
        )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if (open_ := self.sessions.get(session_id)) is None:
            return
        open_.cancelled = True
        open_.updates.cancelling = True
        for asked in list(open_.asks):
            asked.cancel()
        self.engine.abort(session_id)

    async def close(self) -> None:
        """The connection ends: stop the turns it started (what streamed is kept), answer
        its pending permission questions as refused, and stop following the engine."""
        for open_ in list(self.sessions.values()):
            if open_.turns:
                await self.cancel(open_.id)
                await self.engine.wait_idle(open_.id)
            await self.engine.live(open_.id).detach()  # no process of its servers outlives
        self._unsubscribe()
        router = AskRouter.of(self.engine)
        if self in router.agents:
            router.agents.remove(self)
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender


def _stop_reason(open_: AcpSession, result: LoopResult | None) -> StopReason:
    if open_.cancelled or (result is not None and result.outcome == "aborted"):
        return "cancelled"
    if result is not None and result.max_steps_reached:
        return "max_turn_requests"
    if (last := open_.updates.stats.last_step) is not None and last.finish == "content_filter":
        return "refusal"
    return "end_turn"


class AskRouter:
    """The engine's `ask` when ACP connections serve it (one over stdio, any number under
    `agent-tui serve`): a permission question goes to the connection prompting the session,
    else to one that has it open; with none, it is refused as in headless `run`."""

    def __init__(self) -> None:
        self.agents: list[AcpAgent] = []

    @classmethod
    def of(cls, engine: Engine) -> AskRouter:
        return engine.ask_through(cls)

    async def __call__(self, request: PermissionRequest) -> PermissionReply:
        following = [(a, s) for a in self.agents if (s := a.follows(request.session_id))]
        prompting = [agent for agent, open_ in following if open_.turns]
        chosen = prompting or [agent for agent, _ in following]
        return await chosen[0]._ask(request) if chosen else "deny"


class Unconfigured:
    """Serves an editor while agent-tui cannot start (a broken config file): initialize
    answers, and every session request gets the error naming the file and the field."""

    def __init__(self, error: AgentTuiError) -> None:
        self.error = error

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return initialize_response(protocol_version)

    async def new_session(self, **kwargs: Any) -> Any:
        raise _error(self.error)

    load_session = resume_session = list_sessions = close_session = new_session
    prompt = set_session_mode = set_config_option = new_session

    async def cancel(self, **kwargs: Any) -> None:
        return None
