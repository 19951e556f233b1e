"""The app's start: the first frame needs nothing of the engine, and what a person types
before the app has started (before its first frame, or before the session is ready) is
kept — text in the prompt, a message sent once the session is ready, in order."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
from pygments.lexers.haskell import HaskellLexer
from rich.console import Console
from rich.markdown import Markdown as RichMarkdown
from textual.geometry import Region
from textual.widgets import Static

from agent_tui import paths
from agent_tui.config.keybinds import DEFAULT_KEYS
from agent_tui.config.settings import KeybindsConfig, load_config
from agent_tui.ids import message_id, part_id
from agent_tui.project import agents
from agent_tui.records import AssistantMessage, Session, TextPart, UserMessage
from agent_tui.session.opening import Opened, engine_on
from agent_tui.storage.db import Database
from agent_tui.tool.base import AskPermission
from agent_tui.tui import app_opening, highlighting, markdown_render
from agent_tui.tui.app import STARTING_HINT, AgentApp
from agent_tui.tui.app_opening import FRONT_END
from agent_tui.tui.conversation import BUILD_AGENT
from agent_tui.tui.highlighting import HIGHLIGHTING
from agent_tui.tui.text_part_view import TextPartView
from tests.fake_openai import FakeOpenAI, Text
from tests.process_helpers import python_argv
from tests.pty_helpers import PtyAgent
from tests.tui_helpers import GivenApp, view_text, wait_for

ROOT = Path(__file__).resolve().parent.parent
SIZE = (100, 30)
ENGINE = (
    "pydantic",
    "litellm",
    "tiktoken",
    "agent_tui.config.settings",
    "agent_tui.storage.db",
    "agent_tui.session.engine",
    "agent_tui.tui.session_view",
)


def probe(code: str) -> list[str]:
    """The lines a fresh interpreter prints running `code`, this checkout first."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        python_argv("-c", code), env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_first_frame_imports_nothing_of_the_engine() -> None:
    """What `agent-tui` imports before the app runs: Textual and the app's own widgets."""
    code = (
        "import sys\n"
        "import agent_tui.cli, agent_tui.tui.launch, agent_tui.tui.app\n"
        f"print(sorted(m for m in {ENGINE!r} if m in sys.modules))\n"
    )
    assert probe(code) == ["[]"]


def test_an_empty_start_reads_no_page_and_imports_no_data_model() -> None:
    """Without --continue there is no page to read before the first frame: neither
    pydantic nor the data models are imported for it."""
    code = (
        "import argparse, sys\n"
        "import agent_tui.cli, agent_tui.tui.launch, agent_tui.tui.app\n"
        "from agent_tui.tui import app_opening\n"
        "print(app_opening.first_page(argparse.Namespace(model=None)))\n"
        "print(sorted(m for m in ('pydantic', 'agent_tui.records') if m in sys.modules))\n"
    )
    assert probe(code) == ["None", "[]"]


def test_the_prompt_reads_the_commands_it_completes_when_first_asked() -> None:
    """The prompt is in the first frame; importing every command module (for `/`
    completion) is not: it happens when the commands are first asked for."""
    code = (
        "import sys\n"
        "from agent_tui.tui.prompt_input import PromptInput\n"
        "prompt = PromptInput()\n"
        "print('agent_tui.command.compacting' in sys.modules)\n"
        "print(any(c.name == 'compact' for c in prompt.commands))\n"
    )
    assert probe(code) == ["False", "True"]


def test_first_frame_defaults_are_the_configs() -> None:
    """The first frame binds keys and names the agent before the config is validated."""
    assert KeybindsConfig().model_dump() == DEFAULT_KEYS.__dict__
    assert BUILD_AGENT == agents.BUILD


