"""Export what was made: every asset of a selection of tasks, in a folder with names you choose.

:func:`export_library` writes one file per output asset of the selected tasks (a tasks frame,
a project, a notebook, a period, or all of the account's) under a naming template such as
``{project}/{model}/{prompt}-take{take}-{id}.{ext}``, then a manifest (CSV or Parquet: task,
request, cost, license, file, hash) beside them. It is safe to kill and run again:

- every file is written to a temporary name and renamed into place, so a file that is there
  is whole; a journal in the folder (``.songlab-export.sqlite``, one committed row per file)
  says which asset each file holds and its SHA-256;
- a second run checks each journalled file (size and SHA-256) and downloads only what is
  missing or damaged; assets with the same blob hash are downloaded once and copied;
- the manifest is written last, whole, from the selection (never appended to).

Costs are the ledger's (the ``cost_usd``/``cost_source`` of :func:`songlab.ledger.tasks_frame`),
so the manifest's money is the cost report's. ``progress`` is called with an
:class:`ExportProgress` after each step (``songlab.widgets.export_library`` draws it as a bar).
Files are created 0600 and folders 0700: they are the account's work.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC
from pathlib import Path
from typing import Any, Final

import pandas as pd

from songlab.ledger._journal import JOURNAL, Journal, leftovers, sha256_of, write_private
from songlab.ledger._selection import Task, asset_dicts, select
from songlab.ledger.export import export_csv
from songlab.ledger.naming import (
    FIELDS,
    TEMPLATE,
    UNKNOWN,
    check_template,
    render,
    short_id,
    slug,
)
from songlab.localfiles import private_dir, replace_atomically

__all__ = [
    "ExportProgress",
    "ExportResult",
    "FIELDS",
    "JOURNAL",
    "MANIFEST_COLUMNS",
    "TEMPLATE",
    "export_library",
]

_HEX64: Final = re.compile(r"(?:sha256:)?([0-9a-f]{64})")

# the manifest's columns, in order (docs/notebooks.md describes each one)
MANIFEST_COLUMNS: Final[tuple[str, ...]] = (
    "task_id",
    "request",
    "operation",
    "model",
    "license",
    "tier",
    "take",
    "project",
    "created_at",
    "cost_usd",
    "cost_source",
    "file",
    "file_id",
    "asset",
    "blob_hash",
    "sha256",
    "bytes",
    "error",
)
_MIME_EXT: Final = {
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/flac": "flac",
    "audio/ogg": "ogg",
    "audio/mp4": "m4a",
    "audio/x-m4a": "m4a",
    "audio/midi": "mid",
    "application/json": "json",
    "text/plain": "txt",
}


# -- progress and result ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExportProgress:
    """Where an export stands. ``phase``: ``tasks`` (reading each task's assets), ``files``
    (writing them), ``manifest``, ``done``. ``total`` counts the phase's items."""

    phase: str
    done: int = 0
    total: int = 0
    downloaded: int = 0  # files fetched from the service in this run
    present: int = 0  # already in the folder and whole (a previous run's)
    copied: int = 0  # the same bytes as another asset (same blob hash): copied, not fetched
    failed: int = 0
    bytes_downloaded: int = 0
    current: str | None = None  # the file just handled (relative to the folder)

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else (1.0 if self.phase == "done" else 0.0)


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What :func:`export_library` did. ``manifest`` is the frame it wrote."""

    folder: Path
    manifest_path: Path
    manifest: pd.DataFrame = field(repr=False)
    files: int
    downloaded: int
    present: int
    copied: int
    failed: tuple[tuple[str, str], ...]  # (file_id, error)
    tasks: int
    tasks_without_assets: int
    bytes_downloaded: int
    prompts_unknown: int = 0  # tasks whose {prompt} (in the template) fell back to the operation

    @property
    def ok(self) -> bool:
        return not self.failed

    def __str__(self) -> str:
        head = (
            f"{self.files} files from {self.tasks} tasks in {self.folder}: "
            f"{self.downloaded} downloaded, {self.present} already there, {self.copied} copied "
            f"(same bytes as another asset); manifest {self.manifest_path.name}"
        )
        if self.failed:
            head += f"; {len(self.failed)} failed (listed in the manifest's error column)"
        if self.prompts_unknown:
            head += (
                f"; the prompt of {self.prompts_unknown} tasks is not known here, so their "
                "{prompt} is the operation (connect(record=RecordStore(keep_payloads=True)) "
                "keeps prompts; or pass prompts=)"
            )
        return head


@dataclass(slots=True)
class _Item:
    task: Task
    file_id: str
    blob_hash: str | None
    name: str | None
    mime_type: str | None
    n: int
    of: int
    stem: str = ""
    path: str | None = None
    sha256: str | None = None
    size: int | None = None
    error: str | None = None


# -- the export -----------------------------------------------------------------------------------


def _fields_of(item: _Item, ext: str) -> dict[str, object]:
    t = item.task
    origin = t.origin or ""
    notebook = Path(origin.split(":", 1)[-1]).stem if origin else UNKNOWN
    asset = item.name or str(item.n)
    return {
        "project": t.project or "no-project",
        "notebook": notebook or UNKNOWN,
        "operation": t.operation or UNKNOWN,
        "model": t.model or UNKNOWN,
        "tier": t.tier or UNKNOWN,
        "take": t.take if t.take is not None else UNKNOWN,
        "prompt": slug(t.prompt or "") or (t.operation or "untitled"),
        "date": t.created_at.astimezone(UTC).date().isoformat() if t.created_at else UNKNOWN,
        "task": t.task_id,
        "id": short_id(t.task_id),
        "asset": asset,
        "part": "" if item.of == 1 else f"-{asset}",
        "n": item.n,
        "ext": ext,
    }


def _ext(item: _Item, content: bytes | None = None) -> str | None:
    if item.mime_type:
        known = _MIME_EXT.get(item.mime_type.split(";")[0].strip().lower())
        if known:
            return known
    if content is not None:
        from songlab.codec import sniff

        kind = sniff(content)
        return {"midi": "mid"}.get(kind or "", kind) or "bin"
    return None


def _plan(items: list[_Item], template: str, written: Mapping[str, tuple[str, str, int]]) -> None:
    """Give each item its path stem (the path without ``.ext``); journalled files keep theirs;
    the rest in order, a clash (case-insensitive) numbered ``-2``, ``-3``, ..."""
    taken: dict[str, str] = {}
    for item in items:
        old = written.get(item.file_id)
        if old is not None:
            stem = old[0].rsplit(".", 1)[0]
            item.stem = stem
            taken[stem.lower()] = item.file_id
    for item in items:
        if item.stem:
            continue
        stem = render(template.removesuffix(".{ext}"), _fields_of(item, ""))
        candidate, k = stem, 1
        while taken.get(candidate.lower(), item.file_id) != item.file_id:
            k += 1
            candidate = f"{stem}-{k}"
        taken[candidate.lower()] = item.file_id
        item.stem = candidate


def _emit(progress: Callable[[ExportProgress], object] | None, state: ExportProgress) -> None:
    if progress is not None:
        progress(state)


def export_library(
    client: Any,
    folder: str | os.PathLike[str],
    *,
    tasks: object = None,
    project: str | None = None,
    notebook: str | None = None,
    period: str | None = None,
    start: object = None,
    end: object = None,
    template: str = TEMPLATE,
    manifest: str = "csv",
    prompts: Mapping[str, str] | Callable[[Mapping[str, object]], str | None] | None = None,
    progress: Callable[[ExportProgress], object] | None = None,
    workers: int = 4,
) -> ExportResult:
    """Write every output asset of the selected tasks into ``folder``, and a manifest.

    Selection (all of them narrow it): ``tasks`` (a tasks frame, task ids, or None for all
    of the account's), ``project``, ``notebook`` (the notebook's file name, as songlab's
    record has it), ``period`` (``"2026-11"``, ``"last-7-days"``, ... as in the cost report)
    or ``start``/``end`` dates. Only completed tasks with output assets give files.

    ``template``: each file's path under ``folder`` (fields: :data:`FIELDS`; it ends with
    ``.{ext}``); a clash is numbered. ``manifest``: ``"csv"`` or ``"parquet"``
    (``manifest.csv`` / ``manifest.parquet``). ``prompts``: the prompt of each task id (a
    mapping, or a function of the task's row) where songlab's record does not keep it.
    ``progress(ExportProgress)`` is called after each task and each file.

    Run it again after an interruption: what is there and whole is kept, the rest fetched.
    """
    if manifest not in ("csv", "parquet"):
        raise ValueError(f"manifest: 'csv' or 'parquet', got {manifest!r}")
    if not (isinstance(workers, int) and 1 <= workers <= 32):
        raise ValueError(f"workers: a whole number 1-32, got {workers!r}")
    check_template(template)
    root = Path(folder)
    if root.exists() and not root.is_dir():
        raise ValueError(f"folder: {root} is a file, not a folder")
    private_dir(root)  # 0700 if songlab makes it (a folder of yours keeps its mode)
    for part in leftovers(root):  # what a killed run left half-written
        part.unlink(missing_ok=True)
    selected = select(
        client,
        tasks,
        project=project,
        notebook=notebook,
        period=period,
        start=start,
        end=end,
        prompts=prompts,
    )
    journal = Journal(root)
    try:
        return _run(client, root, selected, journal, template, manifest, progress, workers)
    finally:
        journal.close()


def _run(
    client: Any,
    root: Path,
    selected: Sequence[Task],
    journal: Journal,
    template: str,
    manifest: str,
    progress: Callable[[ExportProgress], object] | None,
    workers: int,
) -> ExportResult:
    completed = [t for t in selected if t.status == "completed"]
    tracker = _Tracker(progress, ExportProgress("tasks", 0, len(completed)))
    listed = _assets_of(client, completed, journal, tracker, workers)
    items, without = _items_of(completed, listed)
    written = journal.files()
    _plan(items, template, written)
    tracker.start(ExportProgress("files", 0, len(items)))
    _write_items(client, root, items, journal, written, tracker, workers)
    tracker.phase("manifest")
    frame = _manifest_frame(items)
    name = f"manifest.{manifest}"
    replace_atomically(root / name, functools.partial(_write_manifest, frame, manifest))
    tracker.phase("done")
    state = tracker.state
    return ExportResult(
        folder=root,
        manifest_path=root / name,
        manifest=frame,
        files=sum(1 for i in items if i.path is not None),
        downloaded=state.downloaded,
        present=state.present,
        copied=state.copied,
        failed=tuple((i.file_id, i.error) for i in items if i.error),
        tasks=len(selected),
        tasks_without_assets=without + (len(selected) - len(completed)),
        bytes_downloaded=state.bytes_downloaded,
        # {prompt} falls back to the operation only where the template names it
        prompts_unknown=sum(1 for t in completed if t.prompt is None)
        if "prompt" in check_template(template)
        else 0,
    )


class _Tracker:
    """An export's progress, told to ``progress`` each time it changes (from the workers'
    threads too: one lock)."""

    def __init__(
        self, progress: Callable[[ExportProgress], object] | None, state: ExportProgress
    ) -> None:
        self._progress = progress
        self._lock = threading.Lock()
        self.state = state
        _emit(progress, state)

    def start(self, state: ExportProgress) -> None:
        """A new phase, counted from ``state``."""
        with self._lock:
            self.state = state
            _emit(self._progress, state)

    def phase(self, name: str) -> None:
        """The phase ``name`` begins, with no file in hand (its counters go on)."""
        with self._lock:
            self.state = replace(self.state, phase=name, current=None)
            _emit(self._progress, self.state)

    def count(self, **changes: int) -> None:
        """Counters go up (``done=1``, ``downloaded=1`` ...)."""
        with self._lock:
            state = self.state
            self.state = replace(state, **{k: getattr(state, k) + v for k, v in changes.items()})
            _emit(self._progress, self.state)


def _assets_of(
    client: Any, completed: list[Task], journal: Journal, tracker: _Tracker, workers: int
) -> list[list[dict[str, object]]]:
    """Each completed task's assets: the journal's, else fetched (and kept in it)."""

    def assets_of(task: Task) -> list[dict[str, object]]:
        found = journal.assets(task.task_id)
        if found is None:
            found = asset_dicts(client.generations.get(task.task_id))
            journal.keep_assets(task.task_id, found)  # a completed task's assets never change
        tracker.count(done=1)
        return found

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="songlab-export") as pool:
        return list(pool.map(assets_of, completed))


def _items_of(
    completed: list[Task], listed: list[list[dict[str, object]]]
) -> tuple[list[_Item], int]:
    """One item per asset of each task, and how many tasks have none."""
    items: list[_Item] = []
    without = 0
    for task, assets in zip(completed, listed, strict=True):
        if not assets:
            without += 1
        for n, a in enumerate(assets, 1):
            items.append(
                _Item(
                    task,
                    str(a["file_id"]),
                    _text(a.get("blob_hash")),
                    _text(a.get("name")),
                    _text(a.get("mime_type")),
                    n,
                    len(assets),
                )
            )
    return items, without


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _write_items(
    client: Any,
    root: Path,
    items: list[_Item],
    journal: Journal,
    written: dict[str, tuple[str, str, int]],
    tracker: _Tracker,
    workers: int,
) -> None:
    """Write the items, those of the same bytes (blob hash) as one group, the groups in
    parallel; a group that fails is named in its items' ``error`` and the others go on."""
    groups: dict[str, list[_Item]] = {}
    for item in items:
        groups.setdefault(item.blob_hash or f"file:{item.file_id}", []).append(item)

    def one_group(group: list[_Item]) -> None:
        try:
            _write_group(client, root, group, journal, written, tracker.count)
        except Exception as exc:  # noqa: BLE001 - named in the manifest; the others go on
            text = f"{type(exc).__name__}: {exc}"
            for item in group:
                if item.path is None:
                    item.error = text
            failed = sum(1 for i in group if i.error)
            tracker.count(done=failed, failed=failed)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="songlab-export") as pool:
        list(pool.map(one_group, groups.values()))


