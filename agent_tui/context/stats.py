"""What the sidebar shows about a session, kept up to date from messages and parts."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_tui.context.window_usage import ContextUsage, context_usage
from agent_tui.records import (
    AssistantMessage,
    Message,
    MessageWithParts,
    Part,
    PatchPart,
    ToolPart,
    ToolStateCompleted,
)


@dataclass
class SessionStats:
    costs: dict[str, float] = field(default_factory=dict)
    summaries: set[str] = field(default_factory=set)
    last_step: AssistantMessage | None = None
    files: list[str] = field(default_factory=list)
    changes: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Lines added and removed per file (from the snapshots; the app sets it)."""

    @classmethod
    def of(cls, messages: list[MessageWithParts]) -> SessionStats:
        stats = cls()
        for message in messages:
            stats.observe_message(message.info)
            for part in message.parts:
                stats.observe_part(part)
        return stats

    def observe_message(self, info: Message) -> None:
        if not isinstance(info, AssistantMessage):
            return
        self.costs[info.id] = info.cost
        if info.finish is None or info.error is not None or info.reverted:
            self.summaries.discard(info.id)
            return
        if info.summary:
            self.summaries.add(info.id)
        if self.last_step is None or info.id >= self.last_step.id:
            self.last_step = info

    def observe_part(self, part: Part) -> None:
        found: list[str] = []
        if isinstance(part, PatchPart):
            found = part.files
        elif isinstance(part, ToolPart) and isinstance(part.state, ToolStateCompleted):
            cost = part.state.metadata.get("cost") if part.tool == "task" else None
            if isinstance(cost, (int, float)):  # a subagent's child session
                self.costs[part.id] = float(cost)
            files = part.state.metadata.get("files")
            found = [f for f in files if isinstance(f, str)] if isinstance(files, list) else []
        for name in found:
            if name not in self.files:
                self.files.append(name)

    @property
    def compactions(self) -> int:
        return len(self.summaries)

    @property
    def cost(self) -> float:
        return sum(self.costs.values())

    def usage(self) -> ContextUsage:
        return context_usage(self.last_step, self.cost)
