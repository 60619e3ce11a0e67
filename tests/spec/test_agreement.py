"""The sandbox, the client and the OpenAPI document agree on every field rule of the registry.

Every rule is derived from ``songlab.spec`` (the limits table as the operations' payload
fields use it, the payload tables, the dedicated and workflow bodies): one case per
rule, named ``<operation or route>.<field>.<bound>``. Each case sends the boundary
values: the bound itself is accepted (201) by the sandbox over HTTP and by the client,
the value just past it (or max_len + 1 characters, a wrong choice, a file of a kind the
field does not take, a missing required field, a forbidden field) is refused by the
sandbox (422 naming the field, nothing billed) and by the client before any request;
and ``/openapi.json`` states the same bound (minimum / maximum / maxLength / enum /
required / file kinds / x-max-bytes).

File sizes (``max_bytes`` of every file and file_id field, one case per field): a file of
exactly ``max_bytes`` (an MP3 behind an ID3v2 tag of zero padding, or a MIDI file followed
by zeros: a file the probe accepts as the field's kind) is accepted by all, one of
``max_bytes + 1`` refused by all (the client knows the size of what it uploaded). Where
``max_bytes`` is the upload limit itself (64 MiB), no larger file can be uploaded: those
cases (``<...>.max_bytes_via_upload``) check that POST /v1/files and the client's upload
refuse it (the same request for every field: sent once per kind, then reused) and that the
document states both limits. Each account uploads each size once, the first time a case
needs it.

One sandbox for the module, with ``fail_tasks`` at 1 once its saved voice exists:
accepted creates reserve, fail at once and are released, so nothing is rendered.
Before each accepted create the sandbox clock moves a day on, so that the rate-limit
windows never fill (the accounts hold extra tokens, which do not expire).

Left out, and why: the native ``vocal_clone`` payload (the client refuses every native
voice clone on purpose: clones go through POST /v1/voice-clones, tested here) and the
internal tools (not callable).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from songlab.client import ClampWarning, Client, ValidationError
from songlab.sandbox.catalog import tool_id
from songlab.sandbox.http.server import serve_in_thread
from songlab.spec import LIMITS, REGISTRY, ROUTES, Field
from tests.sandbox._util import m4a_tone, midi_file, tone

ADMIN = "agreement-admin-token"
TOKENS = 10**8  # extra tokens: they survive the clock moving on
KIND_OF_FILE = {"mp3": "clip.mp3", "m4a": "clip.m4a", "wav": "clip.wav", "mid": "clip.mid"}
MS = 1000  # the inpainting end used by the bases (inside the 2 s test song)
UPLOAD_BYTES = int(LIMITS["upload_bytes"])  # POST /v1/files refuses a larger file
SIZED_KINDS = ("mp3", "mid")  # the kinds sized_file builds at any size


# --- the cases, from the registry ------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    kind: str  # "native" or "route"
    target: str  # operation or route path
    field: str
    bound: str  # min, max, max_len, required, enum, kinds, forbidden, clamp, late,
    # max_bytes, max_bytes_via_upload
    good: tuple[Any, ...] = ()  # accepted by all
    bad: tuple[Any, ...] = ()  # refused by all
    rule: Field | None = None


MISSING = object()


def _wrong_kind(formats: tuple[str, ...]) -> str:
    return next(k for k in ("wav", "mid", "mp3") if k not in formats)


def _sized(formats: tuple[str, ...], size: int) -> str:
    """A file of the field's first kind that :func:`sized_file` builds, of exactly ``size`` bytes."""
    return f"<file:{next(k for k in formats if k in SIZED_KINDS)}:{size}>"


