"""The exception tree of the client, and the one table from a response to a class.

::

    SonglabError
     ├── ValidationError (also ValueError)    client-side, raised before any request
     ├── BudgetExceeded                        client-side budget guard, before sending
     ├── ToolLookupError (also LookupError)    no tool with that operation/model/tier
     ├── WaitTimeout (also TimeoutError)       wait() deadline passed; carries task_id
     ├── TaskFailed                            wait() saw the task end in `failed`
     ├── StreamError                           a stream could not be resumed
     ├── MalformedResponse                     a 2xx or an SSE frame the client cannot read
     ├── APIConnectionError                    transport failed (after retries)
     │    ├── APITimeoutError
     │    └── CreateUnconfirmed                create deadline spent, outcome unknown; .idempotency_key
     └── APIError                              the service answered with an error body
          ├── PipelineError                    body has error, message, retryable
          │    ├── UnknownTool                 400
          │    ├── InsufficientFunds           402
          │    ├── ToolNotPriced               422
          │    ├── InvalidGenerationInput      422
          │    ├── RateLimited                 429  retryable
          │    └── DependencyUnavailable       503  retryable
          ├── Unauthenticated                  401 UNAUTHENTICATED
          ├── InvalidApiKey                    401 INVALID_API_KEY
          ├── Forbidden                        403 FORBIDDEN
          ├── NotFound                         404 NOT_FOUND
          ├── MissingField                     400 MISSING_FIELD
          ├── ResourceNotFound                 404 ResourceNotFound (JSON or XML body)
          └── UnexpectedResponse               anything else (no known `error` code)

Classes are chosen by the body's ``error`` code, never by the HTTP status: two
statuses are shared by several codes (422, 404). :func:`error_from_response` is
the table. No exception keeps the request or its headers, so the API key can
never reach a message, a repr or a traceback.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ClassVar

from songlab.spec import ErrorCode

if TYPE_CHECKING:
    from songlab.client._models import Task

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "BudgetExceeded",
    "CreateUnconfirmed",
    "DependencyUnavailable",
    "Forbidden",
    "InsufficientFunds",
    "InvalidApiKey",
    "InvalidGenerationInput",
    "MalformedResponse",
    "MissingField",
    "NotFound",
    "PipelineError",
    "RateLimited",
    "ResourceNotFound",
    "SonglabError",
    "StreamError",
    "TaskFailed",
    "ToolLookupError",
    "ToolNotPriced",
    "Unauthenticated",
    "UnexpectedResponse",
    "UnknownTool",
    "ValidationError",
    "WaitTimeout",
    "error_from_response",
]


class SonglabError(Exception):
    """Base of every error raised by songlab's client."""


class ValidationError(SonglabError, ValueError):
    """A request argument breaks a rule of the spec; raised before anything is sent."""

    def __init__(self, field: str, rule: str) -> None:
        self.field = field
        self.rule = rule
        super().__init__(f"{field}: {rule}")


class BudgetExceeded(SonglabError):
    """A create would exceed the active ``client.budget(...)``; nothing was sent."""

    def __init__(
        self,
        message: str,
        *,
        estimate_usd: Decimal | None = None,
        remaining_usd: Decimal | None = None,
    ):
        self.estimate_usd = estimate_usd
        self.remaining_usd = remaining_usd
        super().__init__(message)


class ToolLookupError(SonglabError, LookupError):
    """No tool in ``GET /v1/tools`` matches the operation/model (or Agent One tier)."""


class WaitTimeout(SonglabError, TimeoutError):
    """``wait()`` reached its deadline; the task goes on: ``client.task(e.task_id)``."""

    def __init__(self, task_id: str, deadline_s: float, last_status: str | None = None):
        self.task_id = task_id
        self.deadline_s = deadline_s
        self.last_status = last_status
        super().__init__(
            f"task {task_id} not finished after {deadline_s:g}s (last status: "
            f"{last_status or 'unknown'}); pick it up again with client.task({task_id!r})"
        )


class TaskFailed(SonglabError):
    """``wait()`` saw the task end ``failed``; ``.task`` is the final snapshot."""

    def __init__(self, task: Task):
        self.task = task
        self.task_id = task.task_id
        failure = task.failure
        detail = f"{failure.error}: {failure.message}" if failure else "no failure detail"
        super().__init__(f"task {task.task_id} failed ({detail})")


class StreamError(SonglabError):
    """A task's event stream broke and could not be resumed."""

    def __init__(self, task_id: str, message: str, last_seq: int = 0):
        self.task_id = task_id
        self.last_seq = last_seq
        super().__init__(f"stream of task {task_id} (after seq {last_seq}): {message}")


class MalformedResponse(SonglabError):
    """The service answered 2xx (or sent a stream frame) that the client cannot read: a body
    that is not JSON, a frame whose ``data`` or ``id`` is malformed, a field missing."""

    def __init__(
        self, message: str, *, method: str = "", path: str = "", status_code: int | None = None
    ) -> None:
        self.method = method
        self.path = path
        self.status_code = status_code
        where = f"{method} {path}" + (f" [{status_code}]" if status_code else "")
        super().__init__(f"{where}: {message}" if method else message)


class APIConnectionError(SonglabError):
    """The request did not get an answer (connect, read or write failed)."""

    code: ClassVar[str] = "connection"
    retryable: ClassVar[bool] = True
    idempotency_key: str | None = None  # set on errors of a create

    def __init__(self, message: str, *, method: str = "", path: str = ""):
        self.method = method
        self.path = path
        super().__init__(f"{method} {path}: {message}" if method else message)


class APITimeoutError(APIConnectionError):
    code: ClassVar[str] = "timeout"


