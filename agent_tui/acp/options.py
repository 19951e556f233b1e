"""Agents, models and reasoning as session config options (and the older `modes`)."""

from __future__ import annotations

from acp.schema import (
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

from agent_tui.config.settings import Config
from agent_tui.project.agents import AgentCatalog
from agent_tui.provider.defaults import ModelRow

MODE = "mode"
MODEL = "model"
THOUGHT = "thought_level"
EFFORTS = ("default", "minimal", "low", "medium", "high")
"""Reasoning efforts offered; default: the model's or agent's own setting."""


def primary_agents(catalog: AgentCatalog) -> list[tuple[str, str]]:
    return [
        (agent.name, agent.description or agent.name)
        for agent in catalog.agents.values()
        if agent.primary and not agent.hidden
    ]


def modes(catalog: AgentCatalog, current: str) -> SessionModeState:
    return SessionModeState(
        current_mode_id=current,
        available_modes=[
            SessionMode(id=name, name=name, description=text)
            for name, text in primary_agents(catalog)
        ],
    )


def _select(
    id: str, name: str, current: str, options: list[SessionConfigSelectOption], **more: str
) -> SessionConfigOptionSelect:
    return SessionConfigOptionSelect(
        id=id, name=name, category=id, type="select", current_value=current, options=options, **more
    )


def config_options(
    catalog: AgentCatalog,
    config: Config,
    mode: str,
    model: str,
    models: list[ModelRow],
    effort: str,
) -> list[SessionConfigOptionSelect]:
    """The mode (primary agents), the model (configured and those with keys), and the
    reasoning effort where the model has reasoning settings."""
    agents = [
        SessionConfigSelectOption(value=name, name=name, description=text)
        for name, text in primary_agents(catalog)
    ]
    rows = [
        SessionConfigSelectOption(
            value=row.id,
            name=row.id,
            description=f"{row.window:,} token window" if row.window else None,
        )
        for row in models
    ]
    description = "The agent that answers: build changes files, plan only investigates."
    found = [
        _select(MODE, "Mode", mode, agents, description=description),
        _select(MODEL, "Model", model, rows),
    ]
    if config.model_settings(model).reasoning is not None or effort != "default":
        efforts = [SessionConfigSelectOption(value=e, name=e) for e in EFFORTS]
        found.append(_select(THOUGHT, "Reasoning", effort, efforts))
    return found
