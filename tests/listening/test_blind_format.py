"""Nothing but the sound identifies a model: the adversarial classifier test (issue 27).

Three models whose clips differ in every format feature a file can have (one mono at
22.05 kHz in WAV with a leading silence, one stereo 44.1 kHz VBR MP3, one stereo 48 kHz
FLAC, each its own length and level), ten prompts each, in a preference campaign built
as docs/listening.md shows (``seed=15``). Given only the rater pages, a nearest-neighbour
classifier on every format feature (sizes, frames, header fields, tags, channels, rate,
length, lead-in, trailing silence, position) names the model no better than chance (a
permutation test); the same classifier on the clips as the models made them names nearly
every one, so the test can fail.

The models differ in format, not in sound: each has the same noise floor relative to its
level (-40 dB) and its leading silence is digital silence. With one absolute noise floor
(-60 dBFS for all, so 10 dB apart after loudness matching), where a clip's sound rises out
of the lead-in's silence during the fade-in differs by model by about 170 samples, and the
classifier named 0.39-0.42 of the elements (0.46 on the lead-in alone) (chance 0.33): that is the
sound (its hiss), which a rater hears and may judge, not the file's format.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from songlab import audio
from songlab.listening import campaign
from tests.listening._adversary import (
    classify_pages,
    format_features,
    mp3_headers,
    nearest_neighbour,
    page_elements,
)
from tests.listening.listening_signals import SHORT, scan

# a statistical adversary over hundreds of encoded elements (about 2 minutes of a worker):
# `make test` runs it, the edit loop (`make test-fast`) does not
pytestmark = pytest.mark.slow

PROMPTS = [f"prompt {i}" for i in range(10)]
# One fixed secret: the verdicts are the same on every run. With a fresh secret each run a
# test at the 1 % level fails one run in a hundred with nothing wrong; what is tested is
# what the pages give away, not the secret's draw.
SECRET = hashlib.sha256(b"tests/listening/test_blind_format").digest()
# name: (channels, rate, format, seconds, leading silence s, level dBFS)
FORMATS = {
    "mono-model-22k": (1, 22050, "wav", 4.0, 0.060, -20.0),
    "stereo-model-44k": (2, 44100, "mp3", 4.5, 0.000, -14.0),
    "wide-model-48k": (2, 48000, "flac", 3.8, 0.010, -10.0),
}


def _native() -> dict[str, list[bytes]]:
    """Each model's clips as it made them: its own encoding, channels, rate, length, level."""
    rng = np.random.default_rng(27)
    out = {}
    for m, (name, (channels, rate, fmt, seconds, lead, level)) in enumerate(FORMATS.items()):
        takes = []
        for p in range(len(PROMPTS)):
            t = np.arange(int(seconds * rate)) / rate
            f0 = 110 * 2 ** ((p * 5 + m) / 12)
            tone = sum(np.sin(2 * np.pi * f0 * k * t) / k ** (1 + 0.5 * m) for k in range(1, 6))
            tone *= 0.6 + 0.4 * np.sin(2 * np.pi * (1.5 + p / 4) * t)
            tone = tone / np.max(np.abs(tone)) * 10 ** (level / 20)
            x = np.stack([tone, np.roll(tone, 37 * m)])[:channels]
            x += rng.normal(0, 1e-2 * 10 ** (level / 20), x.shape)  # one noise floor: -40 dB
            x = np.concatenate([np.zeros((channels, int(lead * rate))), x], axis=-1)
            takes.append(audio.encode(x.astype(np.float32), sr=rate, format=fmt))
        out[name] = takes
    return out


@pytest.fixture(scope="module")
def made():
    native = _native()
    c = campaign(
        "preference", native, raters=3, seed=15, prompts=PROMPTS, gold=1, traps=1, secret=SECRET
    )
    return native, c


def test_the_format_names_no_model_better_than_chance(made) -> None:
    _, c = made
    verdict = classify_pages(c)
    print(f"\nformat classifier on the rater pages: {verdict}")
    assert verdict.n >= 3 * 60 and verdict.chance == pytest.approx(1 / 3)
    assert verdict.accuracy <= verdict.bound, str(verdict)
    assert verdict.p_value >= 0.01, str(verdict)


def test_every_element_of_every_page_has_one_format(made) -> None:
    _, c = made
    seen = set()
    for rater in c.raters:
        for _, _, _, _, data in page_elements(c.page(rater)):
            f = format_features(data, 0, 0, 0)
            headers = mp3_headers(data)
            # size, frames, the one frame header, no tag, channels, rate, length: all alike
            seen.add((len(data), len(headers), frozenset(headers), *f[10:16]))
    assert len(seen) == 1, seen
    size, frames, headers, xing, lame, id3, channels, rate, length = seen.pop()
    assert (channels, rate, xing, id3) == (2, 48000, 0.0, 0.0) and len(headers) == 1
    print(f"\none format: {size} bytes, {frames} frames, {length} samples at {rate} Hz")


def test_the_same_classifier_names_the_native_clips(made) -> None:
    """The test can fail: had the pages carried each model's own file, the format would
    have named nearly every clip."""
    native, c = made
    features, truth = [], []
    for rater in c.raters:
        session = c._sessions[rater]
        session._revealed = True
        plans = session._unseal()["plans"]
        key = session.key
        for trial, label, pos, width, _ in page_elements(c.page(rater)):
            if plans[trial].check is None:
                model = key[trial][label]
                data = native[model][plans[trial].prompt]
                features.append(format_features(data, trial, pos, width))
                truth.append(model)
    verdict = nearest_neighbour(np.array(features), truth)
    print(f"\nthe same classifier on the native clips: {verdict}")
    assert verdict.accuracy >= 0.9


def test_the_page_text_holds_no_model_name(made) -> None:
    native, c = made
    for rater in c.raters:
        page = c.page(rater).encode()
        assert not scan(page, long=list(native), short=SHORT + ["mono", "22k", "44k", "48k"])


def test_the_lead_ins_do_not_tell_x_from_a_in_abx() -> None:
    """Two elements of one clip (X and A, or X and B) get unrelated lead-ins: a rater who
    measures them and answers "X is the one whose lead-in is nearest (or 97 samples away)"
    is right no more often than a coin."""
    from tests.listening._adversary import Verdict

    native = _native()
    c = campaign("abx", native, raters=2, seed=15, prompts=PROMPTS, gold=0, traps=0, secret=SECRET)
    import io

    import soundfile as sf

    def lead(data: bytes) -> int:
        x, _ = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
        return int(np.flatnonzero(np.max(np.abs(x), axis=1) > 1e-4)[0])

    right = n = 0
    for rater in c.raters:
        session = c._sessions[rater]
        plans = session._unseal()["plans"]
        by_trial: dict[int, dict[str, int]] = {}
        for trial, label, _, _, data in page_elements(c.page(rater)):
            by_trial.setdefault(trial, {})[label] = lead(data)
        for trial, leads in by_trial.items():
            gaps = {ab: abs(leads["X"] - leads[ab]) for ab in "AB"}
            guess = min(gaps, key=lambda ab: (abs(gaps[ab] - 97) > 2, gaps[ab]))
            right += guess == "AB"[plans[trial].x_at]
            n += 1
    verdict = Verdict(right, n, 0.5)
    print(f"\nX named from the lead-ins: {verdict}")
    assert verdict.accuracy <= verdict.bound
