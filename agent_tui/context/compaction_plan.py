"""Which part of the history a compaction summarises and which it keeps, and the dry run
that reports it without sending anything."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel

from agent_tui import paths
from agent_tui.budget.overflow import fits, tail_budget, usable_tokens, user_budget
from agent_tui.budget.tokens import count_tokens
from agent_tui.context.chunks import chunk_messages, flatten_for_summary
from agent_tui.context.restate import choose_restated
from agent_tui.context.tail import choose_tail, message_tokens
from agent_tui.engine_context import EngineContext
from agent_tui.errors import CompactionError, UsageError
from agent_tui.provider.limits import ModelInfo, model_info
from agent_tui.provider.stream_events import ModelRequest
from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    MessageWithParts,
    Session,
    TextPart,
    ToolPart,
    UserMessage,
)
from agent_tui.scope import SessionScope, limits
from agent_tui.step.after_summary import restated_text, todos_block
from agent_tui.step.messages import filter_compacted, to_model_messages
from agent_tui.step.plan import plan_block
from agent_tui.step.request import build_request, estimate_tokens, history_tokens, session_scale

SUMMARY_REQUEST = "Summarise the conversation above following the structure in your instructions."
EARLIER_SUMMARY_SHARE = 0.15
"""Room kept in each chunk request for the summary of the chunks before it."""
MIN_CHUNK_TOKENS = 1_000
SUMMARY_GUESS_SHARE = 0.05
"""A dry run's guess at the summary's length, as a share of usable (at most 4,000)."""
SUMMARY_GUESS_MAX = 4_000


@dataclass
class Span:
    """What a compaction summarises, keeps and restates."""

    model: str
    """The session's model, whose step usage `scale` was measured on."""
    anchored: bool
    """The history starts with an earlier summary, which the new one merges."""
    tail: list[MessageWithParts]
    oversize: bool
    summarised: list[MessageWithParts]
    new_content: list[MessageWithParts]
    replay: MessageWithParts | None
    restated: list[str]
    scale: float
    tail_tokens: int
    """The tail budget in local token counts."""

    def scale_for(self, model: str) -> float:
        """Provider tokens per local token for `model`: measured for the session's model;
        another model (a summariser from config) has no usage here to measure by."""
        return self.scale if model == self.model else 1.0


def summariser(ctx: EngineContext, model: ModelInfo) -> ModelInfo:
    """The model that writes summaries: config `compaction.model`, else the session's."""
    configured = ctx.config.compaction.model
    return model_info(configured, ctx.config) if configured else model


def _last_typed(messages: list[MessageWithParts]) -> MessageWithParts | None:
    """The newest message the person typed (not only synthetic text)."""
    users = [
        m
        for m in messages
        if isinstance(m.info, UserMessage)
        and any(isinstance(p, TextPart) and not p.synthetic for p in m.parts)
    ]
    return users[-1] if users else None


def select_span(
    ctx: EngineContext,
    session: Session,
    prior: list[MessageWithParts],
    model: ModelInfo,
    *,
    overflow: bool = False,
    tail_tokens: int | None = None,
    up_to: str | None = None,
) -> Span:
    """Split the history before a compaction request into summarised / kept. `tail_tokens`
    (as the provider counts) replaces the configured tail budget: a summary prepared ahead
    keeps less, since the steps until the threshold join the tail. `up_to`: the person
    chose where the summary ends (that message); everything after it is kept."""
    config = ctx.config
    anchored = is_anchor(prior)
    shown = prior[2:] if anchored else prior
    candidates = [m for m in shown if m.info.id > (session.compaction_id or "")]
    # Budgets are shares of the window, which the provider measures: convert them to
    # local token counts by how the provider counted the last step.
    scale = session_scale(ctx, session, prior, model.id)
    if tail_tokens is None:
        tail_tokens = tail_budget(model.limit, config.compaction)
    tail_tokens = int(tail_tokens / scale)
    user_tokens = int(user_budget(model.limit, config.compaction) / scale)
    if up_to is not None:  # any message after the summary in force, its tail included
        tail, oversize, replay = _after(shown, up_to), False, None
    elif overflow:  # the provider refused the request: no tail, the question asked again
        tail, oversize, replay = [], False, _last_typed(candidates)
    else:
        (tail, oversize), replay = choose_tail(candidates, tail_tokens, model.id), None
    summarised = [m for m in prior if m not in tail and m is not replay]
    new_content = summarised[2:] if anchored else summarised
    anchor = prior[1].info if anchored else None
    earlier = anchor.restated if isinstance(anchor, AssistantMessage) else []
    restated = choose_restated(new_content, earlier, user_tokens, model.id)
    return Span(
        model=model.id,
        anchored=anchored,
        tail=tail,
        oversize=oversize,
        summarised=summarised,
        new_content=new_content,
        replay=replay,
        restated=restated,
        scale=scale,
        tail_tokens=tail_tokens,
    )