def _cases_of(
    kind: str, target: str, fields: tuple[Field, ...], forbidden: tuple[tuple[str, str], ...]
) -> Iterator[Case]:
    def case(f: Field, bound: str, good: tuple[Any, ...] = (), bad: tuple[Any, ...] = ()) -> Case:
        return Case(f"{target}.{f.name}.{bound}", kind, target, f.name, bound, good, bad, f)

    for f in fields:
        if f.required:
            blank = ("   ",) if f.type == "string" else ()
            yield case(f, "required", bad=(MISSING, *blank))
        if f.type in ("integer", "number") and f.clamp:
            yield case(f, "clamp", good=(int(f.max or 0) + 1, int(f.min or 0) - 1))
            continue
        step = 1 if f.type == "integer" else 0.001
        cross = f.name in ("start_ms", "end_ms")  # end > start, inside the song: see _good
        if f.type in ("integer", "number") and f.min is not None:
            yield case(
                f,
                "min",
                good=() if cross and f.name == "end_ms" else (_n(f, f.min),),
                bad=(_n(f, f.min - step),),
            )
        if f.type in ("integer", "number") and f.max is not None:
            yield case(f, "max", good=() if cross else (_n(f, f.max),), bad=(_n(f, f.max + step),))
        if f.max_len is not None and f.type in ("string", "voice"):
            # a vocal_id that long names no saved voice: only its refusal is a body rule
            good = () if f.type == "voice" else ("x" * f.max_len,)
            yield case(f, "max_len", good=good, bad=("x" * (f.max_len + 1),))
        if f.type in ("choice", "tier") or (f.type == "boolean" and f.choices):
            wrong = False if f.type == "boolean" else "nope"
            yield case(
                f,
                "late" if f.late else "enum",
                good=tuple(dict.fromkeys((f.choices[0], f.choices[-1]))),
                bad=(wrong,),
            )
        if f.type in ("file", "file_id"):
            yield case(
                f,
                "kinds",
                good=(f"<file:{f.formats[0]}>",),
                bad=(f"<file:{_wrong_kind(f.formats)}>",),
            )
        if f.type in ("file", "file_id") and f.max_bytes:
            assert f.max_bytes <= UPLOAD_BYTES, f  # else no file of max_bytes could be uploaded
            if f.max_bytes < UPLOAD_BYTES:
                yield case(
                    f,
                    "max_bytes",
                    good=(_sized(f.formats, f.max_bytes),),
                    bad=(_sized(f.formats, f.max_bytes + 1),),
                )
            else:  # a file of max_bytes + 1 cannot be uploaded: the upload route's refusal
                yield case(
                    f,
                    "max_bytes_via_upload",
                    good=(_sized(f.formats, f.max_bytes),),
                    bad=(_sized(f.formats, f.max_bytes + 1),),
                )
    for name, rule in forbidden:
        f = Field(name, "string", description=rule)
        yield Case(f"{target}.{name}.forbidden", kind, target, name, "forbidden", (), ("la",), f)


def _n(f: Field, value: float) -> Any:
    return int(value) if f.type == "integer" else float(value)


CASES: list[Case] = []
for _op in REGISTRY.values():
    if not _op.internal and _op.name != "vocal_clone":
        CASES += _cases_of("native", _op.name, _op.fields, _op.forbidden)
for _r in ROUTES.values():
    CASES += _cases_of("route", _r.path, _r.fields, _r.forbidden)


def _base_value(f: Field) -> Any:
    if f.type in ("file", "file_id"):
        return f"<file:{f.formats[0]}>"
    if f.type == "voice":
        return "<voice>"
    if f.type in ("choice", "tier") or (f.type == "boolean" and f.choices):
        return f.choices[0]
    if f.type == "integer":
        return {"start_ms": 0, "end_ms": MS}.get(f.name, int(f.min or 0))
    return "la" if f.name == "lyrics" else "p"


def _base(case: Case) -> dict[str, Any]:
    fields = REGISTRY[case.target].fields if case.kind == "native" else ROUTES[case.target].fields
    return {f.name: _base_value(f) for f in fields if f.required}


# --- files of an exact size, valid audio of their kind --------------------------------


def _syncsafe(n: int) -> bytes:
    return bytes((n >> shift) & 0x7F for shift in (21, 14, 7, 0))


def sized_file(kind: str, size: int) -> bytes:
    """Bytes of ``kind`` that the probe accepts, exactly ``size`` long: the 2 s test MP3
    behind an ID3v2 tag of zero padding (decoders skip the tag), or the test MIDI file
    followed by zeros (readers stop after its last track)."""
    if kind == "mp3":
        core = tone(2.0)
        pad = size - len(core) - 10
        return b"ID3\x03\x00\x00" + _syncsafe(pad) + bytes(pad) + core
    assert kind == "mid", kind
    core = midi_file()
    return core + bytes(size - len(core))


