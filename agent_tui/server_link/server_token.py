"""The server's token: generated once into a file only its owner can read, and checked on
every request. A leaf (no acp, no pydantic): `run --attach` reads the token through it."""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
from pathlib import Path

from agent_tui import paths

TOKEN_FILE = "server-token"
TOKEN_ENV = "AGENT_TUI_SERVER_TOKEN"
"""A token for `run --attach` when the server was started with `--token`."""
SCHEME = "Bearer"


def token_path() -> Path:
    return paths.data_dir() / TOKEN_FILE


def load_or_create_token() -> str:
    """The token in the data dir's server-token file; created (0600) on first use."""
    path = token_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        with contextlib.suppress(OSError):
            os.chmod(path, 0o600)  # a copied or hand-made file: readable by its owner only
        if found := read_token():
            return found
        path.unlink(missing_ok=True)  # empty (a crash while writing it): make a new one
        return load_or_create_token()
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(token + "\n")
    return token


def read_token() -> str | None:
    """The token file's content, or None when there is none (yet)."""
    try:
        token = token_path().read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return token or None


def header(token: str) -> str:
    return f"{SCHEME} {token}"


def authorized(value: str | None, token: str) -> bool:
    """Whether an Authorization header carries the token (compared in constant time)."""
    scheme, _, given = (value or "").partition(" ")
    return scheme.lower() == SCHEME.lower() and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )
