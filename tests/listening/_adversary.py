"""The curious rater's classifier: name a clip's model from its format alone, never its music.

Given only what a rater receives (the page's HTML), every audio element becomes a vector of
format features: the MP3's size, its frame count, its frame headers (bitrate, rate, mode,
mode extension, padding, private/copyright/original bits: the distinct headers and the
first), any Xing/Info/LAME or ID3 tag, and from the decoded audio its channels, rate,
length, leading silence (the lead-in) and trailing silence; and the element's position
(trial, label, how many elements of the page share its trial). A leave-one-out 1-nearest-
neighbour on the z-scored features guesses each element's model from all the others,
labelled with the truth (an attacker who somehow knew every other answer). Its accuracy
against a permutation test (the same neighbours, the models' names shuffled) is the
measure of what the format gives away.
"""

from __future__ import annotations

import base64
import io
import json
import re
from dataclasses import dataclass

import numpy as np
import soundfile as sf
from scipy import stats

_BITRATES = (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320)  # MPEG-1 L3, kbit/s
_RATES = (44100, 48000, 32000)


def mp3_headers(data: bytes) -> list[int]:
    """The 4-byte header of every MPEG-1 layer III frame, walking frame by frame."""
    i = 0
    if data[:3] == b"ID3":
        i = 10 + int.from_bytes(bytes(b & 0x7F for b in data[6:10]), "big")
    out = []
    while i + 4 <= len(data):
        h = int.from_bytes(data[i : i + 4], "big")
        if h >> 21 != 0x7FF:
            i += 1
            continue
        br, sr, pad = (h >> 12) & 0xF, (h >> 10) & 0x3, (h >> 9) & 0x1
        if br in (0, 15) or sr == 3:
            i += 1
            continue
        out.append(h)
        i += 144 * _BITRATES[br] * 1000 // _RATES[sr] + pad
    return out


def format_features(data: bytes, trial: int, label: int, width: int) -> list[float]:
    """Every format feature of one element's bytes (see the module docstring)."""
    headers = mp3_headers(data)
    audio, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    loud = np.flatnonzero(np.max(np.abs(audio), axis=1) > 1e-4)
    lead = int(loud[0]) if loud.size else len(audio)
    tail = int(len(audio) - 1 - loud[-1]) if loud.size else len(audio)
    first = headers[0] if headers else 0
    return [
        len(data),
        len(headers),
        len(set(headers)),
        (first >> 12) & 0xF,  # bitrate index
        (first >> 10) & 0x3,  # rate index
        (first >> 6) & 0x3,  # channel mode
        (first >> 4) & 0x3,  # mode extension
        sum((h >> 9) & 1 for h in headers),  # padded frames
        (first >> 8) & 1,  # private bit
        (first >> 2) & 0x3,  # copyright, original
        float(b"Xing" in data[:2000] or b"Info" in data[:2000]),
        float(b"LAME" in data[:2000] or b"Lavc" in data[:2000]),
        float(data[:3] == b"ID3"),
        audio.shape[1],
        rate,
        len(audio),
        lead,
        tail,
        trial,
        label,
        width,
    ]


@dataclass(frozen=True)
class Verdict:
    """How well the format named the model: ``correct`` of ``n``, against ``chance``.

    ``null``: the classifier's accuracy on the same features with the models' names
    shuffled (a permutation test, as scikit-learn's ``permutation_test_score``): leave-one-
    out guesses on one set of elements are not independent trials, and the permutation
    null keeps their neighbours as they are. Where ``null`` is given, the bound and the
    p-value are the permutation test's."""

    correct: int
    n: int
    chance: float
    null: tuple[float, ...] = ()

    @property
    def accuracy(self) -> float:
        return self.correct / self.n

    @property
    def p_value(self) -> float:
        """One-sided: the permutation test's where there is a null, else the exact binomial
        test of doing better than chance."""
        if self.null:
            return (1 + sum(a >= self.accuracy for a in self.null)) / (1 + len(self.null))
        return float(
            stats.binomtest(self.correct, self.n, self.chance, alternative="greater").pvalue
        )

    @property
    def interval(self) -> tuple[float, float]:
        ci = stats.binomtest(self.correct, self.n).proportion_ci(0.95, method="exact")
        return float(ci.low), float(ci.high)

    @property
    def bound(self) -> float:
        """The accuracy a guesser reaches by luck at most 1 time in 100 (the permutation
        null's 99th percentile, else the binomial's of n and chance)."""
        if self.null:
            return float(np.quantile(self.null, 0.99))
        return float(stats.binom.ppf(0.99, self.n, self.chance)) / self.n

    def __str__(self) -> str:
        low, high = self.interval
        test = f"permutation test of {len(self.null)}" if self.null else "binomial"
        return (
            f"accuracy {self.accuracy:.3f} ({self.correct} of {self.n}; 95 % CI {low:.3f}-"
            f"{high:.3f}), chance {self.chance:.3f}, 99 % chance bound {self.bound:.3f}, "
            f"one-sided p {self.p_value:.3g} ({test})"
        )


def nearest_neighbour(
    features: np.ndarray, truth: list[str], *, permutations: int = 999
) -> Verdict:
    """Leave-one-out 1-NN on z-scored features (constant features dropped), with its
    permutation null: the same neighbours, the names shuffled ``permutations`` times."""
    x = np.asarray(features, dtype=float)
    spread = x.std(axis=0)
    keep = spread > 0
    z = (
        (x[:, keep] - x[:, keep].mean(axis=0)) / spread[keep]
        if keep.any()
        else np.zeros((len(x), 1))
    )
    d = ((z[:, None, :] - z[None, :, :]) ** 2).sum(axis=-1)
    np.fill_diagonal(d, np.inf)
    rng = np.random.default_rng(0)
    # each element's neighbour; a tie is broken at random, as a guesser would
    nn = np.array([int(rng.choice(np.flatnonzero(row == row.min()))) for row in d])
    labels = np.array(truth)
    correct = int((labels[nn] == labels).sum())
    null = []
    for _ in range(permutations):
        shuffled = rng.permutation(labels)
        null.append(float((shuffled[nn] == shuffled).mean()))
    return Verdict(correct, len(truth), 1 / len(set(truth)), tuple(null))


def page_elements(page: str) -> list[tuple[int, str, int, int, bytes]]:
    """``(trial, label, label position, labels in the trial, mp3 bytes)`` of every audio
    element of a rater page, read from the page's design (only what the rater has)."""

    def script(name: str):
        found = re.search(
            rf'<script type="application/json" id="{name}">(.*?)</script>', page, re.S
        )
        assert found is not None
        return json.loads(found.group(1))

    design, audio = script("design"), script("audio")
    out = []
    for tr in design["trials"]:
        for pos, label in enumerate(tr["play"]):
            uri = audio["trials"][str(tr["trial"])][label]
            out.append(
                (tr["trial"], label, pos, len(tr["play"]), base64.b64decode(uri.split(",", 1)[1]))
            )
    return out


def classify_pages(campaign) -> Verdict:
    """The classifier on every element of every rater's page, the truth from the organiser."""
    features, truth = [], []
    for rater in campaign.raters:
        session = campaign._sessions[rater]
        session._revealed = True
        key = session.key
        plans = session._unseal()["plans"]
        for trial, label, pos, width, data in page_elements(campaign.page(rater)):
            if plans[trial].check is not None:
                continue  # a check clip is made from a model's clip, but it is no model's answer
            features.append(format_features(data, trial, pos, width))
            truth.append(key[trial][label])
    return nearest_neighbour(np.array(features), truth)