def _size_of(value: str) -> tuple[str, int]:
    """``<file:kind:size>`` -> (kind, size)."""
    kind, size = value[6:-1].split(":")
    return kind, int(size)


# --- the world: one sandbox, two accounts, their files, a saved voice -------------------


class Recorder(httpx.BaseTransport):
    """The real transport, remembering every request the client sends."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()

    def posts(self) -> list[str]:
        return [r.url.path for r in self.sent if r.method == "POST"]


@dataclass
class Account:
    api_key: str
    account_id: str
    http: httpx.Client
    client: Client
    recorder: Recorder
    files: dict[str, str] = field(default_factory=dict)  # kind -> file id
    voice: str = "voice-of-nobody"
    sized: dict[tuple[str, int], str] = field(default_factory=dict)  # (kind, size) -> file id

    def sized_file_id(self, kind: str, size: int) -> str:
        """This account's file of ``kind`` and exactly ``size`` bytes, uploaded by its client
        (so the client knows its size) the first time a case needs it."""
        if (kind, size) not in self.sized:
            up = self.client.files.upload(sized_file(kind, size), filename=KIND_OF_FILE[kind])
            assert up.size_bytes == size, up
            self.sized[kind, size] = up.file_id
        return self.sized[kind, size]


@dataclass
class World:
    admin: httpx.Client
    accept: Account
    refuse: Account
    doc: dict[str, Any]
    refused_uploads: set[tuple[str, int]] = field(default_factory=set)  # (kind, size) seen refused


def _account(base_url: str, admin: httpx.Client) -> Account:
    r = admin.post("/_sandbox/accounts", json={"balance_tokens": 0, "extra_tokens": TOKENS})
    assert r.status_code == 201, r.text
    body = r.json()
    rec = Recorder()
    client = Client(
        body["api_key"],
        base_url=base_url,
        transport=rec,
        reuse=False,
        record=False,
        cache=False,
        quiet=True,
    )
    http = httpx.Client(
        base_url=base_url, headers={"Authorization": f"Bearer {body['api_key']}"}, timeout=30.0
    )
    acct = Account(body["api_key"], body["account_id"], http, client, rec)
    data = {"mp3": tone(2.0), "m4a": m4a_tone(2.0), "wav": tone(2.0, fmt="WAV"), "mid": midi_file()}
    for kind, blob in data.items():
        acct.files[kind] = client.files.upload(blob, filename=KIND_OF_FILE[kind]).file_id
    return acct


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    srv = serve_in_thread(db=":memory:", speed=1000, admin_token=ADMIN, workers=2)
    admin = httpx.Client(
        base_url=srv.base_url, headers={"X-Sandbox-Admin-Token": ADMIN}, timeout=30.0
    )
    try:
        accept, refuse = _account(srv.base_url, admin), _account(srv.base_url, admin)
        clone = accept.client.voice_clones.clone(
            reference_file_id=accept.files["mp3"],
            consent=True,
            rights_attestation="my own voice",
            timeout=60,
        )
        accept.voice = clone.vocal_id
        r = admin.put("/_sandbox/faults", json={"fail_tasks": 1.0})
        assert r.status_code == 200, r.text
        doc = httpx.get(srv.base_url + "/openapi.json").json()
        yield World(admin, accept, refuse, doc)
        for a in (accept, refuse):
            a.client.close()
            a.http.close()
    finally:
        admin.close()
        srv.stop()


# --- sending one request, three ways -----------------------------------------------------


def _resolve(value: Any, acct: Account, native: bool) -> Any:
    if isinstance(value, str) and value.startswith("<file:"):
        fid = (
            acct.sized_file_id(*_size_of(value))
            if value.count(":") == 2
            else acct.files[value[6:-1]]
        )
        return f"file_id:{fid}" if native else fid
    if value == "<voice>":
        return acct.voice
    return value


def _body(case: Case, value: Any, acct: Account) -> dict[str, Any]:
    body = {**_base(case)}
    if value is MISSING:
        body.pop(case.field, None)
    else:
        body[case.field] = value
    if case.kind == "route" and case.target == "audio-inpainting" and case.field == "start_ms":
        body["end_ms"] = max(MS, value + 1) if isinstance(value, int) else MS
    return {k: _resolve(v, acct, case.kind == "native") for k, v in body.items()}


def _model(case: Case) -> str:
    return REGISTRY[case.target].models[0]


def _http(case: Case, body: dict[str, Any], acct: Account) -> httpx.Response:
    if case.kind == "native":
        return acct.http.post(
            "/v1/generations",
            json={"tool_id": tool_id(case.target, _model(case)), "payload_json": json.dumps(body)},
        )
    return acct.http.post(f"/v1/{case.target}", json=body)


def _client(case: Case, body: dict[str, Any], acct: Account) -> Any:
    c = acct.client
    if case.kind == "native":
        return c.generations.create(tool_id=tool_id(case.target, _model(case)), payload=body)
    fields = {k: v for k, v in body.items() if k != "license"}
    lic = body.get("license", "royalty_free")
    for f in (
        ROUTES[case.target].fields if case.target in ("voice-clones", "song-translations") else ()
    ):
        if f.required:
            fields.setdefault(f.name, None)  # the method's required arguments, sent missing
    if case.target == "voice-clones":
        return c.voice_clones.create(license=lic, **fields)
    if case.target == "song-translations":
        return c.song_translations.create(license=lic, **fields)
    return c.workflows.create(case.target, license=lic, **fields)


def _schema(doc: dict[str, Any], case: Case) -> tuple[dict[str, Any], list[str]]:
    """The document's schema of the field, and the required fields of its object."""
    if case.kind == "native":
        obj = doc["components"]["schemas"][f"Payload_{case.target}"]
    else:
        obj = doc["paths"][f"/v1/{case.target}"]["post"]["requestBody"]["content"][
            "application/json"
        ]["schema"]
    return obj["properties"][case.field], obj.get("required", [])


