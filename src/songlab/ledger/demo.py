"""A realistic mixed workload, so a cost report has something to show (``songlab report --demo``).

Songs in three models and several license tiers, music, lyrics, a sound
effect, a stem separation, a workflow (karaoke track), a song translation, an
Agent One run (when the service offers Agent One), and, when an admin handle
on a sandbox is given, two tasks failed on purpose with the ``fail_tasks``
fault (released, not billed). Everything goes through the songlab client.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["SONGS", "run_demo", "tone_mp3"]

# (model, license tier) of the songs the demo makes.
SONGS: tuple[tuple[str, int], ...] = (("v5", 1), ("v6", 2), ("v7", 3), ("v7", 5))


def tone_mp3(seconds: float = 3.0, *, freq: float = 220.0, sr: int = 22050) -> bytes:
    """A short MP3 (a plucked tone with a little vibrato) to upload as a source song."""
    import soundfile as sf

    t = np.arange(int(seconds * sr)) / sr
    audio = 0.3 * np.sin(2 * np.pi * freq * t + 0.3 * np.sin(2 * np.pi * 5 * t)) * np.exp(-t / 2)
    buf = io.BytesIO()
    sf.write(buf, audio.astype(np.float32), sr, format="MP3")
    return buf.getvalue()


def _wait_all(client: Any, handles: list[Any], timeout: float) -> list[Any]:
    return [
        client.generations.wait(h.task_id, timeout=timeout, raise_on_failure=False) for h in handles
    ]


def _agent_available(client: Any) -> bool:
    try:
        return any(t.operation == "agent" for t in client.tools.list())
    except Exception:  # noqa: BLE001 - no tool listing: treat as not available
        return False


def run_demo(
    client: Any,
    *,
    admin: Any = None,
    timeout: float = 300.0,
    log: Callable[[str], Any] = print,
) -> list[str]:
    """Run the workload on ``client``; returns the ids of the tasks it created.

    ``admin``: an ``httpx.Client`` with the sandbox admin header, to inject the
    ``fail_tasks`` fault for two tasks (skipped when None).
    """
    prompt = "an upbeat synth-pop song about a night drive"
    gen = client.generations
    handles = [
        gen.create(operation="generate_song", model=m, license=lic,
                   payload={"prompt": prompt, "duration_seconds": 5, "seed": i})
        for i, (m, lic) in enumerate(SONGS)
    ]  # fmt: skip
    handles += [
        gen.create(operation="generate_music", model="v7", license=2,
                   payload={"prompt": "calm piano", "duration_seconds": 5}),
        gen.create(operation="write_lyrics", model="v5", payload={"prompt": "a night drive"}),
        gen.create(operation="sfx_gen", model="v5", payload={"prompt": "door slam",
                                                             "duration_seconds": 1.0}),
    ]  # fmt: skip
    done = _wait_all(client, handles, timeout)
    log(f"demo: {len(done)} generations finished")
    source = client.files.upload(tone_mp3(), filename="source.mp3")
    later = [
        gen.create(operation="separate_stems", model="2stem",
                   payload={"audio": f"file_id:{source.file_id}"}),
        client.workflows.karaoke_track(song_file_id=source.file_id),
        client.song_translations.create(song_file_id=source.file_id, target_language="Spanish",
                                        song_style="warm female pop vocal", license="standard"),
    ]  # fmt: skip
    done += _wait_all(client, later, timeout)
    log("demo: stems, a karaoke track and a song translation finished")
    if _agent_available(client):
        run = client.agent.start(
            tier="flash", prompt="write lyrics and make a short song", max_steps=4
        )
        done += _wait_all(client, [run], timeout)
        log("demo: an Agent One run finished")
    else:
        log("demo: this service offers no Agent One tool; skipped")
    if admin is not None:
        r = admin.put("/_sandbox/faults", json={"fail_tasks": 1.0})
        r.raise_for_status()
        try:
            failing = [
                gen.create(operation="generate_song", model="v7", license=4,
                           payload={"prompt": prompt, "duration_seconds": 5}),
                gen.create(operation="generate_music", model="v5", payload={"prompt": "drone"}),
            ]  # fmt: skip
            done += _wait_all(client, failing, timeout)
        finally:
            admin.delete("/_sandbox/faults")
        log("demo: two tasks failed on purpose (released, not billed)")
    return [t.task_id for t in done]
