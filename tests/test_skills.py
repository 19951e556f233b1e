"""Skills: listed in the system prompt, loaded by the skill tool, never pruned."""

from __future__ import annotations

import json
from pathlib import Path

from agent_tui import paths
from agent_tui.config.settings import Config
from agent_tui.project.skills import SKILLS_HEADER, load_skills
from agent_tui.step.messages import CLEARED_OUTPUT
from agent_tui.step.system import build_system
from tests.conftest import MODEL, write_config
from tests.engine_helpers import open_engine
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls


def write_skill(root: Path, folder: str, front: str, body: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}\n---\n{body}\n", encoding="utf-8")
    return path


def project_skills(project: Path) -> Path:
    return project / ".agent-tui" / "skills"


def user_skills() -> Path:
    return paths.config_dir() / "skills"


def test_skills_are_found_in_the_project_and_the_user_config(isolated: Path) -> None:
    write_skill(user_skills(), "release", "name: release\ndescription: Cut a release", "user")
    write_skill(user_skills(), "style", "name: style\ndescription: House style", "user style")
    write_skill(
        project_skills(isolated), "style2", "name: Style\ndescription: 'Project style'", "mine"
    )
    write_skill(project_skills(isolated), "bare", "description: no name given", "bare body")
    (project_skills(isolated) / "not-a-skill").mkdir()
    skills = load_skills(isolated)
    assert sorted(skills) == ["bare", "release", "style"]
    assert skills["style"].body == "mine" and skills["style"].scope == "project"
    assert skills["style"].description == "Project style"
    assert skills["bare"].name == "bare"


def test_the_system_prompt_lists_skills_only_when_there_are_some(isolated: Path) -> None:
    _, second = build_system(MODEL, isolated, Config())[0]
    assert SKILLS_HEADER not in second and "<skills>" not in second
    write_skill(project_skills(isolated), "b", "name: beta\ndescription: Second", "B")
    write_skill(project_skills(isolated), "a", "name: alpha\ndescription: First", "A")
    _, second = build_system(MODEL, isolated, Config())[0]
    assert second.endswith(f"{SKILLS_HEADER}\n<skills>\n- alpha: First\n- beta: Second\n</skills>")
    assert build_system(MODEL, isolated, Config())[0][1] == second  # the same bytes each step


async def test_a_skill_is_loaded_and_its_output_survives_prune(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, compaction={"prune_protect": 0, "prune_minimum": 10})
    body = "Always run the linter first.\nSee checklist.md.\n" + "detail " * 300
    path = write_skill(project_skills(isolated), "lint", "name: lint\ndescription: Linting", body)
    (isolated / "big.txt").write_text("filler line\n" * 400)
    read = ToolCalls([Call("read", json.dumps({"file_path": str(isolated / "big.txt")}))])
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        fake_llm.script(
            ToolCalls([Call("skill", json.dumps({"name": "LINT"}))]),
            ToolCalls([Call("skill", json.dumps({"name": "nope"}))]),
            read,
            Text("loaded"),
        )
        await engine.prompt(session.id, "turn 1")
        first = fake_llm.requests[0]
        assert "- lint: Linting" in first["messages"][0]["content"]  # the one system message
        for turn in (2, 3, 4):
            fake_llm.script(Text(f"chat {turn}"))
            await engine.prompt(session.id, f"turn {turn}")
        results = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]
        loaded, missing, pruned = results
        assert loaded.startswith('<skill name="lint">')
        assert f"Skill folder: {path.parent}" in loaded
        assert "Always run the linter first." in loaded
        assert "No skill named 'nope'. Available skills: lint." in missing
        assert pruned.startswith(CLEARED_OUTPUT)  # the read beside it was pruned