def _stated(schema: dict[str, Any], key: str) -> list[Any]:
    """Every value of ``key`` in the schema and its anyOf branches."""
    out = [schema[key]] if key in schema else []
    for branch in schema.get("anyOf", []):
        out += _stated(branch, key)
    return out


def _upload_refused(world: World, acct: Account, value: str) -> None:
    """A file past the upload limit: POST /v1/files refuses it (422 naming ``file``, nothing
    billed) and so does the client's upload, before sending anything. The route does not
    know the field the file is for: checked once per kind and size, then reused."""
    kind, size = _size_of(value)
    if (kind, size) in world.refused_uploads:
        return
    blob = sized_file(kind, size)
    before = _billed(world, acct)
    r = acct.http.post("/v1/files", files={"file": (KIND_OF_FILE[kind], blob)})
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "InvalidGenerationInput"
    assert r.json()["message"].startswith("file:"), r.json()["message"]
    assert _billed(world, acct) == before
    acct.recorder.sent.clear()
    with pytest.raises(ValidationError) as info:
        acct.client.files.upload(blob, filename=KIND_OF_FILE[kind])
    assert info.value.field == "source" and acct.recorder.sent == []
    world.refused_uploads.add((kind, size))


def _clock_on(world: World) -> None:
    r = world.admin.post("/_sandbox/clock", json={"advance_seconds": 86401})
    assert r.status_code == 200, r.text


def _billed(world: World, acct: Account) -> tuple[int, int]:
    led = world.admin.get(f"/_sandbox/accounts/{acct.account_id}/ledger").json()["entries"]
    return acct.http.get("/v1/account/balance").json()["total_effective"], len(led)


# --- the test --------------------------------------------------------------------------


