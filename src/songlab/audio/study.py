"""An adherence study: many clips measured once each, on every core, in bounded memory.

``analyse(clips)`` -> one row per clip (:mod:`songlab.audio.adherence`'s columns, with
the clip's model, operation, license and task). Each measurement is cached by the
clip's blob hash and the measure's version (:class:`AnalysisCache`, one SQLite file),
so a clip is measured once whatever runs it again; a new measure version measures
again. Clips are measured in worker processes (one per core), fed a few at a time, so
memory holds only the clips in flight whatever the study's size; a progress bar shows
the clips done (tqdm: a widget in a notebook, a line on a terminal).
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import numpy as np

import songlab.audio.adherence as adh
import songlab.audio.measures as ms
from songlab.audio._errors import AudioError

__all__ = [
    "AnalysisCache",
    "CACHE_ENV",
    "Clip",
    "analyse",
    "clips_from_batch",
    "default_cache_path",
    "measure_clip",
    "provenance",
]

CACHE_ENV: Final = "SONGLAB_ANALYSIS_CACHE"
_PEAK_RSS = [0]  # the largest worker's peak resident memory (KiB) seen by this process
BASE: Final = ("duration", "tempo", "key", "loudness", "true_peak")
META_COLUMNS: Final = ("clip", "task_id", "file_id", "blob_key", "model", "operation", "license")


def default_cache_path() -> Path:
    """``$SONGLAB_ANALYSIS_CACHE`` if set, else ``user_cache_dir("songlab")/analysis.sqlite``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("songlab")) / "analysis.sqlite"


