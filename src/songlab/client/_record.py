"""The client's record of what it asked: one local SQLite file, one row per accepted create.

One record type, :class:`CreateRecord`, from request to row: the create path builds it once
when the service accepts a create, the listeners (:func:`songlab.client.on_create`) get it,
the store writes it and reads it back (:meth:`RecordStore.rows`,
:meth:`RecordStore.find_request`).

Every client writes every create the service accepted (``Client(record=...)``,
default :class:`RecordStore` ``()``): task id, Idempotency-Key, route, tool,
operation, model, license, the SHA-256 of the canonical request, the list-price
estimate, labels, reuse scope and take, the notebook or script that asked, and
the client's clock at send and at acceptance. Nothing secret (the key is named
by its non-secret ``key_id``) and no payload text unless ``keep_payloads=True``.

Where: ``RecordStore(path=None)``: ``$SONGLAB_RECORD`` if set, else
``platformdirs.user_data_dir("songlab")/record.sqlite``. WAL mode, a busy
timeout and one transaction per write make it safe for several processes and
kernels at once; a row is committed before the create returns, so a killed
kernel loses nothing it was told. The ledger reads it (``table()``,
:data:`RECORD_SCHEMA`); the client reads it to re-attach instead of re-buying
(:meth:`RecordStore.find_request`).
"""

from __future__ import annotations

import functools
import os
import sqlite3
import sys
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "CreateRecord",
    "RECORD_ENV",
    "RECORD_SCHEMA",  # noqa: F822 - made on first use (module __getattr__)
    "RecordStore",
    "current_origin",
    "default_record_path",
    "record_schema",
    "shared_store",
]

RECORD_ENV: Final = "SONGLAB_RECORD"
ORIGIN_ENV: Final = "SONGLAB_ORIGIN"

_FIELDS: Final = (
    ("task_id", "string"),
    ("key_id", "string"),
    ("base_url", "string"),
    ("idempotency_key", "string"),
    ("route", "string"),
    ("tool_id", "string"),
    ("operation", "string"),
    ("model", "string"),
    ("license", "int8"),
    ("payload_sha256", "string"),
    ("estimate_usd", "decimal"),
    ("project", "string"),
    ("tags", "string"),
    ("scope", "string"),
    ("take", "int32"),
    ("origin", "string"),
    ("sent_at", "timestamp"),
    ("accepted_at", "timestamp"),
    ("finished_at", "timestamp"),
    ("final_status", "string"),
    ("finished_via", "string"),
)


