"""Every litellm exception mapped to retry-or-not and a sentence for the person."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agent_tui.errors import ContextOverflowError, ProviderError


class ErrorRule(NamedTuple):
    retry: bool
    kind: str
    sentence: str


# Keyed by litellm exception class name; the first match along the MRO wins.
# tests/test_provider_errors.py fails when litellm grows an exception not listed here.
ERROR_TABLE: dict[str, ErrorRule] = {
    "ContextWindowExceededError": ErrorRule(
        False, "context_overflow", "The request does not fit the model's context window."
    ),
    "RateLimitError": ErrorRule(True, "rate_limit", "The provider is rate-limiting requests."),
    "InternalServerError": ErrorRule(True, "server", "The provider had an internal error."),
    "ServiceUnavailableError": ErrorRule(True, "server", "The provider is unavailable."),
    "BadGatewayError": ErrorRule(True, "server", "The provider's gateway failed."),
    "Timeout": ErrorRule(True, "timeout", "The request to the provider timed out."),
    "APIConnectionError": ErrorRule(
        True, "connection", "Could not connect to the provider (network or api_base problem)."
    ),
    "AuthenticationError": ErrorRule(
        False, "auth", "The provider rejected the API key. Check the key for this provider."
    ),
    "PermissionDeniedError": ErrorRule(
        False, "permission", "The API key has no access to this model."
    ),
    "PaymentRequiredError": ErrorRule(
        False, "billing", "The provider requires payment: check the account's billing."
    ),
    "BudgetExceededError": ErrorRule(False, "billing", "The configured budget is exhausted."),
    "NotFoundError": ErrorRule(
        False, "not_found", "The provider does not know this model. Check the model id."
    ),
    "ModelNotMappedError": ErrorRule(
        False, "not_found", "litellm does not know this model. Check the model id."
    ),
    "BadRequestError": ErrorRule(False, "bad_request", "The provider rejected the request."),
    "InvalidRequestError": ErrorRule(False, "bad_request", "The provider rejected the request."),
    "UnprocessableEntityError": ErrorRule(
        False, "bad_request", "The provider could not process the request."
    ),
    "UnsupportedParamsError": ErrorRule(
        False, "bad_request", "The model does not support a parameter of this request."
    ),
    "JSONSchemaValidationError": ErrorRule(
        False, "bad_request", "The model's answer did not match the expected schema."
    ),
    "APIResponseValidationError": ErrorRule(
        True, "bad_response", "The provider sent a response that could not be read."
    ),
    "ContentPolicyViolationError": ErrorRule(
        False, "content_policy", "The provider refused the content under its usage policy."
    ),
    "RejectedRequestError": ErrorRule(
        False, "content_policy", "The provider rejected the request."
    ),
    "BlockedPiiEntityError": ErrorRule(
        False, "content_policy", "A guardrail blocked personal data in the request."
    ),
    "GuardrailRaisedException": ErrorRule(
        False, "content_policy", "A guardrail blocked the request."
    ),
    "SensitiveDataRouteException": ErrorRule(
        False, "content_policy", "A guardrail blocked sensitive data in the request."
    ),
    "ModifyResponseException": ErrorRule(
        False, "content_policy", "A guardrail changed the response."
    ),
    "ImageFetchError": ErrorRule(
        False, "bad_request", "An image in the request could not be fetched."
    ),
    "VectorStoreSearchError": ErrorRule(False, "bad_request", "A vector store search failed."),
    "MidStreamFallbackError": ErrorRule(True, "stream", "The stream broke off mid-way."),
    "MockException": ErrorRule(False, "error", "A mocked litellm error."),
    "OpenAIError": ErrorRule(True, "server", "The provider returned an error."),
    "APIError": ErrorRule(True, "server", "The provider returned an error."),
}


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from a Retry-After header; litellm keeps the real headers in
    `litellm_response_headers` (its rebuilt `response` has none)."""
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        if not headers:
            continue
        value = headers.get("retry-after") or headers.get("Retry-After")
        if value is None:
            continue
        try:
            return max(float(value), 0.0)
        except ValueError:
            return None
    return None


