"""The error bodies of the spec, as one exception the app turns into a response.

Pipeline errors carry ``{"error", "message", "retryable"}``; the other errors
carry only ``{"error"}`` (403/404/401/400 MISSING_FIELD have no message).
"""

from __future__ import annotations

import json

from songlab._vocab import OTHER_ERRORS, PIPELINE_ERRORS, ErrorCode


class ApiError(Exception):
    """An HTTP error answer: status code and JSON body."""

    def __init__(self, status: int, body: dict[str, object]) -> None:
        super().__init__(f"{status} {body.get('error')}: {body.get('message', '')}")
        self.status = status
        self.body = body

    def content(self) -> bytes:
        return json.dumps(self.body).encode()


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
    """``payload_json`` sent as a raw object: answered as a plain, unhandled 500."""


UNAUTHENTICATED = other(ErrorCode.UNAUTHENTICATED)
INVALID_API_KEY = other(ErrorCode.INVALID_API_KEY)
FORBIDDEN = other(ErrorCode.FORBIDDEN)
NOT_FOUND = other(ErrorCode.NOT_FOUND)
MISSING_FIELD = other(ErrorCode.MISSING_FIELD)
RESOURCE_NOT_FOUND = other(ErrorCode.RESOURCE_NOT_FOUND)
