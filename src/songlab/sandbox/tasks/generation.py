"""Runners of single-tool tasks: a generation, a voice clone, and Agent One's stand-in.

Simulated work time per operation (:data:`SIM_SECONDS`, divided by ``--speed``)
is spread over a fixed series of events, so every speed shows the same states
and events: progress 0 (processing), the render, ``streaming_url`` (a signed
link to the output being produced), then one progress event every
:data:`~songlab.sandbox.tasks.context.PROGRESS_TICK` simulated seconds up to 1.0 (a
5 s song: 20, every 5 %) with ``partial_output`` (an excerpt as its own file) right
after 0.5, then ``terminal``.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from typing import Any

import songlab.sandbox.engine as engine
from songlab.sandbox.storage import file_store as storage
from songlab.sandbox.storage.db import Store
from songlab.sandbox.tasks.context import CPU_GATE, Outcome, TaskContext
from songlab.spec import LIMITS, REGISTRY

# The registry's simulated seconds of each operation (divided by --speed).
SIM_SECONDS: dict[str, float] = {name: op.sim_seconds for name, op in REGISTRY.items()}
PARTIAL_SECONDS = 5.0
MATCH_THRESHOLD = 0.9
_AT_MIN, _AT_MAX = int(LIMITS["extend_at_ms_min"]), int(LIMITS["extend_at_ms_max"])


def clamp_extend_at(value: Any) -> int:
    """0 stays 0 (continue from the end); anything else is clamped into 8000-420000."""
    v = int(value or 0)
    if v <= 0:
        return 0
    return min(max(v, _AT_MIN), _AT_MAX)


def run_generation(ctx: TaskContext) -> Outcome:
    op, total = ctx.operation, SIM_SECONDS.get(ctx.operation, 3.0)
    payload = {k: v for k, v in ctx.payload.items() if k not in ctx.inputs and k != "vocal_id"}
    metadata: dict[str, Any] = {}
    if op == "extend_song":
        applied = clamp_extend_at(ctx.payload.get("extend_at_ms"))
        metadata["extend_at_ms"] = applied
        if ctx.payload.get("extend_at_ms") not in (None, applied):
            metadata["requested_extend_at_ms"] = ctx.payload["extend_at_ms"]
        payload["extend_at_ms"] = applied
    ctx.sleep(total * 0.1)
    inputs = {name: ctx.audio_in(name) for name in ctx.inputs}
    cached = (
        transcript(ctx.store, ctx.account_id, ctx.inputs["audio"]) if op == "transcribe" else None
    )
    if cached is not None:
        result = engine.RenderResult(text=cached[0], metadata={**cached[1], "cache_hit": True})
    else:
        result = ctx.render(op, ctx.model, payload, inputs=inputs, voice=ctx.voice())
        if op == "transcribe":
            remember_transcript(ctx.store, ctx.account_id, ctx.inputs["audio"], result)
    assets = [ctx.store_asset(a) for a in result.assets]
    if assets:
        ctx.emit(
            "streaming_url", url=ctx.signed_url(assets[0]["file_id"]), file_id=assets[0]["file_id"]
        )
    partial_done = not assets
    for fraction in ctx.advance(total * 0.9, 0.0, 1.0):
        if fraction >= 0.5 and not partial_done:
            _partial(ctx, result.assets[0])
            partial_done = True
    if op == "copyright":
        metadata.update(copyright_check(ctx))
    metadata = {**result.metadata, **metadata}
    return Outcome(text=result.text, metadata=metadata, assets=assets or None)


def _partial(ctx: TaskContext, asset: engine.Asset) -> None:
    seconds = min(PARTIAL_SECONDS, max(asset.duration_s / 2, 0.5))
    with CPU_GATE:
        data = engine.excerpt(asset.data, seconds)
    part = engine.Asset(f"{asset.name}-partial", data, "audio/mpeg", seconds, {})
    stored = ctx.store_asset(part, origin="partial")
    stored["url"] = ctx.base_url + stored["url"]
    ctx.emit("partial_output", asset=stored, signed_url=ctx.signed_url(stored["file_id"]))


def _meta(store: Store, file_id: str) -> dict[str, Any]:
    """A task's input file (it exists: validation resolved it and files are never deleted)."""
    meta = storage.meta(store, file_id)
    if meta is None:
        raise KeyError(file_id)
    return meta


# --- transcription cache -------------------------------------------------------------


