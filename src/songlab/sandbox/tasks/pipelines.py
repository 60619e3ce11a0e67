"""Fixed multi-step pipelines: song translation and the twelve workflow routes.

Each step of ``pricing.TRANSLATION_PIPELINE`` / ``pricing.WORKFLOW_PIPELINES`` is
one engine call, announced by two ``progress`` events (``step``, ``phase``
started / finished) and billed as one ledger line at the rate of the step's
tool in the task's license tier (``translation_step`` / ``workflow_step``). The
lines are written with the completion, in one transaction; a failed pipeline
leaves none. Song translation's transcription step is free (a zero line) when
the account already transcribed the same song (the transcription cache).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from songlab.pricing import TRANSLATION_PIPELINE, WORKFLOW_PIPELINES, Step
from songlab.sandbox.engine import Asset, AudioIn, RenderResult
from songlab.sandbox.storage.billing import usd
from songlab.sandbox.tasks.context import Charge, Outcome, TaskContext
from songlab.sandbox.tasks.generation import remember_transcript, transcript
from songlab.spec import REGISTRY

STEP_SECONDS = 1.0
State = dict[str, Any]
StepFn = Callable[[TaskContext, State], RenderResult]


def _audio(asset: Asset) -> AudioIn:
    return AudioIn(asset.data, asset.mime_type, asset.recipe)


def _named(result: RenderResult, *names: str) -> Asset:
    for a in result.assets:
        if a.name in names:
            return a
    return result.assets[0]


def _run_steps(
    ctx: TaskContext, steps: tuple[Step, ...], fns: dict[str, StepFn], state: State, kind: str
) -> tuple[list[Charge], RenderResult]:
    charges: list[Charge] = []
    result = RenderResult()
    n = len(steps)
    for i, step in enumerate(steps):
        ctx.progress(i / n, step=step.name, phase="started")
        ctx.sleep(STEP_SECONDS)
        result = fns[step.name](ctx, state)
        state[step.name] = result
        units = 0 if state.pop("_free", False) else None
        charges.append(ctx.charge(kind, step.operation, step.model, units))
        ctx.progress((i + 1) / n, step=step.name, phase="finished")
    return charges, result


def _finish(
    ctx: TaskContext,
    result: RenderResult,
    charges: list[Charge],
    metadata: dict[str, Any],
    names: list[str],
) -> Outcome:
    assets = [ctx.store_asset(a) for a in result.assets]
    if assets:
        ctx.emit(
            "streaming_url", url=ctx.signed_url(assets[0]["file_id"]), file_id=assets[0]["file_id"]
        )
    metadata = {
        **metadata,
        "steps": [
            {
                "step": name,
                "operation": c.operation,
                "model": c.model,
                "tool_id": c.tool_id,
                "amount_usd": usd(c.units),
            }
            for name, c in zip(names, charges, strict=True)
        ],
    }
    return Outcome(text=result.text, metadata=metadata, assets=assets or None, charges=charges)


# --- song translation ------------------------------------------------------------------


def run_translation(ctx: TaskContext) -> Outcome:
    p = ctx.payload
    song = ctx.audio_in("song")
    st: State = {}

    def transcribe(c: TaskContext, s: State) -> RenderResult:
        cached = transcript(c.store, c.account_id, c.inputs["song"])
        if cached is not None:
            s["_free"] = True
            s["cache_hit"] = True
            return RenderResult(text=cached[0], metadata=cached[1])
        r = c.render("transcribe", "whisper-transcribe-v1", {}, inputs={"audio": song})
        remember_transcript(c.store, c.account_id, c.inputs["song"], r)
        return r

    fns: dict[str, StepFn] = {
        "transcribe": transcribe,
        "translate": lambda c, s: c.render(
            "translate_lyrics",
            "v5",
            {
                "lyrics": s["transcribe"].text or "",
                "target_language": p["target_language"],
                "syllable_matched": p.get("syllable_matched", True),
            },
        ),
        "separate": lambda c, s: c.render("separate_stems", "2stem", {}, inputs={"audio": song}),
        "revoice": lambda c, s: c.render(
            "generate_singing",
            "v5",
            {
                "lyrics": s["translate"].text or "",
                "prompt": p["song_style"],
                "duration_seconds": _length(c, "song"),
            },
            inputs={"vocal_reference": _audio(_named(s["separate"], "vocals"))},
        ),
        "layer": lambda c, s: c.render(
            "mix",
            "v5",
            {},
            inputs={
                "track0": _audio(_named(s["separate"], "instrumental")),
                "track1": _audio(s["revoice"].assets[0]),
            },
        ),
        "render": lambda c, s: c.render(
            "audio_effect",
            "v5",
            {"effect": "normalize", "amount": 1.0},
            inputs={"audio": _audio(s["layer"].assets[0])},
        ),
    }
    charges, result = _run_steps(ctx, TRANSLATION_PIPELINE, fns, st, "translation_step")
    metadata = {
        "target_language": p["target_language"],
        "syllable_matched": p.get("syllable_matched", True),
        "source_lyrics": st["transcribe"].text,
        "translated_lyrics": st["translate"].text,
        "transcription_cache_hit": bool(st.get("cache_hit")),
    }
    return _finish(ctx, result, charges, metadata, [s.name for s in TRANSLATION_PIPELINE])


# --- workflows ----------------------------------------------------------------------------


def _mix(c: TaskContext, *tracks: Asset | AudioIn) -> RenderResult:
    ins = {f"track{i}": (t if isinstance(t, AudioIn) else _audio(t)) for i, t in enumerate(tracks)}
    return c.render("mix", "v5", {}, inputs=ins)


def _master(c: TaskContext, a: Asset) -> RenderResult:
    return c.render(
        "audio_effect", "v5", {"effect": "normalize", "amount": 1.0}, inputs={"audio": _audio(a)}
    )


def _length(ctx: TaskContext, name: str) -> float:
    """New parts (a beat, a sung vocal, a layer) last as long as the source, within the song
    range of the registry (5-240 s; 30 s when the source's length is unknown)."""
    f = REGISTRY["generate_song"].field("duration_seconds")
    lo, hi, default = float(f.min or 0.0), float(f.max or 0.0), float(f.default or 0.0)
    return float(min(max(ctx.durations.get(name) or default, lo), hi))


def _workflow_fns(ctx: TaskContext, route: str) -> dict[str, StepFn]:
    p = ctx.payload
    lyrics = p.get("lyrics") or ""
    n = _length(ctx, "song")

    def song() -> AudioIn:
        return ctx.audio_in("song")

    def sep(model: str) -> StepFn:
        return lambda c, s: c.render("separate_stems", model, {}, inputs={"audio": song()})

    table: dict[str, dict[str, StepFn]] = {
        "beat-swaps": {
            "separate": sep("2stem"),
            "beat": lambda c, s: c.render(
                "generate_music", "v5", {"prompt": p["prompt"], "duration_seconds": n}
            ),
            "mix": lambda c, s: _mix(c, s["beat"].assets[0], _named(s["separate"], "vocals")),
        },
        "karaoke-tracks": {
            "separate": sep("2stem"),
            "render": lambda c, s: _master(c, _named(s["separate"], "instrumental")),
        },
        "drumless-mixes": {
            "separate": sep("6-stem"),
            "mix": lambda c, s: _mix(c, *[a for a in s["separate"].assets if a.name != "drums"]),
        },
        "revoicings": {
            "separate": sep("2stem"),
            "sing": lambda c, s: c.render(
                "generate_singing",
                "v5",
                {"lyrics": lyrics, "duration_seconds": n},
                inputs={"vocal_reference": _audio(_named(s["separate"], "vocals"))},
                voice=c.voice(),
            ),
            "mix": lambda c, s: _mix(c, _named(s["separate"], "instrumental"), s["sing"].assets[0]),
        },
        "instrument-layers": {
            # the song as generate_music's input: the new part takes its tempo and key
            "part": lambda c, s: c.render(
                "generate_music",
                "v5",
                {"prompt": p["instrument"], "duration_seconds": n},
                inputs={"song": song()},
            ),
            "mix": lambda c, s: _mix(c, song(), s["part"].assets[0]),
        },
        "hummed-songs": {
            "song": lambda c, s: c.render(
                "melody_to_song",
                "v5",
                {"prompt": p["prompt"], "lyrics": lyrics},
                inputs={"melody": c.audio_in("hum")},
            ),
            "render": lambda c, s: _master(c, s["song"].assets[0]),
        },
        "trending-songs": {
            "search": lambda c, s: c.render(
                "web_search", "internal", {"query": f"trending {p['genre']} songs"}
            ),
            "lyrics": lambda c, s: c.render(
                "write_lyrics", "v5", {"prompt": f"{p['genre']} {p.get('prompt') or ''}"}
            ),
            "song": lambda c, s: c.render(
                "generate_song",
                "v5",
                {
                    "prompt": f"{p['genre']} {p.get('prompt') or ''}".strip(),
                    "lyrics": lyrics or s["lyrics"].text or "",
                },
            ),
        },
        "voice-songs": {
            "song": lambda c, s: c.render(
                "similar_song",
                "v5",
                {"prompt": p["prompt"], "lyrics": lyrics},
                inputs={"song": c.audio_in("recording")},
            ),
            "render": lambda c, s: _master(c, s["song"].assets[0]),
        },
        "genre-remixes": {
            "remix": lambda c, s: c.render(
                "remix_song", "v5", {"prompt": p["genre"]}, inputs={"song": song()}
            ),
        },
        "midi-songs": {
            "song": lambda c, s: c.render(
                "midi_to_song",
                "v5",
                {"prompt": p["prompt"], "lyrics": lyrics},
                inputs={"midi": c.audio_in("midi")},
            ),
            "render": lambda c, s: _master(c, s["song"].assets[0]),
        },
        "vocal-layers": {
            "sing": lambda c, s: c.render(
                "generate_singing", "v5", {"lyrics": lyrics, "duration_seconds": n}, voice=c.voice()
            ),
            "mix": lambda c, s: _mix(c, song(), s["sing"].assets[0]),
        },
        "audio-inpainting": {
            "inpaint": lambda c, s: c.render(
                "inpaint",
                "v5",
                {"start_ms": p["start_ms"], "end_ms": p["end_ms"], "lyrics": lyrics},
                inputs={"song": song()},
            ),
        },
    }
    return table[route]


def run_workflow(ctx: TaskContext) -> Outcome:
    route = ctx.operation
    charges, result = _run_steps(
        ctx, WORKFLOW_PIPELINES[route], _workflow_fns(ctx, route), {}, "workflow_step"
    )
    return _finish(
        ctx, result, charges, {"workflow": route}, [s.name for s in WORKFLOW_PIPELINES[route]]
    )