def _after(shown: list[MessageWithParts], up_to: str) -> list[MessageWithParts]:
    """What follows `up_to` among the messages shown after the summary in force; why a
    compaction cannot end with it when it is not one of them."""
    if not any(m.info.id == up_to for m in shown):
        raise CompactionError(
            f"No message {up_to} since the last compaction in this session: compact up to "
            "a message shown after the newest summary (`agent-tui pin --list` and "
            "`agent-tui export` show the ids)."
        )
    return [m for m in shown if m.info.id > up_to]


def _prompt_file(custom: str, directory: Path) -> Path | None:
    """The file `compaction.prompt` names (as given, or relative to the project), if any."""
    for candidate in (Path(custom).expanduser(), directory / custom):
        with contextlib.suppress(OSError):
            if candidate.is_file():
                return candidate
    return None


def compaction_prompt(ctx: EngineContext, directory: Path) -> str:
    """config `compaction.prompt` (a file path or the text itself) or prompts/compaction.txt."""
    custom = ctx.config.compaction.prompt
    if not custom:
        return paths.read_prompt("compaction.txt")
    file = _prompt_file(custom, directory)
    if file is not None:
        with contextlib.suppress(OSError):  # unreadable: the setting is the text itself
            return file.read_text(encoding="utf-8")
    return custom


def is_anchor(prior: list[MessageWithParts]) -> bool:
    return (
        len(prior) > 1
        and any(isinstance(p, CompactionPart) for p in prior[0].parts)
        and isinstance(prior[1].info, AssistantMessage)
        and prior[1].info.summary
    )


def instruction_text(
    ctx: EngineContext,
    directory: Path,
    anchored: bool,
    instructions: str | None,
    todos: str = "",
    plan: str = "",
) -> str:
    """The compaction prompt, sent as the last user message of the summary request;
    `todos` is the session's rendered todo list, `plan` the newest plan (after them all,
    like it is restated after the summary)."""
    text = compaction_prompt(ctx, directory).strip()
    if anchored:
        text += "\n\n" + paths.read_prompt("compaction_anchor.txt").strip()
    text += "\n\n" + SUMMARY_REQUEST
    if todos:
        text += "\n\n" + todos_block(todos)
    if instructions:
        text += f"\n\nAdditional instructions from the person:\n{instructions}"
    return text + "\n\n" + plan_block(plan) if plan else text


def whole_span_request(
    ctx: EngineContext,
    session: Session,
    span: Span,
    summary_model: ModelInfo,
    instructions: str | None,
    todos: str = "",
    plan: str = "",
) -> tuple[ModelRequest, int]:
    """The summary request in one call: the conversation's own system prompt, tools and
    messages (so a provider's prompt cache serves it at a tenth of the price), then the
    instruction (`instruction_text`, with the person's `instructions`, the todo list and
    the plan). No `tool_choice`: changing it invalidates Anthropic's cached messages,
    so the instruction forbids tools and any call is ignored. Returns the request and
    its size as the provider counts it; the caller chunks when that does not fit."""
    directory = Path(session.directory)
    instruction = instruction_text(ctx, directory, span.anchored, instructions, todos, plan)
    request, _ = build_request(
        span.summarised,
        model=summary_model.id,
        directory=directory,
        config=ctx.config,
        tools=ctx.registry.definitions(),
        session_id=session.id,
        final_instruction=instruction,
    )
    size = estimate_tokens(request.messages, request.tools, summary_model.id)
    return request, int(size * span.scale_for(summary_model.id))


class CompactionPlan(BaseModel):
    """What a compaction would do (`compact --dry-run`); tokens as the provider counts."""

    laid_out: ClassVar[bool] = True
    """Columns and indents: a Markdown view keeps them (acp/markdown.py)."""
    title: ClassVar[str] = "Compaction dry run"

    summarised_messages: int
    summarised_turns: int
    """The person's messages in the summarised part."""
    summarised_tokens: int
    chunks: int
    """Summariser calls: 1 when the part fits the summarising model's window."""
    tail_messages: int
    tail_steps: int
    tail_tokens: int
    tail_budget: int
    oversize_step: bool
    restated_messages: int
    user_budget: int
    estimated_after: int
    """The prompt right after (system, tools, summary guess, restated words, tail)."""
    usable: int
    summarising_model: str
    prompt_source: str
    up_to: str | None = None
    """Compact up to here: the message the summary ends with."""

    def message(self) -> str:
        """The dry run as a person reads it."""
        calls = "one summariser call" if self.chunks == 1 else f"{self.chunks} chunks"
        oversize = (
            " (the newest step alone is larger: its outputs are shortened)"
            if self.oversize_step
            else ""
        )
        budget = (
            f" after {self.up_to}" if self.up_to else f" of the {self.tail_budget:,} tail budget"
        )
        refused = self.overflowing()
        return "\n".join(
            [
                "Compaction dry run — nothing was sent.",
                f"  Summarised: {_count(self.summarised_messages, 'message')} "
                f"({self.summarised_turns} from you), about {self.summarised_tokens:,} tokens, "
                f"in {calls}.",
                f"  Kept verbatim: {_count(self.tail_steps, 'newest step')} "
                f"({_count(self.tail_messages, 'message')}), about {self.tail_tokens:,} tokens"
                f"{budget}{oversize}.",
                f"  Your words restated: {_count(self.restated_messages, 'message')} "
                f"(budget {self.user_budget:,} tokens).",
                f"  After: about {self.estimated_after:,} of {self.usable:,} usable tokens.",
                f"  Summarising model: {self.summarising_model}; prompt: {self.prompt_source}.",
                *([f"  The real run would be refused: {refused}"] if refused else []),
            ]
        )

    def overflowing(self) -> str | None:
        """Why compacting up to `up_to` is refused: what would stay does not fit."""
        over = self.estimated_after - self.usable
        if self.up_to is None or self.usable == 0 or over <= 0:
            return None
        return (
            f"Compacting up to {self.up_to} keeps {_count(self.tail_messages, 'message')} "
            f"after it verbatim, about {self.tail_tokens:,} tokens: the prompt afterwards "
            f"would be about {self.estimated_after:,} of {self.usable:,} usable tokens, "
            f"{over:,} too many. Nothing was changed: compact up to a later message, or "
            "without --up-to."
        )


