"""The deterministic planner: prompt + tier -> :class:`~.plan.Plan`.

Every tier first builds the full plan of the prompt (the calls it asks for, in
a dependency-safe order), then shapes it:

* **flash** does one step: the generation the prompt asks for (song, music or
  singing, with the prompt's own words, without waiting for lyrics), else the
  first call of the full plan. Everything else is listed as dropped.
* **standard** runs the full plan, each call as early as its inputs allow:
  calls that do not depend on each other share a turn.
* **pro** runs the full plan and then a verification turn: it transcribes a
  song sung from written lyrics and compares the words, and runs a copyright
  check on the final audio (unless the plan already did), then writes a
  verification note.

The planner is pure: the same (prompt, tier) always gives the same plan.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from songlab.sandbox.agent.intents import Intents, read_prompt
from songlab.sandbox.agent.plan import Call, Plan, Ref, Text, Turn
from songlab.sandbox.agent.prose import a_or_an, length, narrate, seconds, turn_sentence
from songlab.spec import TRANSCRIBE_MODEL

__all__ = ["build_plan", "full_calls"]

AudioSource = str | Ref


def _adjective(it: Intents) -> str:
    """The mood and genre words ("upbeat jazz "), or nothing."""
    words = [w for w in (it.mood, it.genre) if w]
    return " ".join(words) + " " if words else ""


def _lyrics_call(it: Intents) -> Call:
    about = it.topic or it.style
    parts: tuple[str | Ref, ...] = (f"Lyrics about {about}",)
    if it.genre or it.mood:
        parts += (f", for a {it.style} song",)
    if it.search:
        parts += (". Draw on: ", Ref("search", "text", limit=200))
    if it.topic:
        purpose = f"write lyrics about {it.topic}"
    elif it.genre or it.mood:
        purpose = "write lyrics for " + a_or_an(f"{_adjective(it)}song")
    else:
        purpose = "write the lyrics"
    if it.search:
        purpose += ", drawing on what the search finds"
    return Call("lyrics", "write_lyrics", "v5", {"prompt": Text(parts)}, purpose)


def _generation_call(it: Intents, kind: str, lyrics: Ref | None) -> Call:
    secs = it.song_seconds
    if kind == "music":
        payload: dict[str, Any] = {"prompt": it.style, "duration_seconds": secs, "seed": it.seed}
        about = f" about {it.topic}" if it.topic and not (it.genre or it.mood) else ""
        return Call(
            "song",
            "generate_music",
            it.version,
            payload,
            f"make {length(secs)} of {_adjective(it)}music{about} in {it.version}",
        )
    if kind == "singing":
        payload = {"prompt": it.style, "lyrics": lyrics, "seed": it.seed}
        return Call(
            "song",
            "generate_singing",
            it.version,
            payload,
            f"sing the lyrics a cappella in {it.version}",
        )
    payload = {"prompt": it.style, "duration_seconds": secs, "seed": it.seed}
    if lyrics is not None:
        payload["lyrics"] = lyrics
    about = f" about {it.topic}" if it.topic and lyrics is None else ""
    with_lyrics = " with those lyrics" if lyrics is not None else ""
    return Call(
        "song",
        "generate_song",
        it.version,
        payload,
        "make "
        + a_or_an(f"{seconds(secs)} {_adjective(it)}song{about}")
        + f" in {it.version}{with_lyrics}",
    )


def _audio_call(it: Intents, name: str, audio: AudioSource, song_op: str | None) -> Call:
    if name == "extend":
        if song_op == "generate_music":
            payload = {
                "music": audio,
                "prompt": it.style,
                "extend_seconds": it.song_seconds,
                "side": it.extend_type,
            }
            where = "at the start" if it.extend_type == "head" else "at the end"
            return Call(
                "extend",
                "extend_music",
                "v5",
                payload,
                f"extend the music by {length(it.song_seconds)} {where}",
            )
        payload = {"song": audio, "extend_type": it.extend_type}
        purpose = (
            "add an intro to the song" if it.extend_type == "head" else "extend the song at the end"
        )
        return Call("extend", "extend_song", it.version, payload, purpose)
    if name == "remix":
        return Call(
            "remix",
            "remix_song",
            it.version,
            {"song": audio, "prompt": it.genre or it.style},
            f"remix it as {it.genre}" if it.genre else "remix it",
        )
    if name == "effect":
        payload = {"audio": audio, "effect": it.effect, "amount": it.effect_amount}
        return Call(
            "effect",
            "audio_effect",
            "v5",
            payload,
            f"{_EFFECTS[it.effect]} at {round(it.effect_amount * 100)}% strength",
        )
    if name == "stems":
        return Call(
            "stems",
            "separate_stems",
            it.stems_model,
            {"audio": audio},
            f"split it into {_STEMS[it.stems_model]}",
        )
    if name == "transcribe":
        payload = {"audio": audio}
        if it.language:
            payload["language"] = it.language
        sung = f"the {it.language} lyrics" if it.language else "the lyrics"
        return Call("transcribe", "transcribe", TRANSCRIBE_MODEL, payload, f"transcribe {sung}")
    assert name == "copyright"
    return Call("copyright", "copyright", "v5", {"audio": audio}, "check it for copyright matches")


_EFFECTS = {
    "reverb": "add reverb",
    "echo": "add an echo",
    "lowpass": "run it through a low-pass filter",
    "highpass": "run it through a high-pass filter",
    "pitch_shift": "shift its pitch",
    "normalize": "normalize its loudness",
}
_STEMS = {
    "2stem": "two stems (vocals and instrumental)",
    "6-stem": "six stems",
    "12stem": "twelve stems",
}
_TRANSFORMS = ("extend", "remix", "effect")  # produce the audio the next operations read
_YOUR_FILE = re.compile(r" (it|the song|the music)\b")  # the first op on a named file


def _op_names(it: Intents) -> list[str]:
    """The audio operations asked for, in order; a translation of a file's lyrics hears
    them first ("translate the lyrics of file_id:x")."""
    names = [op.name for op in it.audio_ops]
    if it.translate_to and it.sources and not it.write_lyrics and "transcribe" not in names:
        names.insert(0, "transcribe")
    return names


def _search_call(it: Intents) -> Call:
    query = (
        f"trending {it.genre or ''} music".replace("  ", " ")
        if "trend" in it.prompt.lower()
        else (it.topic or it.style)
    )
    return Call(
        "search", "web_search", "internal", {"query": query}, f'search the web for "{query}"'
    )


def _lyrics_calls(it: Intents, from_transcript: bool) -> tuple[list[Call], Ref | None]:
    """Lyrics written (and translated) before any audio, and the lyrics a song then sings."""
    needs_lyrics = (
        it.write_lyrics
        or it.generate == "singing"
        or (bool(it.translate_to) and not from_transcript)
    )
    if not needs_lyrics:
        return [], None
    calls = [_lyrics_call(it)]
    lyrics = Ref("lyrics", "text")
    if it.translate_to:
        calls.append(
            Call(
                "translate",
                "translate_lyrics",
                "v5",
                {"lyrics": lyrics, "target_language": it.translate_to, "syllable_matched": True},
                f"translate the lyrics into {it.translate_to}",
            )
        )
        if it.generate_position < 0 or it.translate_position < it.generate_position:
            lyrics = Ref("translate", "text")
    return calls, lyrics


def _audio_calls(
    it: Intents, op_names: list[str], lyrics: Ref | None
) -> tuple[list[Call], AudioSource | None]:
    """The generation (when one is asked or needed) and each audio operation on its output
    or the named file, in order; and the audio the last transform left."""
    calls: list[Call] = []
    audio: AudioSource | None = f"file_id:{it.sources[0]}" if it.sources else None
    kind = it.generate
    if kind is None and audio is None and (it.audio_ops or (it.mix and it.sfx)):
        kind = "song"  # "split a jazz song into stems": make the song first
    song_op = None
    if kind is not None:
        gen = _generation_call(it, kind, lyrics)
        calls.append(gen)
        song_op = gen.operation
        audio = Ref("song", "file")
    if audio is None:
        return calls, None
    for i, name in enumerate(op_names):
        call = _audio_call(it, name, audio, song_op)
        if i == 0 and isinstance(audio, str):  # "it" has no antecedent yet: say whose
            call = replace(call, purpose=_YOUR_FILE.sub(" your file", call.purpose, count=1))
        calls.append(call)
        if name in _TRANSFORMS:
            audio = Ref(call.key, "file")
    return calls, audio


def _transcript_translation(it: Intents) -> Call:
    return Call(
        "translate",
        "translate_lyrics",
        "v5",
        {
            "lyrics": Ref("transcribe", "text"),
            "target_language": it.translate_to,
            "syllable_matched": True,
        },
        f"translate the transcribed lyrics into {it.translate_to}",
    )


def _sfx_call(it: Intents) -> Call:
    payload = {"prompt": it.sfx_prompt, "duration_seconds": it.sfx_seconds}
    purpose = "make " + a_or_an(f"{seconds(it.sfx_seconds)} sound effect of {it.sfx_prompt}")
    return Call("sfx", "sfx_gen", "v5", payload, purpose)


def _mix_call(it: Intents, op_names: list[str], audio: AudioSource | None) -> Call | None:
    if it.sfx and audio is not None:
        tracks: Any = [audio, Ref("sfx", "file")]
        return Call(
            "mix",
            "mix",
            "v5",
            {"tracks": tracks, "gains": [1.0, 0.5]},
            "mix the sound effect under the audio",
        )
    if "stems" in op_names:
        return Call(
            "mix", "mix", "v5", {"tracks": Ref("stems", "files")}, "mix the stems back down"
        )
    return None


def full_calls(it: Intents) -> list[Call]:
    """Every call the prompt asks for, each after the calls it reads from."""
    op_names = _op_names(it)
    from_transcript = bool(it.translate_to) and "transcribe" in op_names and not it.write_lyrics
    calls = [_search_call(it)] if it.search else []
    lyric_calls, lyrics = _lyrics_calls(it, from_transcript)
    audio_calls, audio = _audio_calls(it, op_names, lyrics)
    calls += lyric_calls + audio_calls
    translated = any(call.key == "translate" for call in lyric_calls)
    if it.translate_to and not translated and from_transcript:
        calls.append(_transcript_translation(it))
    if it.sfx:
        calls.append(_sfx_call(it))
    mix = _mix_call(it, op_names, audio) if it.mix else None
    if mix is not None:
        calls.append(mix)
    return calls


def _turns(calls: list[Call]) -> list[list[Call]]:
    level: dict[str, int] = {}
    for c in calls:
        level[c.key] = 1 + max((level[d] for d in c.deps if d in level), default=0)
    grouped: list[list[Call]] = [[] for _ in range(max(level.values(), default=0))]
    for c in calls:
        grouped[level[c.key] - 1].append(c)
    return grouped


def _flash(it: Intents, calls: list[Call]) -> tuple[list[Call], list[str]]:
    if not calls:
        return [], []
    main = next((c for c in calls if c.key == "song" and it.generate), calls[0])
    if main.deps:  # flash does not wait for lyrics: the song writes its own
        payload = {k: v for k, v in main.payload.items() if not isinstance(v, (Ref, Text))}
        purpose = main.purpose.replace(" with those lyrics", "")
        if main.operation == "generate_singing":
            payload["lyrics"] = it.topic or it.style
        main = Call(main.key, main.operation, main.model, payload, purpose)
    return [main], [c.purpose for c in calls if c.key != main.key]


def _verification(it: Intents, calls: list[Call]) -> list[Call]:
    keys = {c.key: c for c in calls}
    checks: list[Call] = []
    song = keys.get("song")
    lyrics_ref = song.payload.get("lyrics") if song else None
    if song and isinstance(lyrics_ref, Ref) and "transcribe" not in keys:
        checks.append(
            Call(
                "verify_lyrics",
                "transcribe",
                TRANSCRIBE_MODEL,
                {"audio": Ref("song", "file")},
                "verify: transcribe the song and compare it with the lyrics",
                verify_against=lyrics_ref,
            )
        )
    audio_keys = [c.key for c in calls if c.key in ("song", "extend", "remix", "effect", "mix")]
    if audio_keys and "copyright" not in keys:
        final = audio_keys[-1]
        checks.append(
            Call(
                "verify_copyright",
                "copyright",
                "v5",
                {"audio": Ref(final, "file")},
                "verify: check the final audio for copyright matches",
            )
        )
    return checks


def _summary(calls: list[Call]) -> str:
    """The plan as the agent says it before it starts (the stream's first message)."""
    return narrate([c.purpose.removeprefix("verify: ") for c in calls])


def build_plan(prompt: str, tier: str) -> Plan:
    """The plan of ``tier`` (flash, standard or pro) for ``prompt``."""
    if tier not in ("flash", "standard", "pro"):
        raise ValueError(f"tier: must be flash, standard or pro, got {tier!r}")
    it = read_prompt(prompt)
    calls = full_calls(it)
    dropped: list[str] = []
    if tier == "flash":
        calls, dropped = _flash(it, calls)
    groups = _turns(calls)
    turns = [
        Turn(i, "work", turn_sentence(i, len(groups), [c.purpose for c in group]), tuple(group))
        for i, group in enumerate(groups, 1)
    ]
    if tier == "pro":
        checks = _verification(it, calls)
        steps = [c.purpose.removeprefix("verify: ") for c in checks]
        prose = (
            "To verify the result, I'll " + " and ".join(steps) + "."
            if checks
            else "To verify the result, I'll review the answer against the request."
        )
        turns.append(Turn(len(turns) + 1, "verification", prose, tuple(checks)))
    return Plan(
        tier=tier,
        summary=_summary(calls + [c for t in turns if t.kind == "verification" for c in t.calls]),
        turns=tuple(turns),
        dropped=tuple(dropped),
    )