def _verified(root: Path, entry: tuple[str, str, int] | None) -> bool:
    if entry is None:
        return False
    path, sha, size = entry
    target = root / path
    try:
        if target.stat().st_size != size:
            return False
    except OSError:
        return False
    return sha256_of(target) == sha


def _write_group(
    client: Any,
    root: Path,
    group: list[_Item],
    journal: Journal,
    written: Mapping[str, tuple[str, str, int]],
    count: Callable[..., None],
) -> None:
    """One blob: keep what is whole, fetch it at most once, copy it to the other names."""
    content: bytes | None = None
    source: Path | None = None
    missing: list[_Item] = []
    for item in group:
        entry = written.get(item.file_id)
        if _verified(root, entry):
            assert entry is not None
            item.path, item.sha256, item.size = entry
            source = source or root / entry[0]
            count(done=1, present=1)
        else:
            missing.append(item)
    for item in missing:
        fetched = False
        if content is None and source is not None:
            content = source.read_bytes()
        if content is None:
            content = bytes(client.files.download(item.file_id))
            fetched = True
            _check_blob(item, content)
        ext = _ext(item, content) or "bin"
        item.path = f"{item.stem}.{ext}"
        item.sha256, item.size = hashlib.sha256(content).hexdigest(), len(content)
        target = root / item.path
        # the journal's row before the rename: a file under its final name is always known
        write_private(
            target,
            content,
            before_rename=functools.partial(
                journal.wrote,
                item.file_id,
                item.task.task_id,
                item.blob_hash,
                item.path,
                item.sha256,
                item.size,
            ),
        )
        if fetched:
            count(done=1, downloaded=1, bytes_downloaded=len(content))
        else:
            count(done=1, copied=1)


