"""The `lsp` config key: servers by name ({"python": {"command": ["ruff", "server"],
"extensions": [".py"]}}) beside `enabled`, `timeout`, `warnings` and `max_diagnostics`.
Without a configured server for an extension, the first default found on PATH serves it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class LspServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: list[str] = Field(default_factory=list)
    """The server's command line; it speaks LSP on stdin/stdout."""
    extensions: list[str] = Field(default_factory=list)
    """The files it checks (".py"); a leading dot is added when missing."""
    disabled: bool = False
    """Switch off this server (or a default of the same name)."""

    @model_validator(mode="after")
    def _dotted(self) -> LspServerConfig:
        if not self.command and not self.disabled:
            raise ValueError('command: the server\'s command line, e.g. ["ruff", "server"]')
        self.extensions = [e if e.startswith(".") else f".{e}" for e in self.extensions]
        return self


DEFAULTS: dict[str, tuple[list[list[str]], list[str]]] = {
    "python": (
        [["ruff", "server"], ["pylsp"], ["pyright-langserver", "--stdio"]],
        [".py", ".pyi"],
    ),
    "typescript": (
        [["typescript-language-server", "--stdio"]],
        [".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs"],
    ),
    "go": ([["gopls"]], [".go"]),
    "rust": ([["rust-analyzer"]], [".rs"]),
}
"""Per language: candidate servers, the first on PATH is used, and its extensions."""


class LspConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    """Diagnostics after edit and write (false: no language server is started)."""
    timeout: float = Field(default=3.0, gt=0)
    """Seconds an edit waits for a server's diagnostics (a slow server adds a note)."""
    warnings: bool = False
    """Report new warnings too, not only errors."""
    max_diagnostics: int = Field(default=10, ge=1)
    """New diagnostics listed per edit; the rest are counted."""
    servers: dict[str, LspServerConfig] = Field(default_factory=dict)
    """Servers by name; any other key of `lsp` is a server too."""

    @model_validator(mode="before")
    @classmethod
    def _servers_beside(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        own = set(cls.model_fields)
        servers = dict(data.get("servers") or {})
        servers.update({k: v for k, v in data.items() if k not in own})
        return {**{k: v for k, v in data.items() if k in own}, "servers": servers}
