"""The spec registry: every rule of the spec the code relies on, in one leaf package.

It imports nothing of songlab outside itself, and everything is taken from here
(``from songlab.spec import REGISTRY``); the modules below are its parts, by job:

- ``_vocabulary``: task statuses, event and ledger kinds, the models of each family,
  audio formats, effects, extend sides, Agent One's studio fields;
- ``_error_codes``: the error codes, pipeline (status, retryable) and other (status);
- ``_licenses``: the license tiers and the one license parser (:func:`parse_license`);
- ``_limits``: the limits table (``LIMITS``), the idempotency-key pattern, Agent One's
  rate limits;
- ``_entries``: the entry types, :class:`Field` (a payload or body field and its rules),
  :class:`Operation` and its :class:`Form`, :class:`Step`, :class:`Route`, :class:`Compat`;
- ``_operations``: each operation of the catalog and each internal tool (``REGISTRY``);
- ``_routes``: the dedicated and workflow routes (``ROUTES``, ``WORKFLOWS``);
- ``_compat_routes``: the compat routes (``COMPAT``, ``COMPAT_ROUTES``).

The names are the spec's and ``shared/design.md``'s. The sandbox's bodies and payload
rules, its OpenAPI document and catalog, the price list's pipelines, the client's
validation and the widgets' gates are derived from it.
"""

from __future__ import annotations

from songlab.spec._compat_routes import (
    COMPAT,
    COMPAT_ROUTES,
)
from songlab.spec._entries import (
    FIELD_TYPES,
    Compat,
    Field,
    Form,
    Operation,
    Route,
    Step,
)
from songlab.spec._error_codes import (
    OTHER_ERRORS,
    PIPELINE_ERRORS,
    RETRYABLE_CODES,
    ErrorCode,
)
from songlab.spec._licenses import (
    DEFAULT_LICENSE,
    LICENSE_BY_NAME,
    LICENSE_NAMES,
    LICENSE_NAMES_WITH_UNSET,
    License,
    LicenseError,
    effective_license,
    parse_license,
)
from songlab.spec._limits import (
    AGENT_RATE_LIMITS,
    IDEMPOTENCY_KEY_PATTERN,
    LIMITS,
    MIB,
)
from songlab.spec._operations import (
    INTERNAL_OPERATIONS,
    OPERATIONS,
    REGISTRY,
    operation,
)
from songlab.spec._routes import (
    ROUTES,
    TRANSLATION_STEPS,
    WORKFLOW_ROUTES,
    WORKFLOWS,
    route,
)
from songlab.spec._vocabulary import (
    AGENT_TIERS,
    AUDIO_EFFECTS,
    AUDIO_FORMATS,
    EXTEND_SIDES,
    MIDI,
    MP3_M4A,
    SONG_VERSIONS,
    STEM_MODELS,
    STEMS,
    STUDIO_FIELDS,
    TRANSCRIBE_MODEL,
    EventKind,
    LedgerKind,
    Status,
)

__all__ = [
    "AGENT_RATE_LIMITS",
    "AGENT_TIERS",
    "AUDIO_EFFECTS",
    "AUDIO_FORMATS",
    "COMPAT",
    "COMPAT_ROUTES",
    "Compat",
    "DEFAULT_LICENSE",
    "EXTEND_SIDES",
    "ErrorCode",
    "EventKind",
    "FIELD_TYPES",
    "Field",
    "Form",
    "IDEMPOTENCY_KEY_PATTERN",
    "INTERNAL_OPERATIONS",
    "LICENSE_BY_NAME",
    "LICENSE_NAMES",
    "LICENSE_NAMES_WITH_UNSET",
    "LIMITS",
    "LedgerKind",
    "License",
    "LicenseError",
    "MIB",
    "MIDI",
    "MP3_M4A",
    "OPERATIONS",
    "OTHER_ERRORS",
    "Operation",
    "PIPELINE_ERRORS",
    "REGISTRY",
    "RETRYABLE_CODES",
    "ROUTES",
    "Route",
    "SONG_VERSIONS",
    "STEMS",
    "STEM_MODELS",
    "STUDIO_FIELDS",
    "Status",
    "Step",
    "TRANSCRIBE_MODEL",
    "TRANSLATION_STEPS",
    "WORKFLOWS",
    "WORKFLOW_ROUTES",
    "effective_license",
    "operation",
    "parse_license",
    "route",
]
