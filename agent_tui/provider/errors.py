"""Every litellm exception mapped to retry-or-not and a sentence for the person."""

from __future__ import annotations

from typing import NamedTuple

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
    return text[:500]


_OVERFLOW_PHRASES = (
    "context length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "reduce the length",
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
    for cls in type(exc).__mro__:
        rule = ERROR_TABLE.get(cls.__name__)
        if rule:
            return rule
    return None


def _caused_by_connection(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current).__name__ in CONNECTION_CAUSES:
            return True
        current = current.__cause__ or current.__context__
    return False


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
    if _caused_by_connection(exc):
        return ERROR_TABLE["APIConnectionError"]
    if rule is None and isinstance(exc, (ConnectionError, TimeoutError)):
        return ERROR_TABLE["APIConnectionError"]
    if rule is not None and rule.kind == "server" and isinstance(status, int) and status < 500:
        return ErrorRule(False, "bad_request", "The provider rejected the request.")
    return rule


def map_exception(exc: BaseException, *, model: str) -> ProviderError:
    """Turn any exception from a litellm call into a ProviderError for the loop."""
    detail = _detail(exc)
    rule = _refine(_rule_for(exc), exc, detail) or ErrorRule(
        False, "error", "The model call failed."
    )
    message = f"{rule.sentence} ({model}: {detail})" if detail else f"{rule.sentence} ({model})"
    if rule.kind == "context_overflow":
        return ContextOverflowError(message)
    return ProviderError(
        message, retryable=rule.retry, kind=rule.kind, retry_after=_retry_after(exc)
    )