@functools.cache
def record_schema() -> pa.Schema:
    """:data:`RECORD_SCHEMA` (pyarrow is imported on first use: the client needs it only
    to hand the record to the ledger)."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int8": pa.int8(),
        "int32": pa.int32(),
        "decimal": pa.decimal128(18, 8),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    return pa.schema(
        [pa.field(n, types[t], nullable=n not in ("task_id", "key_id")) for n, t in _FIELDS]
    )


def __getattr__(name: str) -> object:
    if name == "RECORD_SCHEMA":
        return record_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_COLUMNS: Final = tuple(n for n, _ in _FIELDS)
_DDL: Final = (
    "CREATE TABLE IF NOT EXISTS creates ("
    "task_id TEXT NOT NULL, key_id TEXT NOT NULL, base_url TEXT, idempotency_key TEXT, "
    "route TEXT, tool_id TEXT, operation TEXT, model TEXT, license INTEGER, "
    "payload_sha256 TEXT, estimate_usd TEXT, project TEXT, tags TEXT, scope TEXT, "
    "take INTEGER, origin TEXT, sent_at TEXT, accepted_at TEXT, finished_at TEXT, "
    "final_status TEXT, finished_via TEXT, payload TEXT, consent_id TEXT, "
    "seq INTEGER PRIMARY KEY AUTOINCREMENT, UNIQUE (task_id, key_id))",
    # a create is found again by what it asks (re-attach), whatever key it was sent with
    "CREATE INDEX IF NOT EXISTS creates_by_request ON creates (key_id, payload_sha256)",
    # uploads sent once: the same bytes (and type) on the same account reuse their file id
    "CREATE TABLE IF NOT EXISTS uploads (key_id TEXT NOT NULL, base_url TEXT, "
    "content_sha256 TEXT NOT NULL, mime_type TEXT, file_id TEXT NOT NULL, size_bytes INTEGER, "
    "uploaded_at TEXT, PRIMARY KEY (key_id, base_url, content_sha256, mime_type))",
)
_Q8: Final = Decimal("0.00000001")


def default_record_path() -> Path:
    """``$SONGLAB_RECORD`` if set, else ``user_data_dir("songlab")/record.sqlite``."""
    env = os.environ.get(RECORD_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("songlab")) / "record.sqlite"


def _ipython_namespace() -> dict[str, object] | None:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
    except Exception:  # noqa: BLE001 - no shell: not a kernel
        return None
    return getattr(shell, "user_ns", None) if shell is not None else None


def current_origin() -> str | None:
    """The notebook or script asking: ``$SONGLAB_ORIGIN``; in a kernel the notebook's path
    (VS Code's ``__vsc_ipynb_file__``, Jupyter's ``JPY_SESSION_NAME`` / ``__session__``),
    else ``kernel:<working dir>``; in a script ``sys.argv[0]`` (absolute); else None."""
    env = os.environ.get(ORIGIN_ENV)
    if env:
        return env
    ns = _ipython_namespace()
    if ns is not None:
        for name in ("__vsc_ipynb_file__", "__session__"):
            value = ns.get(name)
            if isinstance(value, str) and value:
                return value
        session = os.environ.get("JPY_SESSION_NAME")
        if session:
            return session
        if "ipykernel" in sys.modules:
            return f"kernel:{os.getcwd()}"
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 and argv0 not in ("-c", "-m", "-"):
        return str(Path(argv0).resolve())
    return None


@dataclass(frozen=True, slots=True)
class CreateRecord:
    """One create the service accepted, as the client saw it: the row of the record (the
    columns of :data:`RECORD_SCHEMA`) and what the create hook's listeners get. No secret:
    the key is named by its non-secret ``key_id``."""

    task_id: str
    key_id: str
    base_url: str | None
    idempotency_key: str | None
    route: str  # the path posted to: /v1/generations, /v7/generate/song, /v1/karaoke-tracks ...
    tool_id: str | None  # native creates only
    operation: str | None  # the operation, the route's name or "agent"
    model: str | None
    license: int | None
    payload_sha256: str | None  # SHA-256 of the canonical request
    estimate_usd: Decimal | None  # the list price when it was sent
    project: str | None
    tags: tuple[str, ...]
    scope: str | None  # reuse scope ("account", a notebook or script), None if none
    take: int | None
    origin: str | None  # the notebook or script that asked
    sent_at: datetime | None  # the client's clock when the POST was first sent
    accepted_at: datetime | None  # ... and when the service's answer came
    # the client's clock when it first saw the task end (a terminal event, a poll or a get),
    # the status it ended with, and how it was seen: "stream", "poll" or "get"
    finished_at: datetime | None = None
    final_status: str | None = None
    finished_via: str | None = None

    @property
    def recorded_at(self) -> datetime:
        """``accepted_at`` by the name the create hook gave it before the record existed
        (``ledger.LabelStore`` reads it); every record a listener gets has it."""
        if self.accepted_at is None:
            raise AttributeError("recorded_at: this row of the record has no accepted_at")
        return self.accepted_at


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat(timespec="microseconds")


class RecordStore:
    """The record (one SQLite file). ``path=None``: :func:`default_record_path`.

    ``keep_payloads=True`` also keeps each request's canonical text (off by default:
    prompts and lyrics may be confidential); read it back with :meth:`payload`.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, keep_payloads: bool = False
    ) -> None:
        self.path = Path(path) if path is not None else default_record_path()
        self.keep_payloads = keep_payloads
        self._lock = threading.Lock()
        self._con: sqlite3.Connection | None = None
        self._pid = 0

    def __repr__(self) -> str:
        return f"RecordStore({str(self.path)!r})"

    # one connection per process, used under a lock (a fork opens its own)
    def _connection(self) -> sqlite3.Connection:
        if self._con is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(
                self.path, timeout=60, check_same_thread=False, isolation_level=None
            )
            con.execute("PRAGMA busy_timeout = 60000")
            con.execute("PRAGMA journal_mode = WAL")
            con.execute("PRAGMA synchronous = NORMAL")
            for ddl in _DDL:
                con.execute(ddl)
            _add_missing_columns(con)
            self._con, self._pid = con, os.getpid()
        return self._con

    def close(self) -> None:
        with self._lock:
            if self._con is not None and self._pid == os.getpid():
                self._con.close()
            self._con = None

    def write(
        self, row: CreateRecord, *, payload: str | None = None, consent_id: str | None = None
    ) -> bool:
        """Commit one accepted create; False if (task_id, key_id) was already recorded
        (an idempotent repeat adds no row)."""
        values = (
            row.task_id,
            row.key_id,
            row.base_url,
            row.idempotency_key,
            row.route,
            row.tool_id,
            row.operation,
            row.model,
            row.license,
            row.payload_sha256,
            None if row.estimate_usd is None else str(row.estimate_usd),
            row.project,
            ",".join(sorted(row.tags)) or None,
            row.scope,
            row.take,
            row.origin,
            _iso(row.sent_at),
            _iso(row.accepted_at),
            _iso(row.finished_at),
            row.final_status,
            row.finished_via,
            payload if self.keep_payloads else None,
            consent_id,
        )
        cols = (*_COLUMNS, "payload", "consent_id")
        with self._lock:
            con = self._connection()
            con.execute("BEGIN IMMEDIATE")
            try:
                cur = con.execute(
                    f"INSERT OR IGNORE INTO creates ({', '.join(cols)}) "
                    f"VALUES ({', '.join('?' * len(cols))})",
                    values,
                )
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            return cur.rowcount == 1

    def finish(
        self, *, task_id: str, key_id: str, at: datetime, status: str | None, via: str
    ) -> bool:
        """Note that the client saw the task end at ``at`` (its own clock), with ``status``
        (None when what it saw did not say, e.g. a terminal event without a status), and
        how (``via``). The first sighting keeps its time; a status not known then is
        filled in by the next sighting that shows it. True while a fact was still missing
        (the row exists and was changed); False when the row is absent or already full."""
        with self._lock:
            con = self._connection()
            cur = con.execute(
                "UPDATE creates SET finished_at = COALESCE(finished_at, ?), "
                "finished_via = COALESCE(finished_via, ?), "
                "final_status = COALESCE(final_status, ?) "
                "WHERE task_id = ? AND key_id = ? "
                "AND (finished_at IS NULL OR final_status IS NULL)",
                (_iso(at), via, status, task_id, key_id),
            )
            return cur.rowcount > 0

    def find_request(
        self,
        *,
        key_id: str,
        base_url: str | None,
        route: str,
        payload_sha256: str,
        scope: str,
        take: int,
    ) -> CreateRecord | None:
        """The first recorded create of this request (route, canonical request, reuse scope
        and take) on this account, or None: what a create re-attaches to. Found by what it
        asks, so a row written with a key of an older songlab is found too."""
        with self._lock:
            row = (
                self._connection()
                .execute(
                    f"SELECT {', '.join(_COLUMNS)} FROM creates WHERE key_id = ? "
                    "AND payload_sha256 = ? AND base_url IS ? AND route = ? AND scope = ? "
                    "AND take = ? ORDER BY seq LIMIT 1",
                    (key_id, payload_sha256, base_url, route, scope, take),
                )
                .fetchone()
            )
        return None if row is None else _row(row)

    def forget(self, *, task_id: str, key_id: str) -> None:
        """Remove a row whose task the service no longer has (e.g. a restarted in-memory
        sandbox): the record keeps only tasks that exist."""
        with self._lock:
            con = self._connection()
            con.execute("BEGIN IMMEDIATE")
            try:
                con.execute(
                    "DELETE FROM creates WHERE task_id = ? AND key_id = ?", (task_id, key_id)
                )
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

    def upload_of(
        self, key_id: str, base_url: str | None, content_sha256: str, mime_type: str | None
    ) -> tuple[str, int | None] | None:
        """(file id, size) of the same bytes uploaded before on this account, or None."""
        with self._lock:
            row = (
                self._connection()
                .execute(
                    "SELECT file_id, size_bytes FROM uploads WHERE key_id = ? AND base_url IS ? "
                    "AND content_sha256 = ? AND mime_type IS ?",
                    (key_id, base_url, content_sha256, mime_type),
                )
                .fetchone()
            )
        return None if row is None else (row[0], row[1])

    def write_upload(
        self,
        key_id: str,
        base_url: str | None,
        content_sha256: str,
        mime_type: str | None,
        file_id: str,
        size_bytes: int | None,
    ) -> None:
        with self._lock:
            self._connection().execute(
                "INSERT OR REPLACE INTO uploads VALUES (?,?,?,?,?,?,?)",
                (
                    key_id,
                    base_url,
                    content_sha256,
                    mime_type,
                    file_id,
                    size_bytes,
                    datetime.now(UTC).isoformat(),
                ),
            )

    def forget_upload(self, key_id: str, base_url: str | None, file_id: str) -> None:
        with self._lock:
            self._connection().execute(
                "DELETE FROM uploads WHERE key_id = ? AND base_url IS ? AND file_id = ?",
                (key_id, base_url, file_id),
            )

    def consent_id(self, *, task_id: str, key_id: str) -> str | None:
        """The ``consent_id`` a voice-clone create answered with (kept to re-attach)."""
        with self._lock:
            row = (
                self._connection()
                .execute(
                    "SELECT consent_id FROM creates WHERE task_id = ? AND key_id = ?",
                    (task_id, key_id),
                )
                .fetchone()
            )
        return None if row is None else row[0]

    def payload(self, task_id: str) -> str | None:
        """The canonical request text of a task (kept only with ``keep_payloads=True``)."""
        with self._lock:
            row = (
                self._connection()
                .execute(
                    "SELECT payload FROM creates WHERE task_id = ? ORDER BY seq LIMIT 1", (task_id,)
                )
                .fetchone()
            )
        return None if row is None else row[0]

    def rows(self, *, key_id: str | None = None) -> list[CreateRecord]:
        """Every row (of ``key_id``, if given), oldest first."""
        if not self.path.exists():
            return []
        where, args = ("WHERE key_id = ?", (key_id,)) if key_id is not None else ("", ())
        with self._lock:
            found = (
                self._connection()
                .execute(f"SELECT {', '.join(_COLUMNS)} FROM creates {where} ORDER BY seq", args)
                .fetchall()
            )
        return [_row(r) for r in found]

    def table(self, *, key_id: str | None = None) -> pa.Table:
        """Every row (of ``key_id``, if given) as Arrow (:data:`RECORD_SCHEMA`), oldest first."""
        import pyarrow as pa

        schema = record_schema()
        rows = self.rows(key_id=key_id)
        if not rows:
            return schema.empty_table()
        arrays = []
        for f in schema:
            values: list[object] = [getattr(r, f.name) for r in rows]
            if f.name == "estimate_usd":
                values = [
                    None if r.estimate_usd is None else r.estimate_usd.quantize(_Q8) for r in rows
                ]
            elif f.name == "tags":
                values = [",".join(r.tags) or None for r in rows]
            arrays.append(pa.array(values, f.type))
        return pa.Table.from_arrays(arrays, schema=schema)


