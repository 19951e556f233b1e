"""Secrets never reach the model, the database or exports: the tools' environment
withholds secret-looking variables, and outputs and errors are redacted."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent_tui.redact import Redactor, StreamRedactor
from agent_tui.secrets import ToolEnvironment
from tests.conftest import write_config
from tests.engine_helpers import run_cli, tool_results
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls

SERVICE_TOKEN = "svc-tok-0123456789-abcdef"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8"  # the classic 36-character body
OPENAI_KEY = "sk-test-SECRET-0123456789abcdef"
CONFIG_KEY = "literal-config-key-98765"
"""A key written in agent-tui.json itself (no environment variable holds it)."""
AWS_KEY_ID = "AKIA" + "ABCDEFGHIJKLMNOP"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "MIIEowIBAAKCAQEA7n0Z5qv0lqKd9w0Y1r8XZ3cKqQ2yJ4n8w5sXbH1c2d3e4f5g\n" * 3
    + "-----END RSA PRIVATE KEY-----"
)
ALL_SECRETS = (SERVICE_TOKEN, GITHUB_TOKEN, OPENAI_KEY, CONFIG_KEY)


def bash(command: str) -> Call:
    return Call("bash", json.dumps({"command": command}))


@pytest.fixture
def secret_env(isolated: Path, fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> Path:
    """MY_SERVICE_TOKEN, GITHUB_TOKEN and OPENAI_API_KEY in the environment; the config
    reads the OpenAI key from it and holds an Anthropic key itself."""
    monkeypatch.setenv("MY_SERVICE_TOKEN", SERVICE_TOKEN)
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB_TOKEN)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    write_config(
        isolated,
        fake_llm,
        provider={
            "openai": {"api_base": fake_llm.base_url, "api_key": "{env:OPENAI_API_KEY}"},
            "anthropic": {"api_key": CONFIG_KEY},
        },
    )
    return isolated


def assert_nowhere(secrets: tuple[str, ...], fake_llm: FakeOpenAI, data_dir: Path, capsys) -> None:
    """Not in any request body, any file under the data dir, or `export`."""
    sent = json.dumps(fake_llm.requests)
    for secret in secrets:
        assert secret not in sent
    for path in data_dir.rglob("*"):
        if path.is_file():
            content = path.read_bytes()
            for secret in secrets:
                assert secret.encode() not in content, path
    code, out, _ = run_cli(capsys, "sessions", "--json")
    code, exported, _ = run_cli(capsys, "export", json.loads(out)[0]["id"])
    assert code == 0
    for secret in secrets:
        assert secret not in exported


def test_env_printenv_and_dotenv_show_no_secret(
    secret_env: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    dotenv = (
        f"MY_SERVICE_TOKEN={SERVICE_TOKEN}\nGITHUB_TOKEN={GITHUB_TOKEN}\n"
        f"OPENAI_API_KEY={OPENAI_KEY}\nANTHROPIC_API_KEY={CONFIG_KEY}\n"
    )
    (secret_env / ".env").write_text(dotenv)
    fake_llm.script(
        ToolCalls(
            [
                bash("env"),
                bash("printenv"),
                bash('echo "svc:$MY_SERVICE_TOKEN:gh:$GITHUB_TOKEN:oa:$OPENAI_API_KEY:"'),
                bash("cat .env"),
                Call("read", json.dumps({"file_path": ".env"})),
            ]
        ),
        Text("ok"),
    )
    code, _, err = run_cli(capsys, "run", "show me the environment")
    assert code == 0, err
    assert fake_llm.headers[0]["authorization"] == f"Bearer {OPENAI_KEY}"  # used for the call
    env_out, printenv_out, echoed, cat_out, read_out = tool_results(fake_llm.requests[1])
    for listing in (env_out, printenv_out):
        assert "PAGER=cat" in listing  # the environment is there ...
        for name in ("MY_SERVICE_TOKEN=", "GITHUB_TOKEN=", "OPENAI_API_KEY="):
            assert name not in listing  # ... without the withheld variables
    assert echoed == "svc::gh::oa::"
    for shown in (cat_out, read_out):
        assert "MY_SERVICE_TOKEN=[REDACTED:MY_SERVICE_TOKEN]" in shown
        assert "GITHUB_TOKEN=[REDACTED:GITHUB_TOKEN]" in shown
        assert "OPENAI_API_KEY=[REDACTED:OPENAI_API_KEY]" in shown
        assert "ANTHROPIC_API_KEY=[REDACTED:provider.anthropic.api_key]" in shown
    assert "agent-tui: 8 secrets redacted from tool output" in err
    assert_nowhere(ALL_SECRETS, fake_llm, secret_env.parent / "data", capsys)

    code, out, err = run_cli(capsys, "context")
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if x.startswith("Withheld from tools:")]
    for name in ("GITHUB_TOKEN", "MY_SERVICE_TOKEN", "OPENAI_API_KEY"):
        assert name in line
    assert "(shell.env.include puts one back)" in line
    assert not any(secret in out for secret in ALL_SECRETS)


def test_include_puts_a_variable_back_and_set_adds_one(
    secret_env: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(
        secret_env,
        fake_llm,
        provider={"openai": {"api_base": fake_llm.base_url, "api_key": "{env:OPENAI_API_KEY}"}},
        shell={"env": {"include": ["my_service_*"], "set": {"DEPLOY_ENV": "staging-eu-1"}}},
    )
    fake_llm.script(
        ToolCalls([bash('echo "svc:$MY_SERVICE_TOKEN:gh:$GITHUB_TOKEN:env:$DEPLOY_ENV:"')]),
        Text("ok"),
    )
    code, _, err = run_cli(capsys, "run", "which variables do you see")
    assert code == 0, err
    # Included: not withheld, so not a secret; GITHUB_TOKEN is still withheld.
    assert tool_results(fake_llm.requests[1]) == [f"svc:{SERVICE_TOKEN}:gh::env:staging-eu-1:"]
    assert "redacted" not in err
    code, out, _ = run_cli(capsys, "context")
    (line,) = [x for x in out.splitlines() if x.startswith("Withheld from tools:")]
    assert "GITHUB_TOKEN" in line and "MY_SERVICE_TOKEN" not in line


def test_read_redacts_withheld_values_and_key_formats(
    secret_env: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    (secret_env / "notes.txt").write_text(
        f"service: {SERVICE_TOKEN}\n"
        "a token someone pasted: ghp_" + "Zz9" * 12 + "\n"
        f"aws: {AWS_KEY_ID}\n"
        "slack: xoxb-123456789012-abcdefghijkl\n"
        f"{PEM}\n"
        "the end\n"
    )
    fake_llm.script(ToolCalls([Call("read", json.dumps({"file_path": "notes.txt"}))]), Text("ok"))
    code, _, err = run_cli(capsys, "run", "read my notes")
    assert code == 0, err
    (shown,) = tool_results(fake_llm.requests[1])
    assert "service: [REDACTED:MY_SERVICE_TOKEN]" in shown
    assert "pasted: [REDACTED:github-token]" in shown
    assert "aws: [REDACTED:aws-access-key]" in shown
    assert "slack: [REDACTED:slack-token]" in shown
    assert "[REDACTED:private-key]" in shown and "MIIE" not in shown
    assert "the end" in shown
    assert "agent-tui: 5 secrets redacted from tool output" in err
    assert_nowhere(
        (SERVICE_TOKEN, "Zz9" * 12, AWS_KEY_ID), fake_llm, secret_env.parent / "data", capsys
    )


def test_tool_error_texts_are_redacted(
    secret_env: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.script(
        ToolCalls([Call("read", json.dumps({"file_path": f"{GITHUB_TOKEN}.txt"}))]), Text("ok")
    )
    code, _, err = run_cli(capsys, "run", "read it")
    assert code == 0, err
    (shown,) = tool_results(fake_llm.requests[1])
    assert "[REDACTED:GITHUB_TOKEN].txt" in shown and GITHUB_TOKEN not in shown
    assert "1 secret redacted from tool output" in err


# ---- the redactor and the environment policy ------------------------------------------


@pytest.mark.parametrize(
    ("secret", "name"),
    [
        ("sk-proj-" + "Ab3" * 16, "openai-key"),
        ("sk-" + "q" * 48, "openai-key"),
        ("sk-ant-api03-" + "Xy_9-" * 10, "anthropic-key"),
        ("ghp_" + "a1B2" * 9, "github-token"),
        ("gho_" + "a1B2" * 9, "github-token"),
        ("github_pat_11ABCDEFG0" + "x" * 60, "github-token"),
        ("AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
        ("xoxb-1234567890-0987654321-AbCdEfGhIjKl", "slack-token"),
        ("xoxp-1234567890-0987654321-AbCdEfGhIjKl", "slack-token"),
        (PEM, "private-key"),
        ("-----BEGIN PRIVATE KEY-----\n" + "QUJD" * 16 + "\n" + "REVG" * 16, "private-key"),
    ],
)
def test_key_formats_are_redacted_with_their_name(secret: str, name: str) -> None:
    text, count = Redactor().redact(f"before {secret} after")
    assert (text, count) == (f"before [REDACTED:{name}] after", 1)


@pytest.mark.parametrize(
    "text",
    [
        "task-runner-for-the-project-with-a-long-name",  # sk- inside a word
        "AKIA is not a key, nor AKIAshort",
        "sk-learn and sk-short",
        "git log --format=%H  9fceb02d0ae598e95dc970b74767f19372d61af8",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Redactor().redact(text) == (text, 0)


def test_known_values_longest_first_and_short_ones_ignored() -> None:
    redactor = Redactor(
        {"abcdefgh12345678": "LONG_TOKEN", "abcdefgh": "SHORT_TOKEN", "hunter2": "PASSWORD"}
    )
    text, count = redactor.redact("abcdefgh12345678 abcdefgh hunter2")
    assert text == "[REDACTED:LONG_TOKEN] [REDACTED:SHORT_TOKEN] hunter2"  # 7 chars: kept
    assert count == 2


def test_a_known_value_wins_over_its_format() -> None:
    redactor = Redactor({OPENAI_KEY: "OPENAI_API_KEY"})
    assert redactor(f"key={OPENAI_KEY}") == "key=[REDACTED:OPENAI_API_KEY]"


def test_environment_policy() -> None:
    environ = {
        "HOME": "/home/someone",
        "PATH": "/usr/bin",
        "GITHUB_TOKEN": GITHUB_TOKEN,
        "my_service_token": SERVICE_TOKEN,
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "DB_PASSWORD": "correct-horse-battery",
        "GOOGLE_APPLICATION_CREDENTIALS": "/home/someone/creds.json",
        "KEYS_DIR": "/home/someone",  # withheld, but HOME shows the same value anyway
        "DATABASE_URL": "postgres://u:p@db/app",
        "KEYTIMEOUT": "1",
    }
    policy = ToolEnvironment.build(
        environ, exclude=["DATABASE_*"], include=["keytimeout"], fixed={"CI": "1"}
    )
    assert set(policy.env) == {"HOME", "PATH", "KEYTIMEOUT", "CI"}
    assert set(policy.withheld) == {
        "GITHUB_TOKEN",
        "my_service_token",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "KEYS_DIR",
        "DATABASE_URL",
    }
    known = policy.known_secrets({"provider.openai.api_key": OPENAI_KEY})
    assert known[SERVICE_TOKEN] == "my_service_token"
    assert known[OPENAI_KEY] == "provider.openai.api_key"
    assert "/home/someone" not in known
    assert policy.withheld_line().startswith("Withheld from tools: AWS_SECRET_ACCESS_KEY, ")
    assert SERVICE_TOKEN not in policy.withheld_line()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["plain text ", "\n", SERVICE_TOKEN, GITHUB_TOKEN, PEM, "sk-" + "z" * 30, "x" * 50]
        ),
        max_size=30,
    ),
    st.lists(st.integers(min_value=0, max_value=4000), max_size=12),
)
# Found by the search: the release cut fell in a known value; the search after it started
# one character early (for word boundaries) and a format match starting in that character
# hid the value. Matches starting before the cut are now dropped before overlaps resolve.
@example(
    pieces=[SERVICE_TOKEN, "sk-" + "z" * 30, SERVICE_TOKEN, GITHUB_TOKEN, "plain text "]
    + ["sk-" + "z" * 30] * 3
    + ["x" * 50],
    cuts=[],
)
def test_a_stream_is_redacted_like_the_whole_text(pieces: list[str], cuts: list[int]) -> None:
    """However the output is split into chunks, the stream gives what redacting the
    whole text gives (secrets straddling chunk boundaries included)."""
    text = "".join(pieces)
    redactor = Redactor({SERVICE_TOKEN: "MY_SERVICE_TOKEN"})
    # Held back: more than the longest secret here (the PEM block), far less than the text.
    stream = StreamRedactor(redactor, batch_chars=16, hold_chars=len(PEM) + 1)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    out = "".join(stream.feed(text[a:b]) for a, b in itertools.pairwise(bounds))
    out += stream.finish()
    assert (out, stream.count) == redactor.redact(text)
