"""An adherence study: many clips measured once each, on every core, in bounded memory.

``analyse(clips)`` -> one row per clip (:mod:`songlab.audio.adherence`'s columns, with
the clip's model, operation, license and task). Each measurement is cached by the
clip's blob hash and the measure's version (:class:`AnalysisCache`, one SQLite file),
so a clip is measured once whatever runs it again; a new measure version measures
again. Clips are measured in worker processes (one per core), fed a few at a time, so
memory holds only the clips in flight whatever the study's size; a progress bar shows
the clips done (tqdm: a widget in a notebook, a line on a terminal).

Lyrics cost money: with ``lyrics_budget_usd=`` the study buys the service's transcription
of each clip that asked for lyrics and has none yet (:mod:`songlab.audio.lyrics`: priced
first, refused whole over the budget, through the client's record), keeps each transcript
in the cache by the clip's blob hash, and scores the word error rate. Without it, only
transcripts already held are scored. :func:`lyrics_price` shows the price beforehand.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import numpy as np

import songlab.audio.adherence as adh
import songlab.audio.lyrics as ly
import songlab.audio.measures as ms
from songlab.audio._audio_error import AudioError

__all__ = [
    "AnalysisCache",
    "CACHE_ENV",
    "Clip",
    "LyricsPrice",
    "WORKER_MODULES",
    "analyse",
    "clips_from_batch",
    "default_cache_path",
    "lyrics_price",
    "measure_clip",
    "provenance",
]

CACHE_ENV: Final = "SONGLAB_ANALYSIS_CACHE"
# imported once by the worker pool's server process, so every worker starts with them in
# memory (librosa loads its submodules lazily and compiles its numba kernels on import:
# "librosa" alone would leave each worker 2-4 s of importing on its first clip)
WORKER_MODULES: Final = (
    "songlab.audio.study",
    "librosa.core.spectrum",
    "librosa.filters",
    "librosa.onset",
    "librosa.feature.rhythm",
    "librosa.util",
    "scipy.signal",
    "scipy.ndimage",
    "soxr",
    "soundfile",
    "pyloudnorm",
    "threadpoolctl",
)
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
            # a cache: a power cut may lose the last measurements (measured again), never
            # corrupt the file; without it every clip's row waits for an fsync
            con.execute("PRAGMA synchronous = NORMAL")
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
    worker process: JSON-able values only. The clip is decoded once and resampled once."""
    import songlab.codec as codec

    out: dict[str, Any] = {}
    if any(m in need for m in (*BASE, "melody")):
        samples, sr = codec.decode(data)
        if any(m in need for m in BASE):
            got = adh.heard(samples, sr=sr, melody="melody" in need)
            out.update(
                duration=[got.duration_s, got.sr, got.channels],
                tempo=got.tempo_bpm,
                key=[got.key, got.key_strength],
                loudness=_json_float(got.loudness_lufs),
                true_peak=[_json_float(got.true_peak_dbtp), got.clipped_samples],
            )
            if got.melody is not None:
                out["melody"] = _contour(got.melody)
        else:
            out["melody"] = _contour(ms.melody_contour(samples, sr=sr))
    if "reference" in need and reference is not None:
        kind, ref = reference
        if kind == "midi":
            out["reference"] = _contour(ms.midi_contour(ref))
        else:
            rs, rsr = codec.decode(ref)
            out["reference"] = _contour(ms.pitch_contour(rs, sr=rsr))
    return {k: v for k, v in out.items() if k in need}


def _measure_in_worker(
    data: bytes, need: Sequence[str], reference: tuple[str, bytes] | None
) -> tuple[dict[str, Any], tuple[int, float, int]]:
    """:func:`measure_clip` in a pool worker, with the worker's pid, CPU seconds since it
    started and peak resident memory (KiB) so far."""
    import resource

    out = measure_clip(data, need, reference)
    use = resource.getrusage(resource.RUSAGE_SELF)
    return out, (os.getpid(), use.ru_utime + use.ru_stime, int(use.ru_maxrss))