class Gate:
    """An opener held until the test opens it: the app has drawn, the session is not
    ready (as while `agent-tui` imports the engine and opens the database)."""

    def __init__(self, session: Session | None = None) -> None:
        self.open = asyncio.Event()
        self.db: Database | None = None
        self.session = session
        """The session it opens (None: a new one)."""

    async def __call__(self, ask: AskPermission) -> Opened:
        await self.open.wait()
        config = load_config()
        self.db = await Database.open(paths.database_path())
        engine = engine_on(self.db, config, front_end=FRONT_END, ask=ask)
        return Opened(engine, config, self.session)


async def test_keys_typed_before_the_session_is_ready_are_kept_and_sent_in_order(
    configured: FakeOpenAI,
) -> None:
    configured.script(Text("first answer"), Text("second answer"))
    gate = Gate()
    app = AgentApp(gate)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*"hello")
        assert not app.loaded.is_set()
        assert app.prompt.text == "hello"
        await pilot.press("enter")  # sent before the start: kept, sent once ready
        await pilot.press(*"and more")
        await pilot.press("enter")
        await pilot.press(*"draft")
        await pilot.pause()
        assert app.prompt.text == "draft"
        assert STARTING_HINT in app.status_line.render_text()
        assert configured.requests == []
        gate.open.set()
        await app.loaded.wait()

        def both_answered() -> bool:
            # The status reads "idle" before the first batch of events too: the answer
            # on screen is what tells that the last request was answered.
            asked = [json.dumps(r["messages"]) for r in configured.requests]
            last = ("first answer", "second answer")[len(asked) - 1] if asked else None
            shown = view_text(app) == last
            return any("and more" in a for a in asked) and shown and app.chat.status == "idle"

        await wait_for(pilot, both_answered, "both messages sent and answered")
        assert app.prompt.text == "draft"  # what was being typed stays in the prompt
        assert STARTING_HINT not in app.status_line.render_text()
    assert gate.db is not None
    await gate.db.close()
    assert "hello" in json.dumps(configured.requests[0]["messages"])
    text = json.dumps(configured.requests[-1]["messages"])
    assert text.index("hello") < text.index("and more")  # in the order typed


async def test_a_leader_key_pressed_before_the_start_runs_after_it(
    configured: FakeOpenAI, isolated: Path
) -> None:
    """The configured leader works in the first frame (read without validation)."""
    config = json.loads((isolated / "agent-tui.json").read_text())
    config["keybinds"] = {"leader": "ctrl+t"}
    (isolated / "agent-tui.json").write_text(json.dumps(config))
    gate = Gate()
    app = AgentApp(gate)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+t", "b")  # leader, then b: hide the sidebar
        await pilot.pause()
        assert app.prompt.text == ""
        assert app.sidebar.display  # waits for the start
        gate.open.set()
        await app.loaded.wait()
        await wait_for(pilot, lambda: not app.sidebar.display, "sidebar hidden")
    assert gate.db is not None
    await gate.db.close()


def test_keys_typed_before_the_first_frame_reach_the_prompt(configured: FakeOpenAI) -> None:
    """In a real terminal: typed right after launch, before anything is drawn (the
    terminal echoes them then; the app's own screen must show them in the prompt)."""
    agent = PtyAgent(Path.cwd())
    try:
        agent.type(b"typed early")
        agent.wait_for(b"typed early")
        agent.wait_for(b"100,000 tokens")  # the window: the config is validated, ready
        agent.type(b" and later")
        agent.wait_for(b"typed early and later")
    finally:
        code = agent.quit()
    assert code == 0


def test_only_the_app_imports_with_the_collector_off() -> None:
    from agent_tui.__main__ import _is_the_app

    assert _is_the_app([]) and _is_the_app(["--continue"])
    assert _is_the_app(["--model=openai/x", "--continue"])
    assert not _is_the_app(["--help"]) and not _is_the_app(["run", "hi"])
    # An option's value after a space reads as a subcommand: the collector stays on
    # (only slower), never off for a command that would not turn it back on.
    assert not _is_the_app(["-m", "openai/x"])


