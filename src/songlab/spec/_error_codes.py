"""The spec's error codes: the pipeline errors (status, retryable) and the other errors (status)."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = [
    "ErrorCode",
    "OTHER_ERRORS",
    "PIPELINE_ERRORS",
    "RETRYABLE_CODES",
]


class ErrorCode(StrEnum):
    # pipeline errors (body: error, message, retryable)
    UNKNOWN_TOOL = "UnknownTool"
    INSUFFICIENT_FUNDS = "InsufficientFunds"
    TOOL_NOT_PRICED = "ToolNotPriced"
    INVALID_GENERATION_INPUT = "InvalidGenerationInput"
    RATE_LIMITED = "RateLimited"
    DEPENDENCY_UNAVAILABLE = "DependencyUnavailable"
    # other errors (no retryable field)
    UNAUTHENTICATED = "UNAUTHENTICATED"
    INVALID_API_KEY = "INVALID_API_KEY"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    MISSING_FIELD = "MISSING_FIELD"
    RESOURCE_NOT_FOUND = "ResourceNotFound"


PIPELINE_ERRORS: Final[dict[ErrorCode, tuple[int, bool]]] = {
    ErrorCode.UNKNOWN_TOOL: (400, False),
    ErrorCode.INSUFFICIENT_FUNDS: (402, False),
    ErrorCode.TOOL_NOT_PRICED: (422, False),
    ErrorCode.INVALID_GENERATION_INPUT: (422, False),
    ErrorCode.RATE_LIMITED: (429, True),
    ErrorCode.DEPENDENCY_UNAVAILABLE: (503, True),
}
OTHER_ERRORS: Final[dict[ErrorCode, int]] = {
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.INVALID_API_KEY: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.MISSING_FIELD: 400,
    ErrorCode.RESOURCE_NOT_FOUND: 404,
}
RETRYABLE_CODES: Final[frozenset[str]] = frozenset(
    c.value for c, (_, r) in PIPELINE_ERRORS.items() if r
)
