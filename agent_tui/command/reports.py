"""/context, /mcp and /help: what fills the context window, the MCP servers, the commands."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agent_tui.command.core import ACP, APP, Call, Command, Document, NoArgs, Result

if TYPE_CHECKING:
    from agent_tui.config.settings import KeybindsConfig


async def _context(call: Call, args: NoArgs) -> Result:
    """Before a first message (no session), what the first request would carry."""
    from agent_tui.context.breakdown import report

    if call.session_id is None:
        return Document(await report(call.workspace, call.directory, [], call.model))
    scope = await call.scope()
    history = await scope.history()
    return Document(await report(scope.workspace, scope.directory, history, call.model))


async def _mcp(call: Call, args: NoArgs) -> Result:
    """The project's servers, then the session's own (an editor's)."""
    text = call.workspace.mcp.render()
    own = (await call.scope()).live.mcp if call.session_id is not None else None
    if own is not None and own.servers:
        text += "\n\nThis session's own, from the editor:\n" + own.render()
    return Document(text, "MCP servers")


async def _help(call: Call, args: NoArgs) -> Result:
    from agent_tui.command.catalog import offered

    keys = call.workspace.config.keybinds
    commands = await offered(call.person.view, call.directory)
    return Document(help_text(commands, keys if call.person.view == APP else None), "Help")


def help_text(commands: Sequence[Command], keys: KeybindsConfig | None) -> str:
    """The commands, their arguments and help; with the app's `keys`, its leader keys and
    the rest of its keys."""
    completes = ", Tab completes" if keys is not None else ""  # the app's key
    lines = [f"Commands (type / for completion{completes}):", ""]
    width = max(26, *(len(c.usage) + 2 for c in commands))
    for command in commands:
        alias = f" (alias /{', /'.join(command.aliases)})" if command.aliases else ""
        leader = ""
        if command.keybind and keys is not None:
            leader = f"   [{keys.leader} {getattr(keys, command.keybind)}]"
        lines.append(f"  {command.usage:<{width}}{command.help}{alias}{leader}")
    if keys is not None:
        lines += ["", *APP_KEYS.format(k=keys, pad=24 - len(keys.leader)).splitlines()]
    return "\n".join(lines)


APP_KEYS = """\
Keys:
  Enter                     send (while the agent works, the message is queued)
  Shift+Enter, Ctrl+J       new line
  Up / Down                 previous / next message (on the first / last line)
  PageUp / PageDown         scroll the conversation (the input keeps focus)
  @                         attach a file or folder (a picker opens; fuzzy filter)
  !command                  run a shell command; the model sees it next message
  Tab (empty prompt)        next agent: build, plan (read-only), yours  [{k.leader} {k.agent_cycle}]
  Shift+Tab                 auto-accept edits on / off  [{k.leader} {k.permission_mode}]
  Ctrl+O (on a message)     its actions: fork, compact up to here, pin, copy (click it first)
  {k.interrupt:<26}interrupt the running step or compaction
  {k.background:<26}send the running bash command to the background (/bashes)
  {k.leader} {k.sidebar:<{pad}}show / hide the sidebar
  {k.palette:<26}command palette
  Ctrl+C twice              quit

Keys are set under "keybinds" in agent-tui.json."""


CONTEXT = Command(
    "context",
    "Show what fills the context window",
    _context,
    model=True,
    session_optional=True,
)
MCP = Command(
    "mcp",
    "List the MCP servers, their state and their tools",
    _mcp,
    session=False,
    views=frozenset({APP, ACP}),
)
HELP = Command("help", "List commands and keys", _help, session=False, views=frozenset({APP, ACP}))
