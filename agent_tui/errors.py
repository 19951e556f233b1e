"""One exception hierarchy for the project, with messages written for people."""

from __future__ import annotations


class AgentTuiError(Exception):
    """Base of every error agent-tui reports to a person (never as a traceback)."""

    exit_code = 1


class ConfigError(AgentTuiError):
    """A config file or value is missing or invalid."""


class UsageError(AgentTuiError):
    """A command-line argument or command is invalid."""

    exit_code = 2


class EditorError(AgentTuiError):
    """The person's text editor ($VISUAL / $EDITOR) could not start or gave up."""


class StorageError(AgentTuiError):
    """The database is locked, corrupted or unreadable."""


class NotFoundError(AgentTuiError):
    """A session or message id does not exist."""


class ProviderError(AgentTuiError):
    """The model provider refused or failed a request."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        kind: str = "error",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.kind = kind
        self.retry_after = retry_after


class ContextOverflowError(ProviderError):
    """The provider rejected a request because it does not fit the context window."""

    def __init__(self, message: str, *, window: int | None = None) -> None:
        super().__init__(message, retryable=False, kind="context_overflow")
        self.window = window
        """The window the error names (e.g. "exceed context window of 4096"), if any."""


class CompactionError(AgentTuiError):
    """Compaction could not shrink the history enough to continue."""


class ToolError(AgentTuiError):
    """A tool failed; the message goes back to the model as the tool result."""


class PermissionDenied(ToolError):
    """A tool call was refused by configuration or by the person."""


class SandboxError(ToolError):
    """A command cannot run as configured: `sandbox.required` and no sandbox here."""
