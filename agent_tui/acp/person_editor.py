"""ACP's adapter of a command (command/core.py), the person in their editor: what a command
says or shows is agent text (a report as Markdown that keeps its layout and wraps:
acp/markdown.py), a question is a permission question, rows are listed, and a custom
command's prompt is a turn like any other."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    PermissionOption,
    ToolCallUpdate,
    UnstructuredCommandInput,
)

from agent_tui.acp.markdown import as_markdown
from agent_tui.acp.updates import agent_text, text_content
from agent_tui.command.core import ACP, Command, Result, Rows
from agent_tui.errors import UsageError

if TYPE_CHECKING:
    from agent_tui.acp.agent import AcpAgent, AcpSession
    from agent_tui.records import Session
    from agent_tui.session.expansion import Expansion
    from agent_tui.session.loop import LoopResult

CONFIRM = [
    PermissionOption(option_id="yes", name="Yes", kind="allow_once"),
    PermissionOption(option_id="no", name="No", kind="reject_once"),
]


def available(commands: tuple[Command, ...]) -> list[AvailableCommand]:
    return [
        AvailableCommand(
            name=c.name,
            description=c.help,
            input=AvailableCommandInput(UnstructuredCommandInput(hint=c.arg_hint))
            if c.arg_hint
            else None,
        )
        for c in commands
    ]


class AcpPerson:
    view = ACP
    asks = False

    def __init__(
        self, agent: AcpAgent, open_: AcpSession, context: list[str], files: list[Any]
    ) -> None:
        self.agent, self.open_, self.context, self.files = agent, open_, context, files
        self.result: LoopResult | None = None
        self.asked = 0

    async def say(self, text: str) -> None:
        self.agent.send(self.open_.id, agent_text(text))

    async def show(self, title: str, result: Result) -> None:
        await self.say(as_markdown(result))  # editors render Markdown

    async def confirm(self, question: str, detail: str, yes: str, flag: str) -> bool:
        self.asked += 1
        call = ToolCallUpdate(
            tool_call_id=f"confirm-{self.open_.id}-{self.asked}",
            title=question,
            kind="other",
            status="pending",
            content=[text_content(detail)],
        )
        options = [CONFIRM[0].model_copy(update={"name": yes}), CONFIRM[1]]
        return await self.agent.ask(self.open_, call, options) == "yes"

    async def choose(self, rows: Rows) -> str | None:
        await self.show(rows.title, rows)
        return None

    async def open_session(self, session: Session | None, retype: str | None) -> None:
        await self.retype(retype)  # the sentence names the session

    async def edit(self, title: str, text: str, original: str) -> str | None:
        raise UsageError(
            "No editor over ACP: edit the summary in the app, or with `agent-tui summary "
            "--continue --edit` (--set-file PATH)."
        )

    async def retype(self, text: str | None) -> None:
        if text:
            await self.say(f"Your message was:\n\n{text}")

    async def send(self, text: str, model: str | None, expansion: Expansion) -> None:
        model = model or self.open_.model
        self.result = await self.agent.prompt_text(
            self.open_, text, model, self.context, self.files, expansion=expansion
        )

    async def use_model(self, model: str) -> None:
        self.open_.model = model

    async def leave(self) -> None:
        pass