def _write_manifest(frame: pd.DataFrame, kind: str, tmp: Path) -> None:
    """The manifest into ``tmp`` (a private temporary: ``replace_atomically`` renames it):
    CSV as the ledger writes it (exact money, formula-like text made inert), or Parquet."""
    if kind == "parquet":
        from songlab.ledger._parquet import write_parquet

        write_parquet(frame, tmp)
        return
    with tempfile.TemporaryDirectory(dir=tmp.parent, prefix=".songlab-manifest-") as work:
        (written,) = export_csv({"manifest": frame}, work)
        shutil.copyfile(written, tmp)


def _check_blob(item: _Item, content: bytes) -> None:
    """When the blob hash is a SHA-256 (the sandbox's; the spec does not say), the bytes
    must have it: a cut or damaged download is never written as the asset."""
    m = _HEX64.fullmatch((item.blob_hash or "").lower())
    if m and hashlib.sha256(content).hexdigest() != m.group(1):
        raise ValueError(
            f"file {item.file_id}: the downloaded bytes do not match its blob_hash "
            f"({len(content)} bytes); nothing written"
        )


def _manifest_frame(items: Sequence[_Item]) -> pd.DataFrame:
    import pyarrow as pa

    from songlab.ledger._schema import MONEY, TIMESTAMP

    types = {"license": pa.int8(), "take": pa.int32(), "created_at": TIMESTAMP, "cost_usd": MONEY}
    types["bytes"] = pa.int64()
    rows = []
    for i in items:
        t = i.task
        known = (("operation", t.operation), ("model", t.model), ("prompt", t.prompt))
        request = t.request or {k: v for k, v in known if v is not None}
        rows.append(
            {
                **{k: getattr(t, k) for k in ("task_id", "operation", "model", "license")},
                **{k: getattr(t, k) for k in ("tier", "take", "project", "created_at")},
                "request": json.dumps(request, sort_keys=True, default=str),
                "cost_usd": t.cost_usd,
                "cost_source": t.cost_source,
                "file": i.path,
                "file_id": i.file_id,
                "asset": i.name,
                "blob_hash": i.blob_hash,
                "sha256": i.sha256,
                "bytes": i.size,
                "error": i.error,
            }
        )
    columns = {
        name: pa.array([r[name] for r in rows], types.get(name, pa.string()))
        for name in MANIFEST_COLUMNS
    }
    return pa.table(columns).to_pandas(types_mapper=pd.ArrowDtype)