def transcript(store: Store, account_id: str, file_id: str) -> tuple[str, dict[str, Any]] | None:
    sha = _meta(store, file_id)["sha256"]
    row = store.one(
        "SELECT text, metadata FROM transcripts WHERE account_id = ? AND sha256 = ?",
        (account_id, sha),
    )
    return None if row is None else (row[0], json.loads(row[1]))


def remember_transcript(
    store: Store, account_id: str, file_id: str, result: engine.RenderResult
) -> None:
    sha = _meta(store, file_id)["sha256"]
    store.execute(
        "INSERT OR REPLACE INTO transcripts (account_id, sha256, text, metadata) VALUES (?,?,?,?)",
        (account_id, sha, result.text or "", json.dumps(result.metadata, default=str)),
    )


# --- copyright -------------------------------------------------------------------------


def copyright_check(ctx: TaskContext) -> dict[str, Any]:
    """Match the input against earlier outputs: exact bytes, then a near-copy fingerprint."""
    store, fid = ctx.store, ctx.inputs["audio"]
    meta = _meta(store, fid)
    rows = store.all(
        "SELECT id, account_id, task_id, sha256, duration_s, fingerprint FROM files "
        "WHERE origin = 'output' AND created_at <= ? AND mime_type LIKE 'audio/%'",
        (ctx.now(),),
    )
    exact = [r for r in rows if r["sha256"] == meta["sha256"]]
    best: tuple[float, Any] = (0.0, None)
    if exact:
        best = (1.0, _prefer_foreign(exact, ctx.account_id))
    else:
        duration = ctx.durations.get("audio") or 0.0
        fp = None
        for r in rows:
            if r["duration_s"] is None or abs(r["duration_s"] - duration) > max(
                1.0, 0.1 * duration
            ):
                continue
            if fp is None:
                with CPU_GATE:
                    fp = engine.fingerprint(storage.data(store, fid))
            other = r["fingerprint"]
            if other is None:
                with CPU_GATE:
                    other = engine.fingerprint(storage.data(store, r["id"]))
                store.execute("UPDATE files SET fingerprint = ? WHERE id = ?", (other, r["id"]))
            sim = engine.similarity(fp, other)
            foreign_better = (
                r["account_id"] != ctx.account_id
                and best[1] is not None
                and best[1]["account_id"] == ctx.account_id
                and sim >= MATCH_THRESHOLD
            )
            if sim > best[0] or foreign_better:
                best = (sim, r)
    similarity, match = best
    if match is None or similarity < MATCH_THRESHOLD:
        return {"matched": False, "similarity": round(similarity, 4), "match": None}
    if match["account_id"] == ctx.account_id:
        detail = {"owner": "self", "task_id": match["task_id"], "file_id": match["id"]}
    else:
        detail = {"owner": "another_account"}
    return {"matched": True, "similarity": round(similarity, 4), "match": detail}


def _prefer_foreign(rows: list[sqlite3.Row], account_id: str) -> sqlite3.Row:
    foreign = [r for r in rows if r["account_id"] != account_id]
    return (foreign or rows)[0]


# --- voice clone -------------------------------------------------------------------------


def run_voice_clone(ctx: TaskContext) -> Outcome:
    total = SIM_SECONDS["vocal_clone"]
    for _ in ctx.advance(total * 0.2, 0.0, 0.3):
        pass
    reference = storage.data(ctx.store, ctx.inputs["reference"])
    with CPU_GATE:
        timbre = engine.extract_voice(reference)
    for _ in ctx.advance(total * 0.8, 0.3, 1.0):
        pass
    vocal_id = "voice_" + uuid.uuid4().hex
    consent_id = ctx.payload["consent_id"]
    payload = ctx.payload

    def save(store: Store) -> None:
        store.execute(
            "INSERT INTO voices (id, account_id, consent_id, task_id, name, description, version, "
            "timbre, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                vocal_id,
                ctx.account_id,
                consent_id,
                ctx.task_id,
                payload.get("name"),
                payload.get("description"),
                ctx.model,
                json.dumps(timbre.to_dict()),
                ctx.now(),
            ),
        )

    return Outcome(
        metadata={
            "vocal_id": vocal_id,
            "consent_id": consent_id,
            "version": ctx.model,
            "name": payload.get("name"),
        },
        charges=[ctx.charge("voice_clone", ctx.operation, ctx.model)],
        finalize=save,
    )