async def test_the_collector_is_back_on_after_the_first_frame(configured: FakeOpenAI) -> None:
    """`__main__` turns it off while the app imports (tui/app.py turns it back on):
    left off, cyclic garbage would pile up for as long as the app runs."""
    import gc

    config = load_config()
    db = await Database.open(paths.database_path())
    gc.disable()
    try:
        app = GivenApp(config, db)
        async with app.run_test(size=(120, 36)) as pilot:
            await app.loaded.wait()
            await pilot.pause()
            assert gc.isenabled()
    finally:
        gc.enable()
        await db.close()


CONTINUE = argparse.Namespace(cont=True)
PAGE_ONLY = (*ENGINE[1:-1], "agent_tui.engine_context", "agent_tui.events")
"""What the first page needs none of: the engine but for the data models and the view."""
TURNS = 40
"""Of a stored session: 80 messages, more than the first page's 60."""


async def _stored_session(last: str = f"Reply {TURNS - 1}.") -> Session:
    """A finished session of TURNS turns in the person's database, its last reply
    `last`."""
    db = await Database.open(paths.database_path())
    try:
        session = await db.create_session(str(Path.cwd()), title="long")
        for n in range(TURNS):
            user = UserMessage(id=message_id(), session_id=session.id, model="openai/test")
            reply = AssistantMessage(
                id=message_id(), session_id=session.id, parent_id=user.id, finish="stop"
            )
            answer = last if n == TURNS - 1 else f"Reply {n}."
            for info, text in ((user, f"Task {n}"), (reply, answer)):
                await db.upsert_message(info)
                ids = {"session_id": session.id, "message_id": info.id}
                await db.upsert_part(TextPart(id=part_id(), text=text, **ids))
        return await db.get_session(session.id)  # as stored: its last update
    finally:
        await db.close()


def test_the_newest_page_is_read_and_drawn_without_the_engine(isolated: Path) -> None:
    """`agent-tui --continue` draws the session's newest page before the engine and the
    config are imported: reading it and the view that draws it need the data models only."""
    asyncio.run(_stored_session())
    code = (
        "import argparse, sys\n"
        "import agent_tui.cli, agent_tui.tui.launch, agent_tui.tui.app\n"
        "from agent_tui.tui import app_opening, session_view\n"
        "session, page = app_opening.first_page(argparse.Namespace(cont=True))\n"
        "print(session.title, len(page), page[-1].parts[0].text)\n"
        f"print(sorted(m for m in {PAGE_ONLY!r} if m in sys.modules))\n"
    )
    assert probe(code) == ["long 60 Reply 39.", "[]"]


async def test_the_first_page_drawn_is_the_one_the_engine_shows(configured: FakeOpenAI) -> None:
    """The newest page is on screen while the engine is not open yet; once it is, that
    page stays as it was drawn (the same widgets, at the bottom) and the older history
    comes in above it."""
    gate = Gate(await _stored_session())
    first_page = app_opening.first_page(CONTINUE)
    app = AgentApp(gate, first_page=first_page, continuing=True)
    async with app.run_test(size=SIZE) as pilot:
        chat = app.chat
        await wait_for(pilot, lambda: hasattr(chat, "view") and view_text(app) == "Reply 39.")
        assert not app.loaded.is_set()
        view = chat.view
        drawn = list(view.children)
        gate.open.set()
        await app.loaded.wait()
        await wait_for(pilot, lambda: len(view._entries) == 2 * TURNS, "the whole history")
        await pilot.pause()
        assert chat.view is view and drawn[-1] in view.children
        assert view_text(app) == "Reply 39."
        assert view.scroll_y == view.max_scroll_y
    assert gate.db is not None
    await gate.db.close()


