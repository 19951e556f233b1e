"""Errors across the provider process's pipe (provider/worker.py, provider/remote.py):
a ProviderError arrives as the same class with the same fields, so retries, the learned
window of an overflow and the messages work as they do in one process."""

from __future__ import annotations

from typing import Any

from agent_tui.errors import ContextOverflowError, ProviderError


def error_to_json(exc: BaseException) -> dict[str, Any]:
    """A failure as the command re-raises it: ProviderError keeps its fields."""
    if isinstance(exc, ContextOverflowError):
        return {"type": "overflow", "message": str(exc), "window": exc.window}
    if isinstance(exc, ProviderError):
        return {
            "type": "provider",
            "message": str(exc),
            "retryable": exc.retryable,
            "kind": exc.kind,
            "retry_after": exc.retry_after,
        }
    return {"type": "other", "message": f"{type(exc).__name__}: {exc}"}


def error_from_json(data: dict[str, Any]) -> Exception:
    if data.get("type") == "overflow":
        return ContextOverflowError(str(data.get("message")), window=data.get("window"))
    if data.get("type") == "provider":
        return ProviderError(
            str(data.get("message")),
            retryable=bool(data.get("retryable")),
            kind=str(data.get("kind") or "error"),
            retry_after=data.get("retry_after"),
        )
    return RuntimeError(str(data.get("message")))
