"""songlab's HTTP client for the Enterprise Audio Generation API (sync and async).

``Client`` and ``AsyncClient`` have the same surface: ``generations``, ``tools``,
``files``, ``account``, ``voice_clones``, ``song_translations``, ``workflows``,
``compat``, ``agent``, plus ``task(id)``, ``watch(task, callback)``, ``estimate(...)``,
``batch(requests)``, ``budget(usd=...)`` and ``on_create(callback)``. It returns typed
results and shows nothing: a batch tells its progress to a callback (``songlab.widgets.batch``
draws it and makes the frame). The create hook (:func:`on_create`, a
:class:`CreateRecord` per accepted create) and the local labels (:func:`label_scope`,
:func:`set_default_labels`) are how the ledger hears of creates.
See ``docs/client.md``. The exception tree is drawn in ``songlab.client._exceptions``.
"""

from __future__ import annotations

from songlab.client._async import AsyncClient
from songlab.client._attribution import Labels, make_labels
from songlab.client._attribution import add_listener as on_create
from songlab.client._attribution import client_defaults as default_labels
from songlab.client._attribution import scoped_labels as label_scope
from songlab.client._attribution import set_client_defaults as set_default_labels
from songlab.client._base import watch
from songlab.client._batch import BatchArgs, BatchProgress, BatchResult, BatchRow
from songlab.client._budget import Budget
from songlab.client._call import NOT_GIVEN, NotGiven
from songlab.client._cost_estimate import Estimate
from songlab.client._create_record import CreateRecord
from songlab.client._create_record import record_schema as _record_schema
from songlab.client._exceptions import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    BudgetExceeded,
    CreateUnconfirmed,
    DependencyUnavailable,
    Forbidden,
    InsufficientFunds,
    InvalidApiKey,
    InvalidGenerationInput,
    MalformedResponse,
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
from songlab.client._handle import TaskHandle
from songlab.client._loop import WatchUpdate
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
    RawPage,
    Task,
    TaskOutput,
    Tool,
    UploadedFile,
    VoiceClone,
)
from songlab.client._record_store import RecordStore
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
    "BatchArgs",
    "BatchProgress",
    "BatchResult",
    "BatchRow",
    "Budget",
    "BudgetExceeded",
    "ClampWarning",
    "Client",
    "CreateRecord",
    "CreateUnconfirmed",
    "DependencyUnavailable",
    "Estimate",
    "Event",
    "Failure",
    "FileLink",
    "Forbidden",
    "InsufficientFunds",
    "InvalidApiKey",
    "InvalidGenerationInput",
    "Labels",
    "MalformedResponse",
    "MissingField",
    "NOT_GIVEN",
    "NotFound",
    "NotGiven",
    "Page",
    "PipelineError",
    "RECORD_SCHEMA",  # made on first use (module __getattr__)
    "RateLimited",
    "RawPage",
    "RecordStore",
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
    "WatchUpdate",
    "default_labels",
    "error_from_response",
    "label_scope",
    "make_labels",
    "on_create",
    "set_default_labels",
    "watch",
]


def __getattr__(name: str) -> object:
    if name == "RECORD_SCHEMA":  # a pyarrow schema, made on first use
        return _record_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "RECORD_SCHEMA"})