class CreateUnconfirmed(APIConnectionError):
    """A create was retried under its Idempotency-Key until the create deadline and no
    attempt got a definite answer: it may or may not have been accepted. Sending it again
    with ``idempotency_key=e.idempotency_key`` returns the same task, never a second bill."""

    code: ClassVar[str] = "create_unconfirmed"

    def __init__(
        self, message: str, *, method: str, path: str, idempotency_key: str, attempts: int
    ) -> None:
        self.attempts = attempts
        super().__init__(
            f"no definite answer after {attempts} attempt(s) within the create deadline "
            f"(last: {message}); the task may exist. Send the same create again with "
            f"idempotency_key={idempotency_key!r} to get it without paying twice "
            f"(or raise RetryPolicy(create_deadline_s=...))",
            method=method,
            path=path,
        )
        self.idempotency_key = idempotency_key


class APIError(SonglabError):
    """The service answered with an error body. Branch on ``.code``, not on the status."""

    code: str | None = None  # the class's code; UnexpectedResponse keeps the body's own
    idempotency_key: str | None = None  # set on errors of a create
    retry_after_s: float | None = None  # what a Retry-After header asked for

    def __init__(
        self,
        message: str | None,
        *,
        status_code: int,
        retryable: bool = False,
        body: Any = None,
        code: str | None = None,
        method: str = "",
        path: str = "",
    ) -> None:
        if code is not None:
            self.code = code  # only UnexpectedResponse is built with an explicit code
        self.message = message
        self.status_code = status_code
        self.retryable = retryable
        self.body = body
        self.method = method
        self.path = path
        where = f" ({method} {path})" if method else ""
        text = f"{self.code or 'HTTP'} [{status_code}]{where}"
        super().__init__(f"{text}: {message}" if message else text)


class PipelineError(APIError):
    """Errors of creating a generation: the body carries ``retryable``."""


class UnknownTool(PipelineError):
    """Unknown or inactive tool_id, or a tool reserved for Agent One."""

    code = ErrorCode.UNKNOWN_TOOL.value


class InsufficientFunds(PipelineError):
    """The token reservation failed; the message names the shortfall."""

    code = ErrorCode.INSUFFICIENT_FUNDS.value


class ToolNotPriced(PipelineError):
    """The tool has no price for that license tier (or is unpriced)."""

    code = ErrorCode.TOOL_NOT_PRICED.value


class InvalidGenerationInput(PipelineError):
    """The payload failed validation; the message names the field."""

    code = ErrorCode.INVALID_GENERATION_INPUT.value


class RateLimited(PipelineError):
    """Per-tool or per-model rate limit; safe to retry with the same key."""

    code = ErrorCode.RATE_LIMITED.value


class DependencyUnavailable(PipelineError):
    """An internal dependency is down; safe to retry with the same key."""

    code = ErrorCode.DEPENDENCY_UNAVAILABLE.value


class Unauthenticated(APIError):
    """Missing or non-Bearer Authorization header."""

    code = ErrorCode.UNAUTHENTICATED.value


class InvalidApiKey(APIError):
    """The API key is invalid or revoked."""

    code = ErrorCode.INVALID_API_KEY.value


class Forbidden(APIError):
    """The task belongs to another account."""

    code = ErrorCode.FORBIDDEN.value


class NotFound(APIError):
    """No task with that id."""

    code = ErrorCode.NOT_FOUND.value


class MissingField(APIError):
    """A compat extend call without ``audio_url``."""

    code = ErrorCode.MISSING_FIELD.value


class ResourceNotFound(APIError):
    """File absent or not the account's, or a raw storage locator."""

    code = ErrorCode.RESOURCE_NOT_FOUND.value


class UnexpectedResponse(APIError):
    """An error status without a known ``error`` code (for example the documented 500
    of a raw-object ``payload_json``, or a proxy's HTML page)."""


ERROR_CLASSES: dict[str, type[APIError]] = {
    cls.code: cls
    for cls in (
        UnknownTool,
        InsufficientFunds,
        ToolNotPriced,
        InvalidGenerationInput,
        RateLimited,
        DependencyUnavailable,
        Unauthenticated,
        InvalidApiKey,
        Forbidden,
        NotFound,
        MissingField,
        ResourceNotFound,
    )
}
assert set(ERROR_CLASSES) == {c.value for c in ErrorCode}

_XML_CODE = re.compile(rb"<Code>\s*([A-Za-z]+)\s*</Code>")


def _decode_body(content: bytes) -> tuple[object, str | None]:
    """The body as JSON if it is JSON; else the code of an XML error body, if any."""
    try:
        return json.loads(content), None
    except ValueError:
        m = _XML_CODE.search(content[:4096])
        return content[:1000].decode("utf-8", "replace"), (m.group(1).decode() if m else None)


def error_from_response(
    status_code: int, content: bytes, *, method: str = "", path: str = ""
) -> APIError:
    """The table: an error response -> the exception for its ``error`` code.

    ``retryable`` comes from the body when the body has it (pipeline errors);
    the other codes have none and are never retried.
    """
    body, xml_code = _decode_body(content)
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        code: str | None = body["error"]
        message = body.get("message")
        retryable = body.get("retryable") is True
    else:
        code, message, retryable = xml_code, None, False
        if xml_code is None:
            message = body if isinstance(body, str) and body else None
    cls = ERROR_CLASSES.get(code or "")
    if cls is None:
        return UnexpectedResponse(
            message if message is not None else (f"unknown error code {code!r}" if code else None),
            status_code=status_code,
            body=body,
            code=code,
            method=method,
            path=path,
        )
    return cls(
        message if isinstance(message, str) else None,
        status_code=status_code,
        retryable=retryable,
        body=body,
        method=method,
        path=path,
    )