def prompt_source(ctx: EngineContext, directory: Path) -> str:
    custom = ctx.config.compaction.prompt
    if not custom:
        return "default (prompts/compaction.txt)"
    file = _prompt_file(custom, directory)
    return f"compaction.prompt: file {file}" if file else "compaction.prompt: text from the config"


def plan(
    ctx: EngineContext,
    session: Session,
    history: list[MessageWithParts],
    model: ModelInfo,
    instructions: str | None = None,
    up_to: str | None = None,
) -> CompactionPlan:
    """The dry run: the same selection a compaction makes now, and no request sent."""
    config = ctx.config
    directory = Path(session.directory)
    span = select_span(ctx, session, history, model, up_to=up_to)
    summary_model = summariser(ctx, model)
    _, summarised_tokens = whole_span_request(ctx, session, span, summary_model, instructions)
    chunks = 1
    if not fits(summarised_tokens, summary_model.limit, config.compaction):
        _, parts = chunk_plan(ctx, span.summarised, summary_model, directory, span.anchored)
        chunks = len(parts)
    usable = usable_tokens(model.limit, config.compaction)
    # A summary is rarely more than half of what it replaces.
    summary_guess = min(
        int(usable * SUMMARY_GUESS_SHARE), SUMMARY_GUESS_MAX, summarised_tokens // 2
    )
    restated = count_tokens(restated_text(span.restated), model.id) if span.restated else 0
    tail_local = message_tokens(span.tail, model.id)
    shown = filter_compacted(span.tail)  # a compaction taken back is kept, but not sent
    after = (history_tokens(ctx, session, [], model.id) + restated + tail_local) * span.scale
    after += summary_guess
    return CompactionPlan(
        summarised_messages=len(span.new_content),
        summarised_turns=sum(1 for m in span.new_content if isinstance(m.info, UserMessage)),
        summarised_tokens=summarised_tokens,
        chunks=chunks,
        tail_messages=len(shown),
        tail_steps=sum(1 for m in shown if isinstance(m.info, AssistantMessage)),
        tail_tokens=int(tail_local * span.scale),
        tail_budget=tail_budget(model.limit, config.compaction),
        oversize_step=span.oversize,
        restated_messages=len(span.restated),
        user_budget=user_budget(model.limit, config.compaction),
        estimated_after=int(after),
        usable=usable,
        summarising_model=summary_model.id,
        prompt_source=prompt_source(ctx, directory),
        up_to=up_to,
    )


async def preview(
    scope: SessionScope,
    instructions: str | None = None,
    *,
    model: str | None = None,
    up_to: str | None = None,
) -> CompactionPlan:
    """What a compaction would do now (`--dry-run`), for `model`, else the session's."""
    model = model or await scope.model()
    history = await scope.history()
    if not history:
        raise UsageError("Nothing to compact yet: the session has no messages.")
    info = await limits(scope.workspace.config, model)
    args = (scope.ctx, scope.session, history, info, instructions, up_to)
    return await asyncio.to_thread(plan, *args)


def chunk_plan(
    ctx: EngineContext,
    summarised: list[MessageWithParts],
    summary_model: ModelInfo,
    directory: Path,
    anchored: bool,
) -> tuple[str, list[list[dict]]]:
    """The system prompt of a chunk's request, and the fewest chunks of the summarised
    part that fit the summarising model's window."""
    system = compaction_prompt(ctx, directory)
    if anchored:
        system += "\n\n" + paths.read_prompt("compaction_anchor.txt")
    part_ids = {p.call_id: p.id for m in summarised for p in m.parts if isinstance(p, ToolPart)}
    transcript = flatten_for_summary(to_model_messages(summarised), part_ids)
    budget = usable_tokens(summary_model.limit, ctx.config.compaction)
    reserve = count_tokens(system, summary_model.id) + int(budget * EARLIER_SUMMARY_SHARE)
    return system, chunk_messages(
        transcript, max(budget - reserve, MIN_CHUNK_TOKENS), summary_model.id
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
