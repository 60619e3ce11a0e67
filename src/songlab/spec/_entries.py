"""The registry's entry types: a :class:`Field` and its rules, an :class:`Operation` (with its
:class:`Form`), a route's billed :class:`Step`, a :class:`Route`, a :class:`Compat`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "Compat",
    "FIELD_TYPES",
    "Field",
    "Form",
    "Operation",
    "Route",
    "Step",
]


# Field types: "string", "integer", "number", "boolean", "choice", "file" (a payload file
# input: {"url": ...}, a URL, {"base64": ...} or "file_id:<id>"), "file_id" (a body's id of
# an uploaded file of the caller), "voice" (a vocal_id: a saved voice of the caller),
# "tier" (a license tier name), "license" (a compat body's license: an integer 0-5 or a
# tier name).
FIELD_TYPES: Final[tuple[str, ...]] = (
    "string",
    "integer",
    "number",
    "boolean",
    "choice",
    "file",
    "file_id",
    "voice",
    "tier",
    "license",
)


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a payload or a route body and every rule of it.

    ``min``/``max`` are inclusive; ``max_len`` counts characters; ``formats`` and
    ``max_bytes`` bound a file (``size_label`` is how the spec writes the limit);
    ``clamp``: out of ``min``-``max`` (and not 0) is clamped at generation, not refused;
    ``late``: a wrong ``choices`` value fails during generation, not at create;
    ``input``: the name a ``file_id`` field's file has in the pipeline (``song``), or the
    payload field a compat body's field becomes (``audio_url`` -> ``song``);
    ``filled``: a string that, when given, must hold a non-space character (a required
    one must anyway).
    """

    name: str
    type: str
    required: bool = False
    default: Any = None
    min: float | None = None
    max: float | None = None
    max_len: int | None = None
    choices: tuple[Any, ...] = ()
    formats: tuple[str, ...] = ()
    max_bytes: int | None = None
    size_label: str | None = None
    clamp: bool = False
    late: bool = False
    input: str | None = None
    description: str = ""
    filled: bool = False

    def __post_init__(self) -> None:
        assert self.type in FIELD_TYPES, self.type


@dataclass(frozen=True, slots=True)
class Form:
    """What the widgets' generation form offers for an operation (prompt/lyrics/duration)."""

    prompt: bool  # the form asks for a prompt before it can send
    lyrics: str  # "required", "optional" or "none"
    duration: bool  # the form offers duration_seconds (its range: the field's)
    vocal_id: bool  # the form may send a saved voice


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the catalog (or an internal tool): its payload and what it costs.

    ``fields`` in the order the sandbox checks them; ``forbidden``: (field, rule)
    refused when present; ``voice``: a ``vocal_id`` is resolved to a saved voice;
    ``pricing_key``: its row in ``pricing``'s price list (None: billed otherwise);
    ``sim_seconds``: how long the sandbox's engine pretends it takes (at speed 1).
    """

    name: str
    title: str
    models: tuple[str, ...]
    fields: tuple[Field, ...]
    pricing_key: str | None
    sim_seconds: float
    internal: bool = False
    forbidden: tuple[tuple[str, str], ...] = ()
    voice: bool = False
    form: Form | None = None

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}")


@dataclass(frozen=True, slots=True)
class Step:
    """One billed step of a fixed pipeline: its name and the tool it runs."""

    name: str
    operation: str
    model: str


@dataclass(frozen=True, slots=True)
class Route:
    """A dedicated or workflow route (path after ``/v1/``): body fields, steps, vocal rule.

    ``vocal``: ``"required"``, ``"optional"`` or None (no ``vocal_id`` field).
    ``forbidden``: (field, rule) refused when present.
    ``origin``: ``"spec"`` (a route of the vendor's spec) or ``"sandbox"`` (a product of the
    sandbox's own, absent from the spec: served in the default and noisy profiles, 404 in
    the spec profile, which shows only what the spec shows).
    """

    path: str
    kind: str  # "dedicated" or "workflow"
    fields: tuple[Field, ...]
    steps: tuple[Step, ...] = ()
    vocal: str | None = None
    forbidden: tuple[tuple[str, str], ...] = ()
    origin: str = "spec"

    def __post_init__(self) -> None:
        assert self.origin in ("spec", "sandbox"), self.origin

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"/v1/{self.path} has no field {name!r}")


@dataclass(frozen=True, slots=True)
class Compat:
    """The compat routes of one operation: old-style URLs and field names, tool resolved.

    ``paths``: the URLs (``{v}``: each of ``versions``, the model; a path without it runs
    ``versions[0]``); ``fields``: the body's fields in the order they are checked, each
    its operation's field under the body's name (``input``: the payload's name) plus the
    compat body's own rules (a 5000-character prompt), or the body's ``license`` (0-5 or
    a tier name); ``missing_field``: absent or empty -> 400 MISSING_FIELD, before any
    other rule; ``title``/``doc``: the body's schema. The body is the route's only rule
    pass: its payload (renamed, ``license`` left out) only has its files and voice resolved.
    """

    operation: str
    title: str
    doc: str
    paths: tuple[str, ...]
    versions: tuple[str, ...]
    fields: tuple[Field, ...]
    missing_field: str | None = None

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.title} has no field {name!r}")

    @property
    def renames(self) -> tuple[tuple[str, str], ...]:
        """(body field, payload field) of the fields the payload names otherwise."""
        return tuple((f.name, f.input) for f in self.fields if f.input)
