"""Fixed multi-step pipelines: song translation and the workflow routes.

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
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class WorkflowCall:
    """What a workflow's steps read: the task, its payload, its lyrics (or ""), and how long
    its new parts last (the source song's length, within the song range)."""

    ctx: TaskContext
    payload: dict[str, Any]
    lyrics: str
    seconds: float

    @classmethod
    def of(cls, ctx: TaskContext) -> WorkflowCall:
        return cls(ctx, ctx.payload, ctx.payload.get("lyrics") or "", _length(ctx, "song"))

    def song(self) -> AudioIn:
        """The workflow's source song (its ``song_file_id``)."""
        return self.ctx.audio_in("song")

    def separate(self, model: str) -> StepFn:
        """A step splitting the source song with the stem model ``model``."""
        return lambda ctx, done: ctx.render(
            "separate_stems", model, {}, inputs={"audio": self.song()}
        )


Steps = dict[str, StepFn]


def _beat_swaps(w: WorkflowCall) -> Steps:
    return {
        "separate": w.separate("2stem"),
        "beat": lambda ctx, done: ctx.render(
            "generate_music", "v5", {"prompt": w.payload["prompt"], "duration_seconds": w.seconds}
        ),
        "mix": lambda ctx, done: _mix(
            ctx, done["beat"].assets[0], _named(done["separate"], "vocals")
        ),
    }


def _karaoke_tracks(w: WorkflowCall) -> Steps:
    return {
        "separate": w.separate("2stem"),
        "render": lambda ctx, done: _master(ctx, _named(done["separate"], "instrumental")),
    }


def _drumless_mixes(w: WorkflowCall) -> Steps:
    return {
        "separate": w.separate("6-stem"),
        "mix": lambda ctx, done: _mix(
            ctx, *[a for a in done["separate"].assets if a.name != "drums"]
        ),
    }


def _revoicings(w: WorkflowCall) -> Steps:
    return {
        "separate": w.separate("2stem"),
        "sing": lambda ctx, done: ctx.render(
            "generate_singing",
            "v5",
            {"lyrics": w.lyrics, "duration_seconds": w.seconds},
            inputs={"vocal_reference": _audio(_named(done["separate"], "vocals"))},
            voice=ctx.voice(),
        ),
        "mix": lambda ctx, done: _mix(
            ctx, _named(done["separate"], "instrumental"), done["sing"].assets[0]
        ),
    }


def _instrument_layers(w: WorkflowCall) -> Steps:
    return {
        # the song as generate_music's input: the new part takes its tempo and key
        "part": lambda ctx, done: ctx.render(
            "generate_music",
            "v5",
            {"prompt": w.payload["instrument"], "duration_seconds": w.seconds},
            inputs={"song": w.song()},
        ),
        "mix": lambda ctx, done: _mix(ctx, w.song(), done["part"].assets[0]),
    }


def _hummed_songs(w: WorkflowCall) -> Steps:
    return {
        "song": lambda ctx, done: ctx.render(
            "melody_to_song",
            "v5",
            {"prompt": w.payload["prompt"], "lyrics": w.lyrics},
            inputs={"melody": ctx.audio_in("hum")},
        ),
        "render": lambda ctx, done: _master(ctx, done["song"].assets[0]),
    }


def _trending_songs(w: WorkflowCall) -> Steps:
    genre, prompt = w.payload["genre"], w.payload.get("prompt") or ""
    return {
        "search": lambda ctx, done: ctx.render(
            "web_search", "internal", {"query": f"trending {genre} songs"}
        ),
        "lyrics": lambda ctx, done: ctx.render(
            "write_lyrics", "v5", {"prompt": f"{genre} {prompt}"}
        ),
        "song": lambda ctx, done: ctx.render(
            "generate_song",
            "v5",
            {
                "prompt": f"{genre} {prompt}".strip(),
                "lyrics": w.lyrics or done["lyrics"].text or "",
            },
        ),
    }


def _voice_songs(w: WorkflowCall) -> Steps:
    return {
        "song": lambda ctx, done: ctx.render(
            "similar_song",
            "v5",
            {"prompt": w.payload["prompt"], "lyrics": w.lyrics},
            inputs={"song": ctx.audio_in("recording")},
        ),
        "render": lambda ctx, done: _master(ctx, done["song"].assets[0]),
    }


def _genre_remixes(w: WorkflowCall) -> Steps:
    return {
        "remix": lambda ctx, done: ctx.render(
            "remix_song", "v5", {"prompt": w.payload["genre"]}, inputs={"song": w.song()}
        ),
    }


def _midi_songs(w: WorkflowCall) -> Steps:
    return {
        "song": lambda ctx, done: ctx.render(
            "midi_to_song",
            "v5",
            {"prompt": w.payload["prompt"], "lyrics": w.lyrics},
            inputs={"midi": ctx.audio_in("midi")},
        ),
        "render": lambda ctx, done: _master(ctx, done["song"].assets[0]),
    }


def _vocal_layers(w: WorkflowCall) -> Steps:
    return {
        "sing": lambda ctx, done: ctx.render(
            "generate_singing",
            "v5",
            {"lyrics": w.lyrics, "duration_seconds": w.seconds},
            voice=ctx.voice(),
        ),
        "mix": lambda ctx, done: _mix(ctx, w.song(), done["sing"].assets[0]),
    }


def _audio_inpainting(w: WorkflowCall) -> Steps:
    p = w.payload
    return {
        "inpaint": lambda ctx, done: ctx.render(
            "inpaint",
            "v5",
            {"start_ms": p["start_ms"], "end_ms": p["end_ms"], "lyrics": w.lyrics},
            inputs={"song": w.song()},
        ),
    }


def _acapellas(w: WorkflowCall) -> Steps:
    return {
        "separate": w.separate("2stem"),
        "render": lambda ctx, done: _master(ctx, _named(done["separate"], "vocals")),
    }


# workflow route (the registry's path) -> its step functions, by the step names of its
# pipeline (spec: the route's ``Step`` s; pricing.WORKFLOW_PIPELINES)
WORKFLOW_STEPS: dict[str, Callable[[WorkflowCall], Steps]] = {
    "beat-swaps": _beat_swaps,
    "karaoke-tracks": _karaoke_tracks,
    "drumless-mixes": _drumless_mixes,
    "revoicings": _revoicings,
    "instrument-layers": _instrument_layers,
    "hummed-songs": _hummed_songs,
    "trending-songs": _trending_songs,
    "voice-songs": _voice_songs,
    "genre-remixes": _genre_remixes,
    "midi-songs": _midi_songs,
    "vocal-layers": _vocal_layers,
    "audio-inpainting": _audio_inpainting,
    "acapellas": _acapellas,
}


def run_workflow(ctx: TaskContext) -> Outcome:
    route = ctx.operation
    charges, result = _run_steps(
        ctx,
        WORKFLOW_PIPELINES[route],
        WORKFLOW_STEPS[route](WorkflowCall.of(ctx)),
        {},
        "workflow_step",
    )
    return _finish(
        ctx, result, charges, {"workflow": route}, [s.name for s in WORKFLOW_PIPELINES[route]]
    )
