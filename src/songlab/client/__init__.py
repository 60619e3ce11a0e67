"""songlab's HTTP client for the Enterprise Audio Generation API (sync and async).

``Client`` and ``AsyncClient`` have the same surface: ``generations``, ``tools``,
``files``, ``account``, ``voice_clones``, ``song_translations``, ``workflows``,
``compat``, ``agent``, plus ``task(id)``, ``estimate(...)`` and ``budget(usd=...)``.
See ``docs/client.md``. The exception tree is drawn in ``songlab.client._errors``.
"""

from __future__ import annotations

from songlab.client._async import AsyncClient
from songlab.client._base import NOT_GIVEN, NotGiven
from songlab.client._budget import Budget
from songlab.client._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    BudgetExceeded,
    DependencyUnavailable,
    Forbidden,
    InsufficientFunds,
    InvalidApiKey,
    InvalidGenerationInput,
    MissingField,
    NotFound,
    PipelineError,
    RateLimited,
    ResourceNotFound,
    SonglabError,
    StreamError,
    TaskFailed,
    ToolLookupError,
    ToolNotPriced,
    Unauthenticated,
    UnexpectedResponse,
    UnknownTool,
    ValidationError,
    WaitTimeout,
    error_from_response,
)
from songlab.client._estimate import Estimate
from songlab.client._handle import TaskHandle
from songlab.client._models import (
    AgentRun,
    AgentStep,
    AgentTrace,
    AgentUsage,
    Asset,
    AudioArray,
    Balance,
    Event,
    Failure,
    FileLink,
    Page,
    Task,
    TaskOutput,
    Tool,
    UploadedFile,
    VoiceClone,
)
from songlab.client._retry import RetryPolicy
from songlab.client._sync import Client
from songlab.client._validate import ClampWarning

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AgentRun",
    "AgentStep",
    "AgentTrace",
    "AgentUsage",
    "Asset",
    "AsyncClient",
    "AudioArray",
    "Balance",
    "Budget",
    "BudgetExceeded",
    "ClampWarning",
    "Client",
    "DependencyUnavailable",
    "Estimate",
    "Event",
    "Failure",
    "FileLink",
    "Forbidden",
    "InsufficientFunds",
    "InvalidApiKey",
    "InvalidGenerationInput",
    "MissingField",
    "NOT_GIVEN",
    "NotFound",
    "NotGiven",
    "Page",
    "PipelineError",
    "RateLimited",
    "ResourceNotFound",
    "RetryPolicy",
    "SonglabError",
    "StreamError",
    "Task",
    "TaskFailed",
    "TaskHandle",
    "TaskOutput",
    "Tool",
    "ToolLookupError",
    "ToolNotPriced",
    "Unauthenticated",
    "UnexpectedResponse",
    "UnknownTool",
    "UploadedFile",
    "ValidationError",
    "VoiceClone",
    "WaitTimeout",
    "error_from_response",
]