def _init_worker() -> None:
    """One BLAS thread per worker: the pool already keeps every core busy, and BLAS
    threads of two workers fighting over two cores cost 7x the CPU of a mel filter bank."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


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
    ctx.set_forkserver_preload(list(WORKER_MODULES))
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker)


@dataclass
class _Usage:
    """What measuring cost: CPU seconds (each worker's own, or this process's time inside
    :func:`measure_clip`) and the largest worker's peak memory."""

    cpu_by_worker: dict[int, float] = field(default_factory=dict)
    local_cpu_s: float = 0.0
    peak_rss_kib: int = 0

    def worker(self, report: tuple[int, float, int]) -> None:
        pid, cpu, rss = report
        self.cpu_by_worker[pid] = max(self.cpu_by_worker.get(pid, 0.0), cpu)
        self.peak_rss_kib = max(self.peak_rss_kib, rss)

    @property
    def cpu_s(self) -> float:
        return self.local_cpu_s + sum(self.cpu_by_worker.values())


@dataclass(frozen=True, slots=True)
class LyricsPrice:
    """What lyrics scoring would buy (nothing is sent to know it): ``calls`` transcriptions
    of ``file_ids`` at the list price ``usd`` (at most: calls the client's record already
    holds re-attach for free), ``held`` clips whose transcript is already known, and
    ``asked`` clips asking for lyrics in all."""

    calls: int
    usd: Decimal
    held: int
    asked: int
    file_ids: tuple[str, ...] = ()

    def __str__(self) -> str:
        return (
            f"lyrics: {self.asked} clip(s) ask for lyrics, {self.held} transcript(s) held; "
            f"{self.calls} transcription(s) to buy at list price ${self.usd} "
            f"({ly.TRANSCRIBE['model']})"
        )


def _store_of(cache: AnalysisCache | str | os.PathLike[str] | bool) -> AnalysisCache | None:
    if cache is False:
        return None
    if isinstance(cache, AnalysisCache):
        return cache
    return AnalysisCache(None if cache is True else cache)


def _lyrics_plan(
    clips: Sequence[Clip], store: AnalysisCache | None
) -> tuple[dict[int, str], list[int], dict[str, list[int]]]:
    """``(known transcripts by clip index, indices asking lyrics, indices by file id to
    transcribe)``. Raises :class:`AudioError` for a clip that asks lyrics without a file."""
    known: dict[int, str] = {}
    asking: list[int] = []
    todo: dict[str, list[int]] = {}
    for i, clip in enumerate(clips):
        if not isinstance(clip, Clip):
            raise AudioError(f"clips[{i}]", "must be a songlab.audio.study.Clip")
        if adh.asked(clip.request).lyrics is None:
            continue
        asking.append(i)
        if clip.transcript is not None:
            known[i] = clip.transcript
            continue
        if store is not None and (clip.blob_hash or clip.data is not None):
            got = store.get(clip.key(), ["transcript"])
            if "transcript" in got:
                known[i] = str(got["transcript"])
                continue
        if not clip.file_id:
            raise AudioError(
                f"clips[{i}]",
                "asks for lyrics but has no file_id: the service transcribes its own files "
                "(give the clip's file_id, or its transcript)",
            )
        todo.setdefault(clip.file_id, []).append(i)
    return known, asking, todo


def lyrics_price(
    clips: Sequence[Clip],
    /,
    *,
    client: Any,
    cache: AnalysisCache | str | os.PathLike[str] | bool = True,
) -> LyricsPrice:
    """The price of scoring the lyrics of ``clips``: one transcription per file of a clip
    that asks for lyrics (``lyrics`` in its request) and whose transcript is not held (on
    the clip or in ``cache``). Nothing is sent."""
    clips = list(clips)
    known, asking, todo = _lyrics_plan(clips, _store_of(cache))
    usd = ly.price(client, list(todo)) if todo else Decimal(0)
    return LyricsPrice(len(todo), usd, len(known), len(asking), tuple(todo))


