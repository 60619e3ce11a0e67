"""Music-making operations: songs, music, singing, similar, melody/MIDI to song, remix.

Each returns ``(recipe, metadata)`` for a layered recipe, or a finished
:class:`RenderResult` when the output mixes foreign audio. The composition
seed depends on the request (prompt, lyrics, seed), never on the model: the
same request on v5, v6 and v7 is the same song rendered by three models.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

import songlab.sandbox.engine.arrange as arrange
import songlab.sandbox.engine.melody as melody
import songlab.sandbox.engine.midi as midi
import songlab.sandbox.engine.recipe as recipe
import songlab.sandbox.engine.song as song
from songlab.sandbox.engine._ops_shared import (
    Src,
    clamp,
    default_voice,
    get_input,
    rng_of,
    seed_of,
    voice_dict,
)
from songlab.sandbox.engine._types import (
    AudioIn,
    EngineInputError,
    Metadata,
    Recipe,
    RenderError,
    Score,
    Voice,
    VoiceDict,
)
from songlab.sandbox.engine.prompt import Plan, follow, plan_from_prompt
from songlab.sandbox.engine.text import _INVENTORY, language_code, words, write_lyrics
from songlab.sandbox.engine.theory import hz_to_midi, key_name
from songlab.spec import LIMITS

# the ranges of the registry's duration fields (design.md's payload table)
SONG_MIN, SONG_MAX = float(LIMITS["song_seconds_min"]), float(LIMITS["song_seconds_max"])

NO_VOCAL = ("drums", "bass", "harmony", "lead")


def describe(score: Score, rec: Recipe) -> Metadata:
    plan = song.plan_of(score)
    meta: Metadata = {
        "genre": plan.genre,
        "tempo_bpm": plan.tempo,
        "key": key_name(plan.root, plan.mode),
        "mode": plan.mode,
        "instruments": list(plan.harmony) + (["drums"] if plan.drums else []),
        "duration_s": rec["duration_s"],
        "channels": rec["channels"],
    }
    voice = score.get("voice")
    if voice and "vocal" in score["parts"]:
        meta["voice"] = {"gender": voice["gender"], "f0_median": voice["f0_median"]}
    return meta


def _seed(payload: dict[str, Any], seed: int) -> int:
    return int(payload.get("seed", seed))


def _voice_for(
    voice: Voice | None, plan: Plan, key: int, *, register: float | None = None
) -> VoiceDict:
    v = voice_dict(voice)
    if v is not None:
        return v
    if plan.gender:
        return default_voice(plan.gender)
    if register is not None:
        return default_voice("male" if register < 57 else "female")
    return default_voice("female" if np.random.default_rng([key, 5]).random() < 0.5 else "male")


def _single(score: Score, model: str, dur: float) -> Recipe:
    return recipe.make(
        [recipe.layer(score, fade_out_s=min(1.5, dur / 6))], model=model, duration_s=dur
    )


def generate(
    operation: str,
    model: str,
    payload: dict[str, Any],
    seed: int,
    voice: Voice | None,
    inputs: dict[str, AudioIn] | None = None,
) -> tuple[Recipe, Metadata]:
    """generate_song and generate_music (an optional input ``song``/``music`` sets tempo and key)."""
    prompt = str(payload.get("prompt") or "")
    s = _seed(payload, seed)
    ref = get_input(inputs, "song", "music", required=False)
    key = seed_of(
        "compose", prompt, payload.get("lyrics"), s, None if ref is None else len(ref.data)
    )
    plan = plan_from_prompt(
        prompt, rng_of("plan", prompt, s), base=None if ref is None else ref.plan()
    )
    plan = follow(plan, model, prompt, rng_of("follow", prompt, s, model))
    dur = clamp(
        payload.get("duration_seconds"),
        SONG_MIN,
        SONG_MAX,
        float(LIMITS["song_seconds_default"]),
        "duration_seconds",
    )
    if operation == "generate_music":
        score = song.new_score(plan, model=model, seed=key, duration_s=dur, parts=NO_VOCAL)
    else:
        lyrics = payload.get("lyrics") or write_lyrics(prompt, seed=key)
        score = song.new_score(
            plan,
            model=model,
            seed=key,
            duration_s=dur,
            lyrics=str(lyrics),
            voice=_voice_for(voice, plan, key),
            language=language_code(payload.get("language")) if payload.get("language") else "en",
        )
    rec = _single(score, model, dur)
    return rec, describe(score, rec)


def singing(
    model: str,
    payload: dict[str, Any],
    seed: int,
    inputs: dict[str, AudioIn] | None,
    voice: Voice | None,
) -> tuple[Recipe, Metadata, bool]:
    """generate_singing: a vocal-only track; with a sandbox ``vocal_reference`` it keeps the
    reference's timing, level and (unless ``voice`` is given) its singer."""
    prompt = str(payload.get("prompt") or payload.get("styleOfMusic") or "")
    s = _seed(payload, seed)
    lyrics = payload.get("lyrics")
    ref = get_input(inputs, "vocal_reference", required=False)
    lang = payload.get("language")
    if ref is not None and ref.layered and recipe.vocal_score(ref.recipe) is not None:
        vs = recipe.vocal_score(ref.recipe)
        assert vs is not None and ref.recipe is not None
        ly = next(x for x in ref.recipe["layers"] if x["score"] is vs)
        sc = copy.deepcopy(vs)
        sc["model"] = model
        sc["parts"] = ["vocal"]
        sc["lyrics"] = str(lyrics or vs["lyrics"])
        sc["language"] = (
            language_code(lang)
            if lang
            else guess_language(str(lyrics or vs["lyrics"]), vs.get("language", "en"))
        )
        if voice is not None:
            sc["voice"] = voice_dict(voice)
        new = recipe.layer(
            sc,
            offset_s=ly["offset_s"],
            start_s=ly["start_s"],
            end_s=ly["end_s"],
            fade_in_s=ly["fade_in_s"],
            fade_out_s=ly["fade_out_s"],
            gain=ly["gain"],
        )
        rec = recipe.make([new], model=model, duration_s=ref.recipe["duration_s"])
        return rec, describe(sc, rec), False
    key = seed_of("sing", prompt, lyrics, s)
    base = ref.plan() if ref is not None else None
    plan = plan_from_prompt(prompt, rng_of("plan", prompt, s), base=base)
    if base is None:
        plan = follow(plan, model, prompt, rng_of("follow", prompt, s, model))
    v = voice_dict(voice)
    if v is None and ref is not None:
        v = ref.voice()
    v = v or _voice_for(None, plan, key)
    if not lyrics:
        lyrics = write_lyrics(prompt, seed=key)
    sc = song.new_score(
        plan,
        model=model,
        seed=key,
        duration_s=0,
        lyrics=str(lyrics),
        voice=v,
        parts=("vocal",),
        vocal_start_s=0.0,
        language=language_code(lang) if lang else guess_language(str(lyrics), "en"),
    )
    lines = song.sung_lines(sc)
    end = lines[-1].end if lines else 4.0
    dur = clamp(payload.get("duration_seconds"), 1, SONG_MAX, end + 1.0, "duration_seconds")
    sc["duration_s"] = dur
    rec = recipe.make(
        [recipe.layer(sc, offset_s=0.5, end_s=dur, fade_out_s=0.3)], model=model, duration_s=dur
    )
    return rec, describe(sc, rec), True


