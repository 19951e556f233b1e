"""Every litellm exception is mapped to retry-or-not and a sentence for the person."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable

import httpx
import pytest

from agent_tui.errors import ContextOverflowError, ProviderError
from agent_tui.provider.loader import litellm
from agent_tui.provider.provider_errors import ERROR_TABLE, map_exception

MODEL = "openai/test-model"

# Fallbacks that match almost everything: an exception mapped only through one of these
# gets a generic sentence and a guessed retry rule, so it counts as not mapped.
CATCH_ALLS = {"APIError", "OpenAIError", "APIStatusError", "Exception", "BaseException"}


def exception_classes(module: types.ModuleType) -> dict[str, type[BaseException]]:
    """The exception classes a module exposes, by the name it exposes them under."""
    return {
        name: value
        for name in dir(module)
        if inspect.isclass(value := getattr(module, name)) and issubclass(value, Exception)
    }


def mapped_by(cls: type[BaseException]) -> str | None:
    """The ERROR_TABLE key that decides for `cls`: its own name, else the nearest
    specific ancestor (never a catch-all for a class that is not itself one)."""
    for ancestor in cls.__mro__:
        name = ancestor.__name__
        if name in ERROR_TABLE and (name not in CATCH_ALLS or ancestor is cls):
            return name
        if name == "Exception":
            break
    return None


def unmapped(module: types.ModuleType) -> list[str]:
    return sorted(name for name, cls in exception_classes(module).items() if not mapped_by(cls))


@pytest.fixture(scope="module")
def exceptions() -> types.ModuleType:
    return litellm().exceptions


def test_every_litellm_exception_is_mapped(exceptions: types.ModuleType) -> None:
    classes = exception_classes(exceptions)
    assert len(classes) > 20, "litellm.exceptions changed shape: update this test"
    missing = unmapped(exceptions)
    assert not missing, (
        f"litellm exceptions without a rule in agent_tui/provider/errors.py ERROR_TABLE: "
        f"{missing}. Add each with retry-or-not and a sentence for the person."
    )


def test_the_guard_notices_a_new_exception(exceptions: types.ModuleType) -> None:
    """What happens when litellm grows an exception: the check above must fail."""

    class BrandNewProviderError(exceptions.APIError):  # type: ignore[name-defined,misc]
        pass

    class SubtleBadRequest(exceptions.BadRequestError):  # type: ignore[name-defined,misc]
        pass

    fake = types.ModuleType("litellm_next.exceptions")
    fake.BrandNewProviderError = BrandNewProviderError  # type: ignore[attr-defined]
    fake.SubtleBadRequest = SubtleBadRequest  # type: ignore[attr-defined]
    fake.RateLimitError = exceptions.RateLimitError  # type: ignore[attr-defined]
    # Under the catch-all APIError only: not mapped. Under BadRequestError: mapped.
    assert unmapped(fake) == ["BrandNewProviderError"]


def test_every_rule_has_a_sentence_ending_in_a_full_stop() -> None:
    for name, rule in ERROR_TABLE.items():
        assert rule.sentence.endswith("."), name
        assert rule.kind, name


# ---- map_exception on real litellm exception objects ----------------------------------


def _response(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(
        status, headers=headers, request=httpx.Request("POST", "http://127.0.0.1/v1")
    )


def _build(exceptions: types.ModuleType, name: str, message: str, status: int) -> Exception:
    cls = getattr(exceptions, name)
    if name == "APIConnectionError":
        return cls(message=message, llm_provider="openai", model=MODEL)
    if name == "Timeout":
        return cls(message=message, model=MODEL, llm_provider="openai")
    return cls(message=message, llm_provider="openai", model=MODEL, response=_response(status))


RETRYABLE = [
    ("RateLimitError", 429),
    ("InternalServerError", 500),
    ("ServiceUnavailableError", 503),
    ("BadGatewayError", 502),
    ("APIConnectionError", 0),
    ("Timeout", 0),
]
NOT_RETRYABLE = [
    ("AuthenticationError", 401, "rejected the API key"),
    ("BadRequestError", 400, "rejected the request"),
    ("NotFoundError", 404, "Check the model id"),
    ("PermissionDeniedError", 403, "no access"),
]


@pytest.mark.parametrize(("name", "status"), RETRYABLE)
def test_transient_failures_are_retried(
    exceptions: types.ModuleType, name: str, status: int
) -> None:
    error = map_exception(_build(exceptions, name, "try later", status), model=MODEL)
    assert isinstance(error, ProviderError) and not isinstance(error, ContextOverflowError)
    assert error.retryable, name
    assert MODEL in str(error) and "try later" in str(error)


@pytest.mark.parametrize(("name", "status", "phrase"), NOT_RETRYABLE)
def test_caller_mistakes_are_not_retried(
    exceptions: types.ModuleType, name: str, status: int, phrase: str
) -> None:
    error = map_exception(_build(exceptions, name, "nope", status), model=MODEL)
    assert not error.retryable, name
    assert phrase in str(error)


def test_connection_error_names_a_connection_problem(exceptions: types.ModuleType) -> None:
    error = map_exception(_build(exceptions, "APIConnectionError", "refused", 0), model=MODEL)
    assert error.kind == "connection"
    assert "connect" in str(error).lower()


def test_context_window_exceeded_is_an_overflow(exceptions: types.ModuleType) -> None:
    exc = exceptions.ContextWindowExceededError(
        message="too long", model=MODEL, llm_provider="openai", response=_response(400)
    )
    error = map_exception(exc, model=MODEL)
    assert isinstance(error, ContextOverflowError)
    assert not error.retryable
    assert "context window" in str(error)


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130000 tokens.",
        "prompt is too long: 210000 tokens > 200000 maximum",
    ],
)
def test_bad_request_that_reads_like_an_overflow_is_an_overflow(
    exceptions: types.ModuleType, message: str
) -> None:
    exc = exceptions.BadRequestError(
        message=message, model=MODEL, llm_provider="openai", response=_response(400)
    )
    assert isinstance(map_exception(exc, model=MODEL), ContextOverflowError)


def test_bad_request_with_status_401_is_an_auth_error(exceptions: types.ModuleType) -> None:
    exc = exceptions.BadRequestError(
        message="invalid x-api-key", model=MODEL, llm_provider="anthropic", response=_response(400)
    )
    exc.status_code = 401  # litellm keeps the provider's real status here
    error = map_exception(exc, model=MODEL)
    assert error.kind == "auth" and not error.retryable
    assert ERROR_TABLE["AuthenticationError"].sentence in str(error)


def test_bad_request_with_status_403_is_a_permission_error(exceptions: types.ModuleType) -> None:
    exc = exceptions.BadRequestError(
        message="forbidden", model=MODEL, llm_provider="openai", response=_response(400)
    )
    exc.status_code = 403
    assert map_exception(exc, model=MODEL).kind == "permission"


def test_retry_after_is_read_from_litellm_response_headers(exceptions: types.ModuleType) -> None:
    exc = _build(exceptions, "RateLimitError", "slow down", 429)
    exc.litellm_response_headers = httpx.Headers({"retry-after": "7"})  # type: ignore[attr-defined]
    assert map_exception(exc, model=MODEL).retry_after == 7.0


def test_retry_after_absent_or_garbage_is_none(exceptions: types.ModuleType) -> None:
    exc = _build(exceptions, "RateLimitError", "slow down", 429)
    assert map_exception(exc, model=MODEL).retry_after is None
    exc.litellm_response_headers = {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}  # type: ignore[attr-defined]
    assert map_exception(exc, model=MODEL).retry_after is None


@pytest.mark.parametrize(
    ("make", "retryable"),
    [
        (lambda: ConnectionRefusedError("refused"), True),
        (lambda: TimeoutError("slow"), True),
        (lambda: ValueError("weird"), False),
    ],
)
def test_exceptions_outside_litellm_get_a_rule_too(
    make: Callable[[], Exception], retryable: bool
) -> None:
    error = map_exception(make(), model=MODEL)
    assert error.retryable is retryable
    assert str(error).endswith(")")  # "<sentence> (model: detail)"


def test_litellm_prefixes_are_stripped_from_the_detail(exceptions: types.ModuleType) -> None:
    exc = _build(exceptions, "InternalServerError", "OpenAIException - upstream exploded", 500)
    error = map_exception(exc, model=MODEL)
    assert "upstream exploded" in str(error)
    assert "litellm.InternalServerError" not in str(error)


# ---- the status code is the truth when litellm falls back to a generic class -----------


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (401, False),
        (402, False),
        (403, False),
        (404, False),
        (500, True),
        (502, True),
        (529, True),
    ],
)
def test_generic_api_error_follows_its_status_code(
    exceptions: types.ModuleType, status: int, retryable: bool
) -> None:
    exc = exceptions.APIError(
        status_code=status, message="something", llm_provider="openai", model=MODEL
    )
    assert map_exception(exc, model=MODEL).retryable is retryable


def test_connection_error_hidden_under_internal_server_error(
    exceptions: types.ModuleType,
) -> None:
    import openai

    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    cause = openai.APIConnectionError(request=request)
    cause.__cause__ = httpx.ConnectError("[Errno 111] Connection refused", request=request)
    exc = _build(exceptions, "InternalServerError", "OpenAIException - Connection error.", 500)
    exc.__cause__ = cause
    error = map_exception(exc, model=MODEL)
    assert error.retryable
    assert error.kind == "connection"
    assert ERROR_TABLE["APIConnectionError"].sentence in str(error)