def _detail(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc).strip()
    # litellm prefixes messages with "litellm.XError: OpenAIException - "; keep the meat.
    for marker in ("Exception - ", "Error - "):
        if marker in text:
            text = text.split(marker, 1)[1]
    # A mid-stream failure repeats the wrapped error after "Original exception:".
    text = text.split(" Original exception:", 1)[0].strip()
    return text[:500]


_OVERFLOW_PHRASES = (
    "context length",
    "context window",
    "context size",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "reduce the length",
    "exceed_context_size",
)


def _looks_like_overflow(detail: str) -> bool:
    lowered = detail.lower()
    return any(phrase in lowered for phrase in _OVERFLOW_PHRASES)


# What an HTTP status means when litellm only says "APIError" or "BadRequestError".
STATUS_RULES: dict[int, str] = {
    401: "AuthenticationError",
    402: "PaymentRequiredError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    408: "Timeout",
    413: "ContextWindowExceededError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}
CATCH_ALL_KINDS = {"server", "bad_request"}
STREAM_KINDS = ("stream", "stream_error")
CONNECTION_CAUSES = {
    "APIConnectionError",
    "ConnectError",
    "ConnectTimeout",
    "ConnectionRefusedError",
    "ConnectionResetError",
    "ClientConnectorError",
    "ServerDisconnectedError",
    "gaierror",
}


def _rule_for(exc: BaseException) -> ErrorRule | None:
    names = (cls.__name__ for cls in type(exc).__mro__)
    return next((ERROR_TABLE[name] for name in names if name in ERROR_TABLE), None)


def _refine(rule: ErrorRule | None, exc: BaseException, detail: str) -> ErrorRule | None:
    """Generic rules (APIError, BadRequestError, InternalServerError) are refined by the
    HTTP status, by an overflow message, or by a connection failure in the cause chain."""
    if rule is not None and rule.kind not in CATCH_ALL_KINDS:
        return rule
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status in STATUS_RULES:
        return ERROR_TABLE[STATUS_RULES[status]]
    if _looks_like_overflow(detail):
        return ERROR_TABLE["ContextWindowExceededError"]
    if any(type(item).__name__ in CONNECTION_CAUSES for item in _chain(exc)):
        return ERROR_TABLE["APIConnectionError"]
    if rule is None and isinstance(exc, (ConnectionError, TimeoutError)):
        return ERROR_TABLE["APIConnectionError"]
    if rule is not None and rule.kind == "server" and isinstance(status, int) and status < 500:
        return ERROR_TABLE["BadRequestError"]
    return rule


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _error_bodies(exc: BaseException) -> list[dict[str, Any]]:
    """The JSON error objects the server sent, as the OpenAI SDK keeps them (`body`) on
    the exceptions litellm wraps: a 400's body, or an error object inside a 200 stream."""
    found = (getattr(item, "body", None) for item in _chain(exc))
    bodies = [body for body in found if isinstance(body, dict)]
    return [b["error"] if isinstance(b.get("error"), dict) else b for b in bodies]


def _in_stream_error(exc: BaseException) -> ErrorRule | None:
    """An error object the server sent after `200` (litellm raises MidStreamFallbackError
    around it): its own status decides whether it is worth another attempt."""
    if type(exc).__name__ != "MidStreamFallbackError":
        return None
    for body in _error_bodies(exc):
        if not body.get("message"):
            continue
        code = body.get("code")
        status = code if isinstance(code, int) else None
        kind = str(body.get("type") or "")
        retry = status is None or status >= 500 or status == 429 or "overloaded" in kind
        return ErrorRule(retry, "stream_error", "The provider sent an error inside the stream.")
    return None


@dataclass
class Received:
    """What one streamed answer delivered, for the message when it breaks off."""

    chunks: int = 0
    text: int = 0
    """Characters of text."""
    reasoning: int = 0
    tools: list[str] = field(default_factory=list)
    """Names of the tool calls started."""
    usage: bool = False
    finished: bool = False
    """The server ended the answer with a finish reason."""

    def describe(self) -> str:
        parts = []
        if self.text:
            parts.append(f"{self.text:,} characters of text")
        if self.reasoning:
            parts.append(f"{self.reasoning:,} characters of reasoning")
        if self.tools:
            calls = "call" if len(self.tools) == 1 else "calls"
            parts.append(f"{len(self.tools)} unfinished tool {calls} ({', '.join(self.tools)})")
        if not parts:
            return "no text and no tool call"
        return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


def stream_cut_error(model: str, api_base: str | None, received: Received) -> ProviderError:
    """A stream that ended without a finish reason: not an answer, an error worth retrying."""
    where = f"{model} at {api_base}" if api_base else model
    advice = ""
    if not (received.text or received.reasoning or received.tools):
        # llama-cpp-python ends the stream so when a request exceeds its window, and
        # says why only in its log ("Requested tokens (5701) exceed context window").
        advice = (
            f' If the conversation outgrew the server\'s window, set models."{model}".'
            "limit.context (the server's context size) in agent-tui.json: the conversation "
            "is then compacted before it is reached."
        )
    return ProviderError(
        f"The stream from {where} ended without a finish reason, after "
        f"{received.describe()}: the answer is incomplete. The connection was closed early "
        "(by a proxy or load balancer, or by a server that failed after answering 200; a "
        "local server's own log says why, often its chat template or its context window)." + advice,
        retryable=True,
        kind="stream_cut",
    )


def map_exception(
    exc: BaseException, *, model: str, received: Received | None = None
) -> ProviderError:
    """Turn any exception from a litellm call into a ProviderError for the loop."""
    detail = _detail(exc)
    rule = _in_stream_error(exc) or _rule_for(exc)
    if rule is not None and rule.kind in STREAM_KINDS and _looks_like_overflow(detail):
        rule = ERROR_TABLE["ContextWindowExceededError"]  # overflow reported inside a 200
    rule = _refine(rule, exc, detail) or ErrorRule(False, "error", "The model call failed.")
    message = f"{rule.sentence} ({model}: {detail})" if detail else f"{rule.sentence} ({model})"
    if rule.kind == "context_overflow":
        return ContextOverflowError(message, window=window_from_error(exc, detail))
    streamed = received is not None and (received.text or received.reasoning or received.tools)
    if rule.kind in STREAM_KINDS and streamed:
        message += f" It had sent {received.describe()}."
    return ProviderError(
        message, retryable=rule.retry, kind=rule.kind, retry_after=_retry_after(exc)
    )


# ---- the window an overflow error names ---------------------------------------------------

WINDOW_PATTERNS = (
    re.compile(r"context window of (\d[\d,]*)", re.I),  # llama-cpp-python
    re.compile(r"maximum context length is (\d[\d,]*)", re.I),  # OpenAI, vLLM
    re.compile(r"context length of (?:only )?(\d[\d,]*)", re.I),  # LM Studio
    re.compile(r"context size (?:of |is )?\(?(\d[\d,]*)", re.I),
    re.compile(r"\bn_ctx\b\W{0,3}(\d+)", re.I),  # llama.cpp ("n_ctx": 4096, n_ctx = 4096)
    re.compile(r"> (\d[\d,]*) maximum", re.I),  # Anthropic: "210000 tokens > 200000 maximum"
)
MIN_WINDOW = 256
MAX_WINDOW = 100_000_000


def window_from_text(text: str) -> int | None:
    """The context window an overflow message names ("exceed context window of 4096",
    "maximum context length is 8192 tokens", llama.cpp's n_ctx), or None."""
    for pattern in WINDOW_PATTERNS:
        match = pattern.search(text)
        if match:
            value = int(match.group(1).replace(",", ""))
            if MIN_WINDOW <= value <= MAX_WINDOW:
                return value
    return None


def window_from_error(exc: BaseException, detail: str = "") -> int | None:
    """The window an overflow error names: llama.cpp's `n_ctx` field (its message says
    only "exceeds the available context size"), else the text of the error."""
    for body in _error_bodies(exc):
        n_ctx = body.get("n_ctx")
        if isinstance(n_ctx, int) and MIN_WINDOW <= n_ctx <= MAX_WINDOW:
            return n_ctx
    for text in (detail, *(str(item) for item in _chain(exc))):
        window = window_from_text(text)
        if window is not None:
            return window
    return None