async def test_the_first_frame_of_a_long_page_shows_its_end(configured: FakeOpenAI) -> None:
    """The page is taller than the view: its first frame shows the session's last reply
    (Textual's anchor placed a page scrolled past its end at the first layout, a blank
    view until the next one)."""
    gate = Gate(await _stored_session())
    frames: list[bool] = []

    class Recording(AgentApp):
        def post_display_hook(self) -> None:
            view = getattr(self.chat, "view", None)
            if view is not None and view.children:
                last = view.children[-1].region
                frames.append(bool(last and view.region.overlaps(last)))

    app = Recording(gate, first_page=app_opening.first_page(CONTINUE), continuing=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: bool(frames))
        assert frames[0], "the first frame with the page does not show its last reply"
        gate.open.set()
        await app.loaded.wait()
    assert gate.db is not None
    await gate.db.close()


def _code_colours(app: AgentApp, code: str) -> set[object]:
    """The foreground colours of `code`'s line as the last reply's widget draws it (its
    words, not the spaces)."""
    tail = app.chat.view.query(TextPartView).last().query_one(".-tail", Static)
    strips = tail.render_lines(Region(0, 0, tail.size.width, tail.size.height))
    line = next(strip for strip in strips if code in strip.text)
    return {seg.style.color for seg in line if seg.text.strip() and seg.text in code}


async def test_the_first_page_draws_code_plain_until_its_lexer_is_built(
    configured: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pygments builds a lexer at its first use (tens of milliseconds for Python): the
    first frame does not wait for it. Code in a language whose lexer is not built is drawn
    plain — the same lines — and in its colours once the app has started and built it
    on a thread."""
    monkeypatch.delattr(HaskellLexer, "_tokens", raising=False)  # as in a new process
    monkeypatch.setattr(highlighting, "_READY", {})
    code = 'main = putStrLn "hi"'
    gate = Gate(await _stored_session(f"Done:\n\n```haskell\n{code}\n```"))
    app = AgentApp(gate, first_page=app_opening.first_page(CONTINUE), continuing=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: bool(app.chat.view.query(TextPartView)))
        await pilot.pause()
        assert len(_code_colours(app, code)) == 1  # plain: the block's one colour
        assert "_tokens" not in vars(HaskellLexer)  # nothing built before the start
        plain = view_text(app)
        gate.open.set()
        await app.loaded.wait()
        await wait_for(pilot, lambda: len(_code_colours(app, code)) > 2, "highlighted")
        assert view_text(app) == plain
        await wait_for(pilot, lambda: HIGHLIGHTING.idle, "every lexer built")  # the thread ends
    assert gate.db is not None
    await gate.db.close()


def test_a_language_found_ready_is_not_looked_up_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every render of a code block asks whether its language is ready: pygments looks an
    unknown name up in every installed package's entry points, so the answer is kept."""
    looked_up: list[str] = []
    find = highlighting.find_lexer_class_by_name

    def counted(name: str) -> object:
        looked_up.append(name)
        return find(name)

    monkeypatch.setattr(highlighting, "find_lexer_class_by_name", counted)
    monkeypatch.setattr(highlighting, "_READY", {})
    monkeypatch.delattr(HaskellLexer, "_tokens", raising=False)
    for _ in range(3):
        assert highlighting.ready("no-such-language") == "text"  # rich's own fallback
        assert highlighting.ready("text") == "text"  # a lexer with no rules to build
        assert highlighting.ready("haskell") is None  # not built: asked again until it is
    assert looked_up.count("no-such-language") == 1
    assert looked_up.count("haskell") == 3


def test_code_in_a_language_pygments_does_not_know_is_drawn_as_rich_draws_it() -> None:
    """rich falls back to the "text" lexer for such a name: so does the app, without
    looking the name up again at every render."""
    text = "```no-such-language\nx = [1, 2]\n```\n"
    console = Console(width=40, color_system="truecolor", force_terminal=True)
    ours = console.render_lines(markdown_render.render_markdown(text))
    theirs = console.render_lines(RichMarkdown(text, code_theme=markdown_render.CODE_THEME))
    assert ours == theirs
