"""Primary agents, plan approval and the quick permission mode in the app (mixed into
AgentApp beside AppCommands). Part of the app's first frame: what the engine defines is
imported where it is used, once the app has started."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from agent_tui.errors import AgentTuiError

if TYPE_CHECKING:
    from agent_tui.agents import AgentCatalog
    from agent_tui.step.plan import PlanChoice
    from agent_tui.storage.models import MessageWithParts
    from agent_tui.tool.registry import PermissionMode
    from agent_tui.tui.app import AgentApp
    from agent_tui.tui.plan_screen import PlanAnswer

BUILD_AGENT = "build"
"""`agents.BUILD`, the agent the first frame names (tests/test_startup.py checks it)."""


class AgentModes:
    """Which agent the next message goes to, and the session's permission mode; `self`
    is the AgentApp."""

    agent_name: str = BUILD_AGENT
    """The primary agent the next message goes to (Tab cycles)."""
    permission_mode: PermissionMode = "ask"
    """ask, or auto-edits for the shown session (Shift+Tab); never saved."""
    agent_catalog: AgentCatalog | None = None
    _pending_plan: str | None = None
    """A plan proposed in this turn, shown for approval once the session is idle."""

    def load_agents(self: AgentApp) -> None:
        """Read the agents (once, at start; bad files are notices) and show the agent."""
        self.agent_catalog = self.engine.ctx.agent_catalog(self.directory)
        self.show_agent()

    def show_agent(self: AgentApp) -> None:
        agent = self.agent_catalog.get(self.agent_name) if self.agent_catalog else None
        self.prompt.show_agent(self.agent_name)
        # The default needs no explanation; any other agent says what it is for.
        described = agent is not None and agent.name != BUILD_AGENT
        self.sidebar.show_agent(self.agent_name, agent.description if described else "")
        self._refresh_sidebar()  # the model may be the agent's own

    @property
    def agent_model(self: AgentApp) -> str:
        """The model the next message uses: a chosen one, else the agent's, else the
        session's."""
        agent = self.agent_catalog.get(self.agent_name) if self.agent_catalog else None
        if self.model_override is None and agent is not None and agent.model:
            return agent.model
        return self.current_model

    def agent_of(self: AgentApp, messages: list[MessageWithParts]) -> None:
        """A session opens with the agent of its newest message (if still primary)."""
        from agent_tui.storage.models import UserMessage

        for message in reversed(messages):
            if isinstance(message.info, UserMessage):
                agent = self.agent_catalog.get(message.info.agent) if self.agent_catalog else None
                if agent is not None and agent.primary and not agent.hidden:
                    self.agent_name = agent.name
                break
        self.show_agent()
        self.apply_permission_mode()

    def action_cycle_agent(self: AgentApp) -> None:
        if self.agent_catalog is None:
            return
        names = [a.name for a in self.agent_catalog.primary()]
        index = names.index(self.agent_name) if self.agent_name in names else -1
        self.agent_name = names[(index + 1) % len(names)]
        self.show_agent()

    def switch_agent(self: AgentApp, name: str) -> None:
        self.agent_name = name
        self.show_agent()

    # ---- permission mode --------------------------------------------------------------

    def action_cycle_permission_mode(self: AgentApp) -> None:
        from agent_tui.tool.registry import PERMISSION_MODES

        index = PERMISSION_MODES.index(self.permission_mode)
        self.permission_mode = PERMISSION_MODES[(index + 1) % len(PERMISSION_MODES)]
        self.apply_permission_mode()

    def apply_permission_mode(self: AgentApp) -> None:
        if self.session is not None:
            self.engine.set_permission_mode(self.session.id, self.permission_mode)
        self.status_line.set_mode(self.permission_mode)

    # ---- the plan ---------------------------------------------------------------------

    def propose_plan(self: AgentApp, plan: str) -> None:
        """The engine's PlanProposed: shown once the session is idle."""
        self._pending_plan = plan

    def show_pending_plan(self: AgentApp) -> None:
        plan, self._pending_plan = self._pending_plan, None
        if plan is None:
            return
        from agent_tui.tui.plan_screen import PlanScreen

        def answered(answer: PlanAnswer | None) -> None:
            self.prompt.focus()
            choice = "keep" if answer is None else answer.choice
            if choice == "keep":
                self.notify("Still planning: tell the plan agent what to look at next.")
            note = answer.note if answer is not None else ""
            self.run_worker(self._answer_plan(plan, choice, note), exit_on_error=False)

        self.push_screen(PlanScreen(plan), callback=answered)

    async def _answer_plan(self: AgentApp, plan: str, choice: PlanChoice, note: str) -> None:
        model = self.model_override

        async def answer(saved: asyncio.Event) -> None:
            session = await self.ensure_session()
            await self.engine.answer_plan(session.id, plan, choice, note, model=model, saved=saved)

        try:
            await self.submissions.run(answer)
        except AgentTuiError as exc:
            self.notify(str(exc), title="Not sent", severity="error", timeout=10)