def _document_states(world: World, case: Case) -> None:
    """(c) the document states the rule."""
    f = case.rule
    assert f is not None
    prop, required = _schema(world.doc, case)
    if case.bound == "required":
        assert case.field in required
    elif case.bound in ("min", "max"):
        key = "minimum" if case.bound == "min" else "maximum"
        assert getattr(f, case.bound) in _stated(prop, key)
    elif case.bound == "clamp":
        assert prop["x-clamped-to"] == {"minimum": f.min, "maximum": f.max}
    elif case.bound == "max_len":
        assert f.max_len in _stated(prop, "maxLength")
    elif case.bound in ("enum", "late"):
        stated = _stated(prop, "enum") + [[c] for c in _stated(prop, "const")]
        assert list(f.choices) in stated
    elif case.bound == "kinds":
        assert prop["x-file-kinds"] == list(f.formats)
    elif case.bound in ("max_bytes", "max_bytes_via_upload"):
        assert prop["x-max-bytes"] == f.max_bytes
        if case.bound == "max_bytes_via_upload":  # and the upload route states its own limit
            upload = world.doc["paths"]["/v1/files"]["post"]["requestBody"]["content"]
            part = upload["multipart/form-data"]["schema"]["properties"]["file"]
            assert part["x-max-bytes"] == f.max_bytes == UPLOAD_BYTES
    elif case.bound == "forbidden":
        assert prop.get("not") == {} or prop.get("type") == "null"


def _refused(world: World, case: Case, value: object) -> None:
    """(a) the sandbox refuses ``value``, naming the field and billing nothing (a ``late``
    rule: it accepts it, and the task fails during generation); (b) the client refuses it
    before sending anything."""
    acct = world.refuse
    if case.bound == "max_bytes_via_upload":
        _upload_refused(world, acct, value)
        return
    body = _body(case, value, acct)
    before = _billed(world, acct)
    if case.bound == "late":  # the spec: an unknown value fails during generation
        _clock_on(world)
        r = _http(case, _body(case, value, world.accept), world.accept)
        assert r.status_code == 201, r.text
    else:
        r = _http(case, body, acct)
        assert r.status_code == 422, (value, r.text)
        assert r.json()["error"] == "InvalidGenerationInput"
        assert case.field in r.json()["message"], r.json()["message"]
        assert _billed(world, acct) == before
    acct.recorder.sent.clear()
    with pytest.raises(ValidationError) as info:
        _client(case, body, acct)
    assert info.value.field.rsplit(".", 1)[-1] == case.field, info.value
    assert acct.recorder.posts() == []


def _accepted(world: World, case: Case, value: object) -> None:
    """(a) the sandbox and (b) the client accept ``value``; only a clamped rule warns."""
    acct = world.accept
    body = _body(case, value, acct)
    _clock_on(world)
    r = _http(case, body, acct)
    assert r.status_code == 201, (value, r.text)
    acct.recorder.sent.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handle = _client(case, body, acct)
    assert handle.task_id and acct.recorder.posts()
    clamped = [w for w in caught if issubclass(w.category, ClampWarning)]
    assert bool(clamped) == (case.bound == "clamp"), [str(w.message) for w in caught]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_sandbox_client_and_document_agree(world: World, case: Case) -> None:
    _document_states(world, case)
    for value in case.bad:
        _refused(world, case, value)
    for value in case.good:
        _accepted(world, case, value)


LIST_LIMIT = [("min", int(LIMITS["list_limit_min"]), -1), ("max", int(LIMITS["list_limit_max"]), 1)]


@pytest.mark.parametrize(
    ("bound", "edge", "step"), LIST_LIMIT, ids=[f"limits.list_limit.{b}" for b, _, _ in LIST_LIMIT]
)
def test_the_list_limit_agrees(world: World, bound: str, edge: int, step: int) -> None:
    """The limits table's listing bound: GET /v1/generations?limit=..."""
    acct = world.refuse
    param = next(
        p
        for p in world.doc["paths"]["/v1/generations"]["get"]["parameters"]
        if p["name"] == "limit"
    )
    assert param["schema"]["minimum" if bound == "min" else "maximum"] == edge
    assert acct.http.get("/v1/generations", params={"limit": edge}).status_code == 200
    r = acct.http.get("/v1/generations", params={"limit": edge + step})
    assert r.status_code == 422 and "limit" in r.json()["message"], r.text
    acct.client.generations.page(limit=edge)
    acct.recorder.sent.clear()
    with pytest.raises(ValidationError) as info:
        acct.client.generations.page(limit=edge + step)
    assert info.value.field == "limit" and acct.recorder.sent == []