def _buy_transcripts(
    clips: list[Clip],
    store: AnalysisCache | None,
    client: Any,
    budget_usd: Decimal | int | str,
) -> tuple[list[Clip], dict[str, Any]]:
    """The clips with every transcript held or bought now (within ``budget_usd``)."""
    if client is None:
        raise AudioError("client", "is needed to buy transcriptions (lyrics_budget_usd=)")
    known, asking, todo = _lyrics_plan(clips, store)
    got = ly.transcribe(client, list(todo), budget_usd=budget_usd) if todo else None
    for fid, idx in todo.items():
        text = got.text.get(fid) if got is not None else None
        if text is None:
            continue
        for i in idx:
            known[i] = text
            if store is not None:
                store.put(clips[i].key(), {"transcript": text})  # paid: kept at once
    out = [replace(c, transcript=known[i]) if i in known else c for i, c in enumerate(clips)]
    report = {
        "asked": len(asking),
        "transcribed_now": 0 if got is None else len(got.text),
        "reattached": 0 if got is None or got.batch is None else int(got.batch.reused),
        "new_usd": str(Decimal(0) if got is None else got.new_usd),
        "cost_source": "none" if got is None else got.cost_source,
        "missing": {} if got is None else dict(got.missing),
    }
    return out, report


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
    lyrics_budget_usd: Decimal | int | str | None = None,
) -> Any:  # pandas DataFrame
    """Measure every clip and score it against its request -> a frame, one row per clip.

    ``clips``: :class:`Clip` values (any iterable: a generator keeps a study of thousands
    in bounded memory; only ``2 x workers`` clips' bytes are held at once). ``client``:
    fetches clips given by ``file_id`` (from the client's asset cache when it holds them)
    and the melody or MIDI a melody/MIDI-to-song request sent. ``cache``: True (the default
    :class:`AnalysisCache`), a path, a cache, or False. ``workers``: processes (default:
    every core; 1 measures in this process). ``progress``: a bar (None: tqdm decides, on
    when interactive). ``lyrics_budget_usd``: score the lyrics, buying the service's
    transcription of each clip that asks for lyrics and has none held, all priced first
    and refused whole (``BudgetExceeded``, nothing sent, nothing measured) when their list
    price is over it (:func:`lyrics_price` shows it); the clips are then listed first.
    Without it, only transcripts already held are scored.

    The frame's ``attrs``: ``provenance`` (every measure's), ``cpu_s`` (CPU seconds spent
    measuring, in the workers or here), ``worker_peak_rss_mib`` and ``lyrics`` (what lyrics
    scoring asked, bought and cost).
    """
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
    ):
        raise AudioError("workers", f"must be a whole number of processes >= 1; got {workers!r}")
    store = _store_of(cache)
    n_workers = workers if workers is not None else (os.cpu_count() or 1)
    lyrics_report: dict[str, Any] = {}
    if lyrics_budget_usd is not None:
        clips, lyrics_report = _buy_transcripts(list(clips), store, client, lyrics_budget_usd)
    if total is None and isinstance(clips, Sequence):
        total = len(clips)
    rows: dict[int, dict[str, Any]] = {}
    usage = _Usage()
    bar = _progress(total, progress)
    jobs = _jobs(clips, store, client)
    try:
        if n_workers == 1:
            _measure_here(jobs, rows, client, store, on_row, bar, usage)
        else:
            _measure_in_workers(jobs, rows, n_workers, client, store, on_row, bar, usage)
    finally:
        bar.close()
    return _frame(rows, usage, lyrics_report)


def _measure_here(
    jobs: Iterator[_Job],
    rows: dict[int, dict[str, Any]],
    client: Any,
    store: AnalysisCache | None,
    on_row: Callable[[dict[str, Any]], None] | None,
    bar: Any,
    usage: _Usage,
) -> None:
    """Measure every job in this process (``workers=1``), its CPU counted as local."""
    for job in jobs:
        t0 = time.process_time()
        measured = _run(job, client)
        usage.local_cpu_s += time.process_time() - t0
        rows[job.index] = _finish(job, measured, store, on_row)
        bar.update(1)


def _measure_in_workers(
    jobs: Iterator[_Job],
    rows: dict[int, dict[str, Any]],
    n_workers: int,
    client: Any,
    store: AnalysisCache | None,
    on_row: Callable[[dict[str, Any]], None] | None,
    bar: Any,
    usage: _Usage,
) -> None:
    """Measure in a pool of ``n_workers`` processes, at most ``2 x n_workers`` jobs (and
    their bytes) in flight; a job whose measures are all cached is finished here."""
    with _pool(n_workers) as pool:
        pending: dict[cf.Future[Any], _Job] = {}
        for job in jobs:
            if not job.need:
                rows[job.index] = _finish(job, {}, store, on_row)
                bar.update(1)
                continue
            pending[_submit(pool, job, client)] = job
            while len(pending) >= 2 * n_workers:
                _drain(pending, rows, store, on_row, bar, usage)
        while pending:
            _drain(pending, rows, store, on_row, bar, usage)


