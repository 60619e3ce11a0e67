"""Standard MIDI files: parse into timed notes (mido) and write small ones (fixtures, tests).

A note is ``[onset_s, dur_s, pitch, velocity, program, channel]`` (JSON-able, so a
score can carry it); channel 9 is the General MIDI drum channel.
"""

from __future__ import annotations

import io

import mido

from songlab.sandbox.engine._types import MidiNote

Note = MidiNote  # [onset_s, dur_s, pitch, velocity, program, channel]


class MidiError(ValueError):
    """Bytes that are not a usable standard MIDI file."""


def parse(data: bytes) -> tuple[list[Note], float]:
    """Notes sorted by onset, and the file's length in seconds."""
    try:
        mf = mido.MidiFile(file=io.BytesIO(data))
        length = float(mf.length)
        messages = list(mf)  # merged tracks, delta times in seconds (tempo map applied)
    except Exception as exc:  # noqa: BLE001 - mido on untrusted bytes raises any type; each is a 422
        raise MidiError(f"is not a readable standard MIDI file ({type(exc).__name__})") from None
    notes: list[Note] = []
    program = [0] * 16
    active: dict[tuple[int, int], tuple[float, int]] = {}
    t = 0.0
    for msg in messages:
        t += msg.time
        if msg.type == "program_change":
            program[msg.channel] = msg.program
        elif msg.type == "note_on" and msg.velocity > 0:
            key = (msg.channel, msg.note)
            if key in active:  # re-struck without a note-off
                t0, vel = active.pop(key)
                notes.append([t0, t - t0, msg.note, vel, program[msg.channel], msg.channel])
            active[(msg.channel, msg.note)] = (t, msg.velocity)
        elif msg.type in ("note_off", "note_on"):
            key = (msg.channel, msg.note)
            if key in active:
                t0, vel = active.pop(key)
                notes.append(
                    [t0, max(t - t0, 0.03), msg.note, vel, program[msg.channel], msg.channel]
                )
    for (ch, pitch), (t0, vel) in active.items():
        notes.append([t0, max(t - t0, 0.1), pitch, vel, program[ch], ch])
    if not notes:
        raise MidiError("holds no notes")
    notes.sort(key=lambda n: (n[0], n[2]))
    return [
        [round(a, 5), round(b, 5), int(p), int(v), int(pr), int(c)] for a, b, p, v, pr, c in notes
    ], length


def tempo_of(data: bytes) -> float | None:
    """The first tempo of the file in BPM, if it sets one."""
    try:
        mf = mido.MidiFile(file=io.BytesIO(data))
    except Exception:  # noqa: BLE001 - mido on untrusted bytes raises any type: no tempo known
        return None
    for track in mf.tracks:
        for msg in track:
            if msg.type == "set_tempo":
                return float(mido.tempo2bpm(msg.tempo))
    return None


def write(
    tracks: list[tuple[int, int, list[tuple[float, float, int, int]]]], *, bpm: float = 120.0
) -> bytes:
    """A type-1 MIDI file; ``tracks`` are ``(channel, program, [(beat, beats, pitch, vel)])``."""
    tpb = 480
    mf = mido.MidiFile(type=1, ticks_per_beat=tpb)
    meta = mido.MidiTrack()
    meta.append(mido.MetaMessage("set_tempo", tempo=mido.bpm2tempo(bpm), time=0))
    mf.tracks.append(meta)
    for channel, program, notes in tracks:
        tr = mido.MidiTrack()
        tr.append(mido.Message("program_change", channel=channel, program=program, time=0))
        events = []
        for beat, beats, pitch, vel in notes:
            events.append((round(beat * tpb), 1, pitch, vel))
            events.append((round((beat + beats) * tpb), 0, pitch, 0))
        events.sort()
        now = 0
        for tick, on, pitch, vel in events:
            kind = "note_on" if on else "note_off"
            tr.append(
                mido.Message(kind, channel=channel, note=pitch, velocity=vel, time=tick - now)
            )
            now = tick
        mf.tracks.append(tr)
    buf = io.BytesIO()
    mf.save(file=buf)
    return buf.getvalue()
