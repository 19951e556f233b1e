"""The first screen: the empty session shows the model, directory, window and keys, and
hides once a message is sent; with no model provider it says what to set; /model lists
the models of the providers with keys."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Input, OptionList, Static

from agent_tui import paths
from agent_tui.command import catalog
from agent_tui.config.settings import load_config
from agent_tui.provider import defaults
from agent_tui.provider.defaults import PROVIDERS, choose_model, credentials_source
from agent_tui.storage.db import Database
from agent_tui.tui import person_dialogs as person
from agent_tui.tui.app import AgentApp
from agent_tui.tui.model_screen import ModelScreen
from agent_tui.tui.welcome_view import WelcomeView
from tests.fake_openai import FakeOpenAI, Text
from tests.tui_helpers import GivenApp, open_app, type_and_send, wait_for

SIZE = (100, 30)
ALL_KEYS = sorted({name for p in PROVIDERS for name in p.env})


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ALL_KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(defaults, "PROBED_SERVERS", ())


def welcome_text(app: AgentApp, width: int = 100) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(app.query_one("#welcome", WelcomeView).query_one(Static).content)
    return console.export_text()


async def _first_run_app() -> AgentApp:
    """The app as `agent-tui` starts it: config loaded, then the default model chosen."""
    config = load_config()
    await choose_model(config)
    db = await Database.open(paths.database_path())
    return GivenApp(config, db, directory_label="~/project")


async def test_empty_session_shows_model_directory_window_and_keys(
    configured: FakeOpenAI,
) -> None:
    configured.script(Text("Hello back."))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        welcome = app.query_one("#welcome", WelcomeView)
        assert welcome.display and not app.chat.view.display
        text = welcome_text(app)
        assert "openai/test-model" in text
        assert "~/project" in text
        assert "100,000 tokens" in text  # models."openai/test-model".limit.context
        for key in ("Enter", "Shift+Enter", "@", "!command", "/compact", "/model", "/help"):
            assert key in text
        assert "ctrl+p" in text and "ctrl+x c" in text and "Ctrl+C twice" in text
        assert "No model provider" not in text
        await type_and_send(pilot, "hi")
        await wait_for(pilot, lambda: app.chat.status == "idle" and app.chat.session is not None)
        await wait_for(pilot, lambda: not welcome.display, "welcome hidden")
        assert app.chat.view.display
        session = app.chat.session
        person.run(app.chat, catalog.named("new"))
        await wait_for(pilot, lambda: welcome.display, "welcome back for a new session")
    await app.db.close()

    # A session with messages opens without the welcome view.
    app = await open_app(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        welcome = app.query("#welcome")
        assert not welcome or not welcome.first().display
        assert app.chat.view.display
    await app.db.close()


async def test_no_provider_first_screen_says_what_to_set(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    app = await _first_run_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        welcome = app.query_one("#welcome", WelcomeView)
        assert welcome.display and credentials_source(app.config, app.chat.current_model) is None
        text = welcome_text(app)
        assert "No model provider is set up" in text
        assert "no key for it" in text
        for needed in (*ALL_KEYS, "Ollama", "11434", "agent-tui.json", '"provider"'):
            assert needed in text, needed
        # Sending anyway: the same answer, and the text stays in the prompt.
        await type_and_send(pilot, "hello?")
        await wait_for(pilot, lambda: app.prompt.text == "hello?", "text put back")
        notes = [n.message for n in app._notifications]
        assert any("OPENAI_API_KEY" in n for n in notes)
        assert welcome.display
    await app.db.close()
    assert fake_llm.requests == []


async def test_only_an_openai_key_picks_openai(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    app = await _first_run_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        assert app.chat.current_model == "openai/gpt-5.4"
        text = welcome_text(app)
        assert "openai/gpt-5.4" in text and "$OPENAI_API_KEY" in text
        assert "1,050,000 tokens" in text
        assert "No model provider" not in text

        # /model: the providers with keys (OpenAI here), with windows, filtered as typed.
        await type_and_send(pilot, "/model")
        await wait_for(pilot, lambda: isinstance(app.screen, ModelScreen), "model screen")
        screen = app.screen
        assert isinstance(screen, ModelScreen)
        models = [row.id for row in screen.rows]
        assert models[0] == "openai/gpt-5.4"
        assert "openai/gpt-5.4-mini" in models
        assert not any(m.startswith("anthropic/") for m in models)
        assert 10 < len(models) < 200  # not litellm's 2,000 models
        listed = screen.query_one("#models", OptionList)
        assert "1.05M" in str(listed.get_option_at_index(0).prompt)
        screen.query_one("#model-input", Input).value = "5.4 mini"
        await pilot.pause()
        assert listed.get_option_at_index(0).id == "openai/gpt-5.4-mini"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.model_override == "openai/gpt-5.4-mini", "chosen")
        assert "openai/gpt-5.4-mini" in welcome_text(app)  # the welcome follows the choice
    await app.db.close()