def _frame(
    rows: dict[int, dict[str, Any]], usage: _Usage, lyrics_report: dict[str, Any]
) -> Any:  # pandas DataFrame
    """The rows in clip order, with the study's provenance, CPU and lyrics in ``attrs``."""
    import pandas as pd

    frame = pd.DataFrame([rows[i] for i in sorted(rows)])
    frame.attrs["provenance"] = provenance()
    frame.attrs["cpu_s"] = usage.cpu_s
    frame.attrs["worker_peak_rss_mib"] = usage.peak_rss_kib / 1024
    scored = unscored = 0
    if len(frame):
        asked, held = frame["asked_lyrics"].notna(), frame["lyrics_wer"].notna()
        scored, unscored = int((asked & held).sum()), int((asked & ~held).sum())
    # unscored: asked, but no transcript held
    frame.attrs["lyrics"] = {**lyrics_report, "scored": scored, "unscored": unscored}
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


def _args(job: _Job, client: Any) -> tuple[bytes, list[str], tuple[str, bytes] | None]:
    clip = _fetch(job.clip, client) if any(m != "reference" for m in job.need) else job.clip
    ref = (job.ask.melody or "melody", clip.reference) if clip.reference is not None else None
    return clip.data or b"", job.need, ref


def _run(job: _Job, client: Any) -> dict[str, Any]:
    return measure_clip(*_args(job, client)) if job.need else {}


def _submit(pool: cf.ProcessPoolExecutor, job: _Job, client: Any) -> cf.Future[Any]:
    return pool.submit(_measure_in_worker, *_args(job, client))


def _drain(
    pending: dict[cf.Future[Any], _Job],
    rows: dict[int, dict[str, Any]],
    store: AnalysisCache | None,
    on_row: Callable[[dict[str, Any]], None] | None,
    bar: Any,
    usage: _Usage,
) -> None:
    done, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
    for fut in done:
        job = pending.pop(fut)
        measured, report = fut.result()
        usage.worker(report)
        rows[job.index] = _finish(job, measured, store, on_row)
        bar.update(1)


def _finish(
    job: _Job,
    measured: dict[str, Any],
    store: AnalysisCache | None,
    on_row: Callable[[dict[str, Any]], None] | None,
) -> dict[str, Any]:
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


def _batch_rows(batch: Any) -> list[dict[str, Any]]:
    """The rows of ``client.batch``'s result (a ``BatchResult``) or of its frame
    (``songlab.widgets.batch``, ``songlab.ledger.batch_frame``) as dicts."""
    rows = getattr(batch, "rows", None)
    if isinstance(rows, tuple):
        return [{name: getattr(r, name) for name in BATCH_FIELDS} for r in rows]
    if hasattr(batch, "iterrows") and hasattr(batch, "columns"):
        missing = [c for c in BATCH_FIELDS if c not in batch.columns]
        if missing:
            raise AudioError("batch", f"the batch frame has no {missing[0]!r} column")
        return [{name: row[name] for name in BATCH_FIELDS} for _, row in batch.iterrows()]
    raise AudioError(
        "batch", f"must be client.batch's result or its frame; got {type(batch).__name__}"
    )


BATCH_FIELDS: Final = ("request", "task_id", "status", "file_ids")


def clips_from_batch(
    batch: Any, requests: Sequence[Mapping[str, Any]], client: Any, /
) -> list[Clip]:
    """One :class:`Clip` per completed row of a batch (``client.batch``'s result, or the
    frame of ``songlab.widgets.batch``): its request (the row's ``request`` index into
    ``requests``, the list the batch was given), its task and first file, with the asset's
    blob hash from the task (one GET each) so the cache is consulted before anything is
    downloaded. Each clip is labelled ``request N`` (its index into ``requests``)."""
    out = []
    for row in _batch_rows(batch):
        if row["status"] != "completed" or row["file_ids"] is None or not len(row["file_ids"]):
            continue
        task = client.generations.get(row["task_id"])
        assets = list(task.output.assets) if task.output is not None else []
        blob = assets[0].blob_hash if assets else None
        index = int(row["request"])
        req = dict(requests[index])
        out.append(
            Clip(
                request=req,
                file_id=str(row["file_ids"][0]),
                blob_hash=blob,
                task_id=str(row["task_id"]),
                label=f"request {index}",
            )
        )
    return out