def _row(r: tuple[object, ...]) -> CreateRecord:
    """A row as SQLite gives it (text, integers, NULL) -> :class:`CreateRecord`."""
    d = dict(zip(_COLUMNS, r, strict=True))
    money, tags = _text(d["estimate_usd"]), _text(d["tags"])
    return CreateRecord(
        task_id=str(d["task_id"]),
        key_id=str(d["key_id"]),
        base_url=_text(d["base_url"]),
        idempotency_key=_text(d["idempotency_key"]),
        route=str(d["route"]),
        tool_id=_text(d["tool_id"]),
        operation=_text(d["operation"]),
        model=_text(d["model"]),
        license=_int(d["license"]),
        payload_sha256=_text(d["payload_sha256"]),
        estimate_usd=None if money is None else Decimal(money),
        project=_text(d["project"]),
        tags=tuple(t for t in tags.split(",") if t) if tags else (),
        scope=_text(d["scope"]),
        take=_int(d["take"]),
        origin=_text(d["origin"]),
        sent_at=_when(d["sent_at"]),
        accepted_at=_when(d["accepted_at"]),
        finished_at=_when(d["finished_at"]),
        final_status=_text(d["final_status"]),
        finished_via=_text(d["finished_via"]),
    )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None


def _when(value: object) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def _add_missing_columns(con: sqlite3.Connection) -> None:
    """Columns a record made by an older songlab lacks (added empty: facts it never saw)."""
    have = {r[1] for r in con.execute("PRAGMA table_info(creates)")}
    for name in ("finished_at", "final_status", "finished_via"):
        if name not in have:
            try:
                con.execute(f"ALTER TABLE creates ADD COLUMN {name} TEXT")
            except sqlite3.OperationalError:  # another process added it first
                if name not in {r[1] for r in con.execute("PRAGMA table_info(creates)")}:
                    raise


_SHARED: dict[tuple[str, bool], RecordStore] = {}
_SHARED_LOCK = threading.Lock()


def shared_store(path: str | os.PathLike[str] | None = None) -> RecordStore:
    """One :class:`RecordStore` per file in this process (clients share its connection)."""
    p = str(Path(path) if path is not None else default_record_path())
    with _SHARED_LOCK:
        store = _SHARED.get((p, False))
        if store is None:
            store = _SHARED[(p, False)] = RecordStore(p)
        return store
