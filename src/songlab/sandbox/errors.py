"""The error bodies of the spec, as one exception the app turns into a response.

Pipeline errors carry ``{"error", "message", "retryable"}``; the other errors
carry only ``{"error"}`` (403/404/401/400 MISSING_FIELD have no message).
"""

from __future__ import annotations

import json

from songlab.spec import OTHER_ERRORS, PIPELINE_ERRORS, ErrorCode


class ApiError(Exception):
    """An HTTP error answer: status code and JSON body."""

    def __init__(self, status: int, body: dict[str, object]) -> None:
        super().__init__(f"{status} {body.get('error')}: {body.get('message', '')}")
        self.status = status
        self.body = body
        self.headers: dict[str, str] | None = None

    def content(self) -> bytes:
        return json.dumps(self.body).encode()

    def with_headers(self, headers: dict[str, str]) -> ApiError:
        """A copy of this error with ``headers`` (module-level errors such as
        ``MISSING_FIELD`` are shared: they are never changed in place)."""
        copy = ApiError(self.status, self.body)
        copy.headers = dict(headers)
        return copy


def pipeline(code: ErrorCode, message: str) -> ApiError:
    """A pipeline error (create routes): status and retryable from the spec's table."""
    status, retryable = PIPELINE_ERRORS[code]
    return ApiError(status, {"error": code.value, "message": message, "retryable": retryable})


def invalid(field: str, rule: str) -> ApiError:
    """422 InvalidGenerationInput whose message names the field and the rule."""
    return pipeline(ErrorCode.INVALID_GENERATION_INPUT, f"{field}: {rule}")


def other(code: ErrorCode) -> ApiError:
    """A non-pipeline error: ``{"error": CODE}`` only."""
    return ApiError(OTHER_ERRORS[code], {"error": code.value})


class UnhandledPayloadError(TypeError):
    """``payload_json`` sent as a raw object: the spec's documented unhandled 500."""


# Not in the spec's tables: the sandbox's answers in the same ``{"error"}`` shape.
METHOD_NOT_ALLOWED_CODE = "METHOD_NOT_ALLOWED"  # 405, with an Allow header
INTERNAL_CODE = "InternalServerError"  # 500: the raw-object payload_json, as documented
RAW_PAYLOAD_MESSAGE = (
    "payload_json must be a string of JSON text, got a raw JSON value; "
    "the service fails this call with an unhandled error (documented)"
)


def method_not_allowed() -> ApiError:
    return ApiError(405, {"error": METHOD_NOT_ALLOWED_CODE})


def internal(message: str) -> ApiError:
    return ApiError(500, {"error": INTERNAL_CODE, "message": message})


UNAUTHENTICATED = other(ErrorCode.UNAUTHENTICATED)
INVALID_API_KEY = other(ErrorCode.INVALID_API_KEY)
FORBIDDEN = other(ErrorCode.FORBIDDEN)
NOT_FOUND = other(ErrorCode.NOT_FOUND)
MISSING_FIELD = other(ErrorCode.MISSING_FIELD)
RESOURCE_NOT_FOUND = other(ErrorCode.RESOURCE_NOT_FOUND)