def guess_language(lyrics: str, default: str) -> str:
    """Which pseudo-language a text was translated into (by its syllable inventory)."""
    ws = [w.lower() for w in words(lyrics)]
    if not ws:
        return default
    best, best_share = default, 0.6
    for code, inv in _INVENTORY.items():
        sylls = sorted(inv.split(), key=len, reverse=True)
        hits = 0
        for w in ws:
            rest = w
            while rest:
                nxt = next((s for s in sylls if rest.startswith(s)), None)
                if nxt is None:
                    break
                rest = rest[len(nxt) :]
            hits += not rest
        share = hits / len(ws)
        if share > best_share:
            best, best_share = code, share
    return best if best != "xx" else default


def similar(
    operation: str,
    model: str,
    payload: dict[str, Any],
    seed: int,
    inputs: dict[str, AudioIn] | None,
    voice: Voice | None,
) -> tuple[Recipe, Metadata]:
    """similar_song / similar_music: a new piece at the input's tempo and key."""
    src = get_input(
        inputs, "song" if operation == "similar_song" else "music", "audio", "song", "music"
    )
    assert src is not None
    prompt = str(payload.get("prompt") or "")
    s = _seed(payload, seed)
    key = seed_of("similar", prompt, s, src.recipe or len(src.data))
    base = src.plan()
    plan = plan_from_prompt(prompt, rng_of("plan", prompt, s, key), base=base)
    if not prompt:
        plan.genre, plan.harmony, plan.drum_style, plan.drums = (
            base.genre,
            list(base.harmony),
            base.drum_style,
            base.drums,
        )
    dur = clamp(
        payload.get("duration_seconds"),
        SONG_MIN,
        SONG_MAX,
        min(max(src.duration_s, SONG_MIN), SONG_MAX),
        "duration_seconds",
    )
    if operation == "similar_music":
        sc = song.new_score(plan, model=model, seed=key, duration_s=dur, parts=NO_VOCAL)
    else:
        v = voice_dict(voice) or src.voice() or _voice_for(None, plan, key)
        lyrics = payload.get("lyrics") or write_lyrics(prompt or plan.genre, seed=key)
        sc = song.new_score(
            plan, model=model, seed=key, duration_s=dur, lyrics=str(lyrics), voice=v
        )
    rec = _single(sc, model, dur)
    meta = describe(sc, rec)
    meta["source"] = {"tempo_bpm": base.tempo, "key": key_name(base.root, base.mode)}
    return rec, meta


