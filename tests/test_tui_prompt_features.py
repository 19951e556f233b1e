"""The prompt's extras in the app: the `@` file picker, `!command`, custom commands."""

from __future__ import annotations

from pathlib import Path

from agent_tui.command.reports import help_text
from agent_tui.records import ToolStateCompleted
from agent_tui.tui.file_picker_screen import FilePickerScreen
from agent_tui.tui.tool_line import ToolLine
from tests.engine_helpers import text_of
from tests.fake_openai import FakeOpenAI, Text
from tests.tui_helpers import open_app, type_and_send, wait_for

SIZE = (100, 30)


def sent_user_text(request: dict) -> str:
    return "\n".join(text_of(m) for m in request["messages"] if m["role"] == "user")


async def test_at_opens_picker_and_the_file_reaches_the_model(
    configured: FakeOpenAI, isolated: Path
) -> None:
    (isolated / "src").mkdir()
    (isolated / "src" / "parser.py").write_text("def parse():\n    return 42\n")
    (isolated / "src" / "other.py").write_text("x = 1\n")
    (isolated / ".gitignore").write_text("ignored.py\n")
    (isolated / "ignored.py").write_text("")
    configured.script(Text("Read it."))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        app.prompt.focus()
        await pilot.press("l", "o", "o", "k", "space", "@")
        await wait_for(pilot, lambda: isinstance(app.screen, FilePickerScreen), "picker")
        picker = app.screen
        assert isinstance(picker, FilePickerScreen)
        await picker.indexed.wait()
        assert picker.index is not None and "ignored.py" not in picker.index.paths
        await pilot.press("p", "a", "r", "s")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, FilePickerScreen), "closed")
        assert app.prompt.text == "look @src/parser.py "
        await pilot.press("enter")
        await wait_for(pilot, lambda: configured.requests and app.chat.status == "idle", "reply")
    await app.db.close()
    sent = sent_user_text(configured.requests[-1])
    assert '<file path="src/parser.py">' in sent
    assert "     1\tdef parse():\n     2\t    return 42" in sent


async def test_shell_command_shows_a_tool_line_and_reaches_the_next_request(
    configured: FakeOpenAI,
) -> None:
    configured.script(Text("It printed hi."))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "!echo hi")
        await wait_for(
            pilot,
            lambda: any(isinstance(t.part.state, ToolStateCompleted) for t in app.query(ToolLine)),
            "the shell's tool line",
        )
        (line,) = app.query(ToolLine)
        assert isinstance(line.part.state, ToolStateCompleted)
        assert line.part.state.output.strip() == "hi"
        assert configured.requests == []  # the ! makes no model request
        assert app.prompt.text == ""
        await type_and_send(pilot, "what did it print?")
        await wait_for(pilot, lambda: configured.requests and app.chat.status == "idle", "reply")
    await app.db.close()
    (request,) = configured.requests
    sent = sent_user_text(request)
    assert "echo hi" in sent and "<output>\nhi\n</output>" in sent
    assert "what did it print?" in sent


async def test_custom_command_completes_and_sends_its_body(
    configured: FakeOpenAI, isolated: Path
) -> None:
    commands = isolated / ".agent-tui" / "commands"
    commands.mkdir(parents=True)
    (commands / "greet.md").write_text(
        "---\ndescription: Greet someone\n---\nSay hello to $1 ($ARGUMENTS)."
    )
    (commands / "help.md").write_text("shadowing is not allowed")
    configured.script(Text("Hello, Ada."))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        text = help_text(app.prompt.commands, app.config.keybinds)
        assert "/greet [ARGUMENTS]" in text and "Greet someone" in text
        app.prompt.focus()
        app.prompt.load_text("/gre")
        app.prompt.move_cursor(app.prompt.document.end)
        await pilot.press("tab")
        assert app.prompt.text == "/greet "
        app.prompt.insert("Ada Lovelace")
        await pilot.press("enter")
        await wait_for(pilot, lambda: configured.requests and app.chat.status == "idle", "reply")
        assert any("help.md" in str(n.message) for n in app._notifications)
    await app.db.close()
    last = [m for m in configured.requests[-1]["messages"] if m["role"] == "user"][-1]
    assert text_of(last) == "Say hello to Ada (Ada Lovelace)."


async def test_the_prompt_is_drawn_in_the_colours_of_the_theme_and_focus_it_has() -> None:
    """The prompt reads its colours (text, cursor) from the CSS only after its styles
    changed, not at every frame: a theme, a class or a focus change still recolours it."""
    from textual.app import App
    from textual.geometry import Region

    from agent_tui.tui.prompt_input import PromptInput

    class One(App[None]):
        CSS = "PromptInput.-red > .text-area--cursor { background: red; }"

        def compose(self):  # type: ignore[no-untyped-def]
            yield PromptInput()

    app = One()
    async with app.run_test(size=(60, 8)) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press("h", "i")
        await pilot.pause()

        def colours() -> set[object]:
            """The styles the typed text and the cursor after it are drawn in."""
            strips = prompt.render_lines(Region(0, 0, *prompt.region.size))
            return {seg.style for seg in strips[1] if seg.text in ("hi", " ")}

        dark = colours()
        app.theme = "textual-light"
        await pilot.pause()
        light = colours()
        assert light and light != dark
        prompt.add_class("-red")  # the same theme: only the styles changed
        await pilot.pause()
        red = colours()
        assert red != light
        prompt.blur()  # no cursor drawn
        await pilot.pause()
        assert colours() != red
