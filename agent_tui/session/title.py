"""Session titles: a short model call on the first message, the first line as fallback."""

from __future__ import annotations

from agent_tui import paths
from agent_tui.engine_context import EngineContext
from agent_tui.errors import AgentTuiError
from agent_tui.events import SessionUpdated
from agent_tui.provider.api import complete_text
from agent_tui.provider.auth import credentials
from agent_tui.provider.stream_events import ModelRequest

TITLE_LENGTH = 50
TITLE_MAX_TOKENS = 40
TITLE_INPUT_CHARS = 2_000


def default_title(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "New session")
    return first if len(first) <= TITLE_LENGTH else first[: TITLE_LENGTH - 1].rstrip() + "…"


def clean_title(raw: str) -> str:
    line = next((ln.strip() for ln in raw.splitlines() if ln.strip()), "")
    line = line.removeprefix("Title:").strip().strip("\"'`*#").strip().rstrip(".")
    return line[:TITLE_LENGTH]


async def generate_title(ctx: EngineContext, session_id: str, text: str, model: str) -> str | None:
    """Ask the small model (or the session's) for a title; keep the fallback on failure."""
    title_model = ctx.config.small_model or model
    try:
        api_base, api_key = credentials(title_model, ctx.config)
        raw = await complete_text(
            ModelRequest(
                model=title_model,
                api_base=api_base,
                api_key=api_key,
                max_tokens=TITLE_MAX_TOKENS,
                messages=[
                    {"role": "system", "content": paths.read_prompt("title.txt")},
                    {"role": "user", "content": text[:TITLE_INPUT_CHARS]},
                ],
            )
        )
    except AgentTuiError:
        return None
    if not (title := clean_title(raw)):
        return None
    session = await ctx.db.get_session(session_id)
    session.title = title
    await ctx.db.update_session(session)
    ctx.publish(SessionUpdated(session=session))
    return title