def melody_song(
    model: str, payload: dict[str, Any], seed: int, inputs: dict[str, AudioIn] | None
) -> tuple[Recipe, Metadata]:
    """melody_to_song: the input melody's notes, harmonised and produced."""
    src = get_input(inputs, "melody", "audio")
    assert src is not None
    notes: list[list[float]] = []
    vs = recipe.vocal_score(src.recipe)
    if vs is not None:
        notes = [[nt.onset, nt.dur, nt.midi] for ln in song.sung_lines(vs) for nt in ln.notes]
    if not notes:
        notes = melody.notes_from_audio(src.audio)
    if not notes:
        raise EngineInputError(src.field, "holds no melody (no pitched notes were found)")
    t_first = notes[0][0]
    notes = [[round(o - t_first + 0.25, 4), round(d, 4), m] for o, d, m in notes]
    prompt = str(payload.get("prompt") or "")
    s = _seed(payload, seed)
    key = seed_of("melody", prompt, s, notes)
    root, mode = melody.key_of(notes)
    plan = plan_from_prompt(
        prompt,
        rng_of("plan", prompt, s, key),
        base=Plan(tempo=melody.tempo_of(notes), root=root, mode=mode),
    )
    end = notes[-1][0] + notes[-1][1]
    n_bars = int(np.ceil((end + 0.5) / arrange.bar_len(plan))) + 1
    plan.progression = arrange.chords_for_melody(plan, notes, n_bars)
    dur = clamp(
        payload.get("duration_seconds"),
        SONG_MIN,
        SONG_MAX,
        max(SONG_MIN, n_bars * arrange.bar_len(plan)),
        "duration_seconds",
    )
    lyrics = str(payload.get("lyrics") or "")
    register = float(np.median([m for _, _, m in notes]))
    if lyrics:
        sc = song.new_score(
            plan,
            model=model,
            seed=key,
            duration_s=dur,
            lyrics=lyrics,
            melody=notes,
            voice=_voice_for(None, plan, key, register=register),
        )
    else:
        sc = song.new_score(
            plan, model=model, seed=key, duration_s=dur, melody=notes, parts=NO_VOCAL
        )
    rec = _single(sc, model, dur)
    meta = describe(sc, rec)
    meta["melody_notes"] = len(notes)
    return rec, meta


