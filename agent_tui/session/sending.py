"""What the person sends into a session, saved: a prompt (the files it mentions, what an
editor attached, images, a custom command's `!` lines filled in, a first title) and a
`!command` they run themselves."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from agent_tui.engine_context import EngineContext
from agent_tui.errors import AgentTuiError, UsageError
from agent_tui.events import SessionUpdated
from agent_tui.ids import message_id, now_ms, part_id
from agent_tui.records import (
    FilePart,
    Session,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
    ToolStateRunning,
    ToolTime,
    UserMessage,
)
from agent_tui.scope import SessionScope
from agent_tui.session.mentions import resolve_mentions
from agent_tui.session.title import default_title
from agent_tui.tool.base import ToolContext
from agent_tui.tool.escalation import UNSANDBOXED


def person_tools(ctx: EngineContext, session: Session, message: str, call: str = "") -> ToolContext:
    """What a tool run on the person's behalf needs (mentions, `!command`): nobody
    is asked, so only what config or 'always' allows runs beyond the given grants."""
    context = ctx.tool_context(
        session.id,
        message,
        Path(session.directory),
        call_id=call,
        permissions=dict(ctx.permissions_for(session.id)),
    )
    context.ask = None
    return context


async def save_prompt(
    ctx: EngineContext,
    session: Session,
    text: str,
    model: str,
    agent: str,
    queued: bool,
    context: Sequence[str] = (),
    files: Sequence[FilePart] = (),
) -> bool:
    """Save the person's message with what the model reads beside it; True when it gave
    an untitled session its first title."""
    info = UserMessage(
        id=message_id(), session_id=session.id, model=model, agent=agent, queued=queued
    )
    ids = {"session_id": session.id, "message_id": info.id}
    part = TextPart(id=part_id(), **ids, text=text)
    attachments = await resolve_mentions(text, person_tools(ctx, session, info.id), ctx.registry)
    await ctx.add_message(info, part)
    ctx.live(session.id).newest = info.id
    for attachment in attachments:  # the model reads them; the view shows the typed text
        await ctx.save_part(TextPart(id=part_id(), **ids, text=attachment.text, synthetic=True))
        for image in attachment.images:  # an image file: the image itself
            url = Path(image.path).as_uri()
            await ctx.save_part(
                FilePart(id=part_id(), **ids, mime=image.mime, filename=image.name, url=url)
            )
    for text_ in context:  # e.g. files an editor attached, as it has them
        await ctx.save_part(TextPart(id=part_id(), **ids, text=text_, synthetic=True))
    for file in files:
        await ctx.save_part(file.model_copy(update={"id": part_id(), **ids}))
    if session.title:
        return False
    session.title = default_title(text)
    await ctx.db.update_session(session)
    ctx.publish(SessionUpdated(session=session))
    return True


async def drop_if_empty(ctx: EngineContext, session: Session) -> bool:
    """A session whose first prompt was refused holds nothing: it is not kept."""
    newest, _ = await ctx.db.recent_messages(session.id, 1)
    if newest or session.parent_id is not None:
        return False
    await ctx.db.delete_session(session.id)
    return True


def shell_text(command: str, output: str) -> str:
    """The synthetic user text saved with a `!command` (the model reads it with the next
    message; the view shows the tool line instead)."""
    return (
        f"The person ran this command in the shell themselves:\n<command>\n{command}\n"
        f"</command>\n<output>\n{output}\n</output>"
    )


async def run_person_command(
    ctx: EngineContext,
    info: UserMessage,
    command: str,
    tools: ToolContext,
    saved: asyncio.Event | None = None,
) -> ToolPart:
    """Save `info` with a running bash part (then set `saved`), run the command with the
    bash tool, then save its result and the text the model reads."""
    arguments = {"command": command}
    start = now_ms()
    ids = {"session_id": info.session_id, "message_id": info.id}
    running = ToolStateRunning(input=arguments, title=command, time=ToolTime(start=start))
    part = ToolPart(id=part_id(), **ids, call_id=tools.call_id, tool="bash", state=running)
    await ctx.add_message(info, part)
    if saved is not None:
        saved.set()
    try:
        result = await ctx.registry.run("bash", arguments, tools)
    except AgentTuiError as exc:
        part.state = ToolStateError(
            input=arguments, error=str(exc), time=ToolTime(start=start, end=now_ms())
        )
        output = str(exc)
    else:
        part.state = ToolStateCompleted(
            input=arguments,
            output=result.output,
            title=command,
            metadata=result.metadata,
            time=ToolTime(start=start, end=now_ms()),
        )
        output = result.output
    await ctx.save_part(part)
    text = shell_text(command, output)
    await ctx.save_part(TextPart(id=part_id(), **ids, text=text, synthetic=True))
    return part


async def run_shell(
    scope: SessionScope, command: str, saved: asyncio.Event | None = None
) -> ToolPart:
    """`!command`: the person runs a shell command in the session's folder (theirs,
    so nobody is asked to allow bash; it runs in the sandbox all the same, and the
    person is offered to run it outside when the sandbox blocks it). It is saved as a
    user message: a bash tool part the view shows as a tool line, and synthetic text
    with the output that the model reads with the next message. The model is not
    called."""
    if not command.strip():
        raise UsageError("The command is empty: type a shell command after the !.")
    ctx, session, model = scope.ctx, scope.session, await scope.model()
    # Idle: the session is held while the command runs, so that no loop (of this or
    # another process) starts meanwhile and takes its running part for a crashed one.
    with scope.held() as held:
        info = UserMessage(id=message_id(), session_id=session.id, model=model, queued=not held)
        tools = person_tools(ctx, session, info.id, f"shell-{info.id}")
        tools.permissions["bash"] = "allow"
        await ctx.workspace.announce_sandbox()
        tools.ask = ctx.ask  # only to offer running it outside the sandbox if blocked
        part = await run_person_command(ctx, info, command, tools, saved)
        if tools.permissions.get(UNSANDBOXED) == "allow":  # "always" holds for the session
            ctx.permissions_for(session.id)[UNSANDBOXED] = "allow"
        return part


async def continue_for_hook(scope: SessionScope, reason: str) -> None:
    """A Stop hook blocked the stop: its reason is the next message, for the model and
    agent of the last one."""
    ctx = scope.ctx
    newest = ctx.live(scope.id).newest
    last = await ctx.db.get_message(newest) if newest else None
    if isinstance(last, UserMessage):
        model, agent = last.model, last.agent
    else:  # a run this engine did not prompt: the session's model, the default agent
        model = await scope.model()
        agent = scope.workspace.agent_catalog().chosen(None).name
    await save_prompt(ctx, scope.session, reason, model, agent, queued=False)
