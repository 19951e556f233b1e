"""/model: the model for the next prompts (a litellm id, or chosen from the configured
ones and those of the providers with keys); /quit."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from agent_tui.command.core import APP, Call, Command, NoArgs, Result, Row, Rows, Text, word


@dataclass
class ModelArgs(NoArgs):
    name: str | None = word("MODEL", "a litellm model id, e.g. openai/gpt-5.1")


async def _model(call: Call, args: ModelArgs) -> Result | None:
    from agent_tui.provider.defaults import model_catalog

    model = args.name
    if model is None:
        config = call.workspace.config
        current = call.model or config.model
        if call.model is None and call.session_id is not None:
            current = await (await call.scope()).model()
        # The configured models, then those of the providers with keys (litellm's map,
        # read as JSON the first time: off the event loop).
        found = await asyncio.to_thread(model_catalog, config, [current])
        rows = [Row(r.id, r.id, current=r.id == current, data=r) for r in found]
        model = await call.person.choose(Rows(f"Model (now {current})", rows, "", "models"))
        if model is None:
            return None
    await call.person.use_model(model)
    return Text(f"Next prompts use {model}.")


async def _quit(call: Call, args: NoArgs) -> None:
    await call.person.leave()


MODEL = Command(
    "model",
    "Choose the model for the next prompts",
    _model,
    ModelArgs,
    keybind="model",
    session=False,
    views=frozenset({APP}),
)
QUIT = Command(
    "quit", "Quit agent-tui", _quit, aliases=("exit",), session=False, views=frozenset({APP})
)