class AnalysisCache:
    """Measurements by (clip key, measure, measure version): one SQLite file, private to its
    user (0600 in a 0700 folder). A clip key is its blob hash (``blob:<hash>``, the
    service's content hash) or the SHA-256 of its bytes (``sha256:<hex>``)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self._lock = threading.Lock()
        self._con: sqlite3.Connection | None = None
        self._pid = 0

    def __repr__(self) -> str:
        return f"AnalysisCache({str(self.path)!r})"

    def _connection(self) -> sqlite3.Connection:
        if self._con is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not self.path.exists():
                fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
                os.close(fd)
            con = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
            con.execute("PRAGMA journal_mode = WAL")
            con.execute(
                "CREATE TABLE IF NOT EXISTS measured (clip TEXT NOT NULL, measure TEXT NOT NULL, "
                "version INTEGER NOT NULL, value TEXT NOT NULL, PRIMARY KEY (clip, measure, version))"
            )
            self._con, self._pid = con, os.getpid()
        return self._con

    def get(self, clip: str, measures: Iterable[str]) -> dict[str, Any]:
        """The cached values of ``measures`` (at their current versions) for one clip."""
        wanted = {m: ms.PROVENANCE[m].version if m in ms.PROVENANCE else 1 for m in measures}
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    "SELECT measure, version, value FROM measured WHERE clip = ?",
                    (clip,),
                )
                .fetchall()
            )
        return {m: json.loads(v) for m, ver, v in rows if wanted.get(m) == ver}

    def put(self, clip: str, values: Mapping[str, Any]) -> None:
        """Keep measured values (by measure name, at the measure's current version)."""
        rows = [
            (clip, m, ms.PROVENANCE[m].version if m in ms.PROVENANCE else 1, json.dumps(v))
            for m, v in values.items()
        ]
        with self._lock:
            con = self._connection()
            with con:
                con.executemany("INSERT OR REPLACE INTO measured VALUES (?, ?, ?, ?)", rows)

    def __len__(self) -> int:
        with self._lock:
            n = self._connection().execute("SELECT COUNT(*) FROM measured").fetchone()[0]
        return int(n)

    def close(self) -> None:
        with self._lock:
            if self._con is not None and self._pid == os.getpid():
                self._con.close()
            self._con = None


@dataclass(frozen=True, slots=True)
class Clip:
    """One clip to measure: the request that made it, and its audio (``data``) or where the
    study fetches it from (``file_id``, with ``client=``). ``blob_hash`` (the asset's) keys
    the cache without downloading; ``reference`` is the melody or MIDI file the request
    sent (melody and MIDI to song); ``transcript`` the service's transcription, if held."""

    request: Mapping[str, Any]
    data: bytes | None = field(default=None, repr=False)
    file_id: str | None = None
    blob_hash: str | None = None
    task_id: str | None = None
    reference: bytes | None = field(default=None, repr=False)
    transcript: str | None = None
    label: str | None = None

    def key(self) -> str:
        if self.blob_hash:
            return f"blob:{self.blob_hash}"
        if self.data is None:
            raise AudioError("clip", "needs its audio (data), a blob_hash or a file_id and client")
        return "sha256:" + hashlib.sha256(self.data).hexdigest()


def _contour(pair: tuple[Any, Any]) -> list[list[float]]:
    t, f = pair
    return [np.round(np.asarray(t, float), 5).tolist(), np.round(np.asarray(f, float), 3).tolist()]


def measure_clip(
    data: bytes, need: Sequence[str], reference: tuple[str, bytes] | None
) -> dict[str, Any]:
    """Decode ``data`` and measure ``need`` (measure names; ``melody`` is the song's
    contour, ``reference`` the asked melody's, from ``("melody"|"midi", bytes)``). Runs in a
    worker process: JSON-able values only."""
    import songlab.codec as codec

    out: dict[str, Any] = {}
    if any(m in need for m in (*BASE, "melody")):
        samples, sr = codec.decode(data)
        if any(m in need for m in BASE):
            got = adh.heard(samples, sr=sr)
            out.update(
                duration=[got.duration_s, got.sr, got.channels],
                tempo=got.tempo_bpm,
                key=[got.key, got.key_strength],
                loudness=_json_float(got.loudness_lufs),
                true_peak=[_json_float(got.true_peak_dbtp), got.clipped_samples],
            )
        if "melody" in need:
            out["melody"] = _contour(ms.melody_contour(samples, sr=sr))
    if "reference" in need and reference is not None:
        kind, ref = reference
        if kind == "midi":
            out["reference"] = _contour(ms.midi_contour(ref))
        else:
            rs, rsr = codec.decode(ref)
            out["reference"] = _contour(ms.pitch_contour(rs, sr=rsr))
    import resource

    kept = {k: v for k, v in out.items() if k in need}
    kept["_peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kept


def _json_float(x: float) -> float | str:
    return x if np.isfinite(x) else repr(float(x))


def _float(x: Any) -> float:
    return float(x)  # "-inf", "nan" and numbers alike


def _heard(values: Mapping[str, Any], melody: Any) -> adh.Heard:
    dur, sr, ch = values["duration"]
    k, strength = values["key"]
    tp, clipped = values["true_peak"]
    return adh.Heard(
        duration_s=float(dur),
        sr=int(sr),
        channels=int(ch),
        tempo_bpm=float(values["tempo"]),
        key=str(k),
        key_strength=float(strength),
        loudness_lufs=_float(values["loudness"]),
        true_peak_dbtp=_float(tp),
        clipped_samples=int(clipped),
        melody=None if melody is None else (np.asarray(melody[0]), np.asarray(melody[1])),
    )


def provenance() -> dict[str, dict[str, Any]]:
    """Every measure's provenance (library, installed versions, settings, rule, source)."""
    return {name: p.as_dict() for name, p in ms.PROVENANCE.items()}


@dataclass
class _Job:
    index: int
    clip: Clip
    key: str
    ask: adh.Asked
    values: dict[str, Any]
    need: list[str]
    ref_key: str | None = None


def _needs(ask: adh.Asked, have: Mapping[str, Any]) -> list[str]:
    need = [m for m in BASE if m not in have]
    if ask.melody and "melody" not in have:
        need.append("melody")
    return need


def _fetch(clip: Clip, client: Any) -> Clip:
    if clip.data is not None:
        return clip
    if client is None or not clip.file_id:
        raise AudioError(
            "clips",
            f"clip {clip.label or clip.task_id or '?'} has no audio: give "
            "data=, or file_id= and client=",
        )
    data = client.files.download(clip.file_id)
    return replace(clip, data=bytes(data))


def _reference_bytes(clip: Clip, ask: adh.Asked, client: Any) -> bytes | None:
    if clip.reference is not None or not ask.melody:
        return clip.reference
    value = (clip.request.get("payload") or {}).get(ask.melody)
    fid = None
    if isinstance(value, str) and value.startswith("file_id:"):
        fid = value.removeprefix("file_id:")
    elif isinstance(value, Mapping) and isinstance(value.get("file_id"), str):
        fid = value["file_id"]
    if fid is None or client is None:
        return None
    return bytes(client.files.download(fid))


def _progress(total: int | None, enabled: bool | None) -> Any:
    from tqdm.auto import tqdm

    return tqdm(
        total=total, desc="adherence", unit="clip", disable=None if enabled is None else not enabled
    )


def _pool(workers: int) -> cf.ProcessPoolExecutor:
    # forkserver: workers start from a clean server process (no kernel threads, no sandbox),
    # with the measures imported once; fork from a threaded kernel can deadlock
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["songlab.audio.study", "librosa", "scipy.signal", "soxr"])
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx)


