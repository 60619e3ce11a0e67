"""The study: measured once (cache by blob hash and measure version), on every core with the
same rows as one process, a generator consumed a few clips at a time, a progress bar, and a
cache file private to its user."""

from __future__ import annotations

import hashlib
import io
import stat
from dataclasses import replace

import pytest
import soundfile as sf

import songlab.audio.measures as ms
import songlab.audio.study as study
from songlab.audio import AudioError
from tests.audio._signals import SR, song

KEYS = ((0, "major", 96), (9, "minor", 120), (7, "major", 132), (2, "minor", 88))


def _wav(x) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, x.T, SR, format="WAV")
    return buf.getvalue()


@pytest.fixture(scope="module")
def clips() -> list[study.Clip]:
    out = []
    for i, (tonic, mode, bpm) in enumerate(KEYS):
        name = ("C", "A", "G", "D")[i]
        request = {
            "operation": "generate_song",
            "model": ("v5", "v7")[i % 2],
            "payload": {"prompt": f"pop in {name} {mode}, {bpm} bpm", "duration_seconds": 3},
        }
        data = _wav(song(tonic, mode, bpm=bpm, seconds=3))
        blob = hashlib.sha256(data).hexdigest()  # as the service's asset blob_hash
        out.append(study.Clip(request=request, data=data, blob_hash=blob, label=f"clip {i}"))
    return out


def test_measured_once_by_blob_and_again_for_a_new_measure_version(clips, tmp_path, monkeypatch):
    cache = study.AnalysisCache(tmp_path / "private" / "analysis.sqlite")
    first = study.analyse(clips, cache=cache, workers=1, progress=False)
    assert list(first["clip"]) == [c.label for c in clips]
    assert first.attrs["cpu_s"] > 0
    # the cache file is the user's alone
    assert stat.S_IMODE(cache.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.path.parent.stat().st_mode) == 0o700
    # the same clips by blob hash only (no bytes: nothing to download): all from the cache
    keyed = [replace(c, data=None) for c in clips]
    assert study.analyse(keyed, cache=cache, workers=1, progress=False).equals(first)
    other = replace(keyed[0], blob_hash="0" * 64)  # a blob never measured needs its bytes
    with pytest.raises(AudioError, match="has no audio"):
        study.analyse([other], cache=cache, workers=1, progress=False)
    again = study.analyse(clips, cache=cache, workers=1, progress=False)
    assert again.drop(columns="blob_key").equals(first.drop(columns="blob_key"))
    assert again.attrs["cpu_s"] < first.attrs["cpu_s"] / 5  # nothing measured again
    # a new version of one measure measures that one again, and only when its bytes are here
    monkeypatch.setitem(ms.PROVENANCE, "tempo", replace(ms.PROVENANCE["tempo"], version=99))
    measured: list[list[str]] = []
    real = study.measure_clip
    monkeypatch.setattr(
        study,
        "measure_clip",
        lambda data, need, ref: measured.append(list(need)) or real(data, need, ref),
    )
    third = study.analyse(clips, cache=cache, workers=1, progress=False)
    assert measured == [["tempo"]] * len(clips)
    assert third["tempo_bpm"].equals(first["tempo_bpm"])


@pytest.mark.slow  # starts a worker pool (forkserver, librosa preloaded): ~10 s
def test_every_core_gives_the_same_rows_and_holds_only_the_clips_in_flight(clips, tmp_path):
    one = study.analyse(clips, cache=False, workers=1, progress=False)
    pulled, ahead = [], []

    def lazily():
        for c in clips * 3:  # 12 clips
            pulled.append(c)
            yield replace(c, label=f"{c.label} #{len(pulled)}")

    def on_row(row):
        ahead.append(len(pulled) - len(ahead) - 1)  # clips taken but not finished

    two = study.analyse(lazily(), cache=False, workers=2, progress=False, on_row=on_row)
    assert len(two) == 12 and max(ahead) <= 2 * 2 + 1
    cols = ["key", "key_score", "tempo_bpm", "tempo_score", "duration_score", "loudness_lufs"]
    assert two[cols].head(4).reset_index(drop=True).equals(one[cols])
    assert two.attrs["worker_peak_rss_mib"] > 0


def test_a_progress_bar_counts_the_clips(clips, capsys):
    study.analyse(clips[:2], cache=False, workers=1, progress=True)
    err = capsys.readouterr().err
    assert "adherence" in err and "2/2" in err


@pytest.mark.parametrize("workers", [0, -1, 1.5, "2", True])
def test_a_bad_worker_count_is_named(clips, workers):
    with pytest.raises(AudioError, match="workers"):
        study.analyse(clips, cache=False, workers=workers, progress=False)
