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
    found = [
        SessionConfigOptionSelect(
            id=MODE,
            name="Mode",
            description="The agent that answers: build changes files, plan only investigates.",
            category=MODE,
            type="select",
            current_value=mode,
            options=[
                SessionConfigSelectOption(value=name, name=name, description=text)
                for name, text in primary_agents(catalog)
            ],
        ),
        SessionConfigOptionSelect(
            id=MODEL,
            name="Model",
            category=MODEL,
            type="select",
            current_value=model,
            options=[
                SessionConfigSelectOption(
                    value=row.id,
                    name=row.id,
                    description=f"{row.window:,} token window" if row.window else None,
                )
                for row in models
            ],
        ),
    ]
    if config.model_settings(model).reasoning is not None or effort != "default":
        found.append(
            SessionConfigOptionSelect(
                id=THOUGHT,
                name="Reasoning",
                category=THOUGHT,
                type="select",
                current_value=effort,
                options=[SessionConfigSelectOption(value=e, name=e) for e in EFFORTS],
            )
        )
    return found