def analyse(
    clips: Iterable[Clip],
    /,
    *,
    client: Any = None,
    cache: AnalysisCache | str | os.PathLike[str] | bool = True,
    workers: int | None = None,
    progress: bool | None = None,
    total: int | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> Any:  # pandas DataFrame
    """Measure every clip and score it against its request -> a frame, one row per clip.

    ``clips``: :class:`Clip` values (any iterable: a generator keeps a study of thousands
    in bounded memory; only ``2 x workers`` clips' bytes are held at once). ``client``:
    fetches clips given by ``file_id`` (from the client's asset cache when it holds them)
    and the melody or MIDI a melody/MIDI-to-song request sent. ``cache``: True (the default
    :class:`AnalysisCache`), a path, a cache, or False. ``workers``: processes (default:
    every core; 1 measures in this process). ``progress``: a bar (None: tqdm decides, on
    when interactive). The frame's ``attrs["provenance"]`` holds every measure's provenance.
    """
    import pandas as pd

    store = (
        None
        if cache is False
        else cache
        if isinstance(cache, AnalysisCache)
        else AnalysisCache(None if cache is True else cache)
    )
    n_workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
    if total is None and isinstance(clips, Sequence):
        total = len(clips)
    rows: dict[int, dict[str, Any]] = {}
    bar = _progress(total, progress)
    jobs = _jobs(clips, store, client)
    try:
        if n_workers == 1:
            for job in jobs:
                rows[job.index] = _finish(job, _run(job, client), store, on_row)
                bar.update(1)
        else:
            with _pool(n_workers) as pool:
                pending: dict[cf.Future[dict[str, Any]], _Job] = {}
                for job in jobs:
                    if not job.need:
                        rows[job.index] = _finish(job, {}, store, on_row)
                        bar.update(1)
                        continue
                    pending[_submit(pool, job, client)] = job
                    while len(pending) >= 2 * n_workers:
                        _drain(pending, rows, store, on_row, bar, cf.FIRST_COMPLETED)
                while pending:
                    _drain(pending, rows, store, on_row, bar, cf.FIRST_COMPLETED)
    finally:
        bar.close()
    frame = pd.DataFrame([rows[i] for i in sorted(rows)])
    frame.attrs["provenance"] = provenance()
    frame.attrs["worker_peak_rss_mib"] = _PEAK_RSS[0] / 1024
    return frame


def _jobs(clips: Iterable[Clip], store: AnalysisCache | None, client: Any) -> Iterator[_Job]:
    for i, clip in enumerate(clips):
        if not isinstance(clip, Clip):
            raise AudioError(f"clips[{i}]", "must be a songlab.audio.study.Clip")
        ask = adh.asked(clip.request)
        if clip.blob_hash is None and clip.data is None:
            clip = _fetch(clip, client)
        key = clip.key()
        have = store.get(key, [*BASE, "melody", "transcript"]) if store is not None else {}
        need = _needs(ask, have)
        ref_key = None
        if ask.melody:
            ref = _reference_bytes(clip, ask, client)
            if ref is not None:
                clip = replace(clip, reference=ref)
                ref_key = "sha256:" + hashlib.sha256(ref).hexdigest()
                got = store.get(ref_key, ["reference"]) if store is not None else {}
                if "reference" in got:
                    have["reference"] = got["reference"]
                else:
                    need.append("reference")
        if clip.transcript is None and "transcript" in have:
            clip = replace(clip, transcript=str(have["transcript"]))
        yield _Job(i, clip, key, ask, have, need, ref_key)


def _run(job: _Job, client: Any) -> dict[str, Any]:
    if not job.need:
        return {}
    clip = _fetch(job.clip, client) if any(m != "reference" for m in job.need) else job.clip
    ref = (job.ask.melody or "melody", clip.reference) if clip.reference is not None else None
    return measure_clip(clip.data or b"", job.need, ref)


def _submit(pool: cf.ProcessPoolExecutor, job: _Job, client: Any) -> cf.Future[dict[str, Any]]:
    clip = _fetch(job.clip, client) if any(m != "reference" for m in job.need) else job.clip
    ref = (job.ask.melody or "melody", clip.reference) if clip.reference is not None else None
    return pool.submit(measure_clip, clip.data or b"", job.need, ref)


def _drain(
    pending: dict[cf.Future[dict[str, Any]], _Job],
    rows: dict[int, dict[str, Any]],
    store: AnalysisCache | None,
    on_row: Callable[[dict[str, Any]], None] | None,
    bar: Any,
    when: str,
) -> None:
    done, _ = cf.wait(list(pending), return_when=when)
    for fut in done:
        job = pending.pop(fut)
        rows[job.index] = _finish(job, fut.result(), store, on_row)
        bar.update(1)


def _finish(
    job: _Job,
    measured: dict[str, Any],
    store: AnalysisCache | None,
    on_row: Callable[[dict[str, Any]], None] | None,
) -> dict[str, Any]:
    rss = measured.pop("_peak_rss_kib", None)
    if rss is not None:
        _PEAK_RSS[0] = max(_PEAK_RSS[0], int(rss))
    ref = measured.pop("reference", None)
    if store is not None:
        if measured:
            store.put(job.key, measured)
        if ref is not None and job.ref_key is not None:
            store.put(job.ref_key, {"reference": ref})
        if job.clip.transcript is not None and "transcript" not in job.values:
            store.put(job.key, {"transcript": job.clip.transcript})
    values = {**job.values, **measured}
    if ref is None:
        ref = values.get("reference")
    got = _heard(values, values.get("melody"))
    reference = None if ref is None else (np.asarray(ref[0]), np.asarray(ref[1]))
    scored = adh.score(job.ask, got, reference=reference, transcript=job.clip.transcript)
    req = job.clip.request
    row = {
        "clip": job.clip.label,
        "task_id": job.clip.task_id,
        "file_id": job.clip.file_id,
        "blob_key": job.key,
        "model": req.get("model"),
        "operation": req.get("operation"),
        "license": req.get("license"),
        **scored,
    }
    if on_row is not None:
        on_row(row)
    return row


def clips_from_batch(
    frame: Any, requests: Sequence[Mapping[str, Any]], client: Any, /
) -> list[Clip]:
    """One :class:`Clip` per completed row of a ``client.batch`` frame (``request`` is the
    row's index into ``requests``, the list the batch was given), its task and first file,
    with the asset's blob hash from the task (one GET each) so the cache is consulted
    before anything is downloaded."""
    out = []
    for i, row in frame.iterrows():
        if row.get("status") != "completed" or not row.get("file_ids"):
            continue
        task = client.generations.get(row["task_id"])
        assets = list(task.output.assets) if task.output is not None else []
        blob = assets[0].blob_hash if assets else None
        req = dict(requests[int(row["request"])])
        out.append(
            Clip(
                request=req,
                file_id=str(row["file_ids"][0]),
                blob_hash=blob,
                task_id=str(row["task_id"]),
                label=str(row.get("clip", i)),
            )
        )
    return out