def midi_song(
    model: str, payload: dict[str, Any], seed: int, inputs: dict[str, AudioIn] | None
) -> tuple[Recipe, Metadata]:
    """midi_to_song: the MIDI file's notes on the sandbox's instruments (+ drums, + a singer)."""
    src = get_input(inputs, "midi")
    assert src is not None
    try:
        notes, length = midi.parse(src.data)
    except midi.MidiError as exc:
        raise EngineInputError("midi", str(exc)) from None
    prompt = str(payload.get("prompt") or "")
    s = _seed(payload, seed)
    key = seed_of("midi", prompt, s, notes)
    tonal = [[o, d, float(p)] for o, d, p, _, _, ch in notes if ch != 9]
    root, mode = melody.key_of(tonal) if tonal else (0, "major")
    bpm = midi.tempo_of(src.data) or 120.0
    plan = plan_from_prompt(
        prompt, rng_of("plan", prompt, s, key), base=Plan(tempo=bpm, root=root, mode=mode)
    )
    plan.tempo = bpm  # the file's tempo wins: its notes are timed by it
    dur = clamp(
        payload.get("duration_seconds"),
        SONG_MIN,
        SONG_MAX,
        max(SONG_MIN, length + 1.5),
        "duration_seconds",
    )
    lyrics = str(payload.get("lyrics") or "")
    parts: tuple[str, ...] = ("drums", "vocal") if lyrics else ("drums",)
    if not plan.drums:
        parts = tuple(p for p in parts if p != "drums")
    sky = song.skyline(notes)
    register = float(np.median([m for _, _, m in sky])) if sky else 60.0
    sc = song.new_score(
        plan,
        model=model,
        seed=key,
        duration_s=dur,
        lyrics=lyrics,
        midi=notes,
        parts=parts,
        voice=_voice_for(None, plan, key, register=register) if lyrics else None,
    )
    rec = _single(sc, model, dur)
    meta = describe(sc, rec)
    meta["midi_notes"] = len(notes)
    return rec, meta


def remix(
    model: str, payload: dict[str, Any], seed: int, inputs: dict[str, AudioIn] | None
) -> tuple[Recipe, Metadata] | Src:
    """remix_song of a sandbox song: same tempo, key, chords, melody, lyrics and singer; the
    prompt's genre and instruments. Foreign input is returned for the audio path."""
    src = get_input(inputs, "song", "audio")
    assert src is not None
    sc = src.score()
    if sc is None:
        return src
    prompt = str(payload.get("prompt") or payload.get("genre") or "")
    s = _seed(payload, seed)
    old = song.plan_of(sc)
    plan = plan_from_prompt(prompt, rng_of("remix", prompt, s), base=old)
    plan.progression = list(old.progression)
    if plan.genre == old.genre and not prompt:
        raise RenderError("prompt: a remix needs a prompt naming the new style")
    new = copy.deepcopy(sc)
    new["plan"] = plan.to_dict()
    new["model"] = model
    rec = recipe.make(
        [recipe.layer(new, fade_out_s=min(1.5, sc["duration_s"] / 6))],
        model=model,
        duration_s=src.duration_s,
    )
    meta = describe(new, rec)
    meta["from_genre"] = old.genre
    return rec, meta


def voice_midi_range(v: VoiceDict) -> tuple[float, float]:
    return float(hz_to_midi(v["f0_low"])), float(hz_to_midi(v["f0_high"]))
