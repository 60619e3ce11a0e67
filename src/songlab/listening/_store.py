"""Session plumbing without state: reading the input clips, fingerprints, sealing the key.

``_sealed`` keeps a secret in a closure (no attribute holds it); the text
seal for saved files is base64 of zlib-compressed JSON: out of sight, not
encrypted.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from songlab.audio import AudioError, as_audio
from songlab.listening._errors import ListeningError

FORMAT = "songlab.listening/1"


def sealed(secret: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    def unseal() -> dict[str, Any]:
        return secret

    return unseal


def seal_text(secret: dict[str, Any]) -> str:
    return base64.b64encode(zlib.compress(json.dumps(secret).encode("utf-8"))).decode("ascii")


def unseal_text(text: str) -> dict[str, Any]:
    secret: dict[str, Any] = json.loads(zlib.decompress(base64.b64decode(text)).decode("utf-8"))
    return secret


def read_clips(
    clips: Any, sr: int | None
) -> tuple[list[str], int, dict[str, list[tuple[np.ndarray, int]]]]:
    """Check ``clips`` (model -> one clip per prompt) and decode every clip."""
    if not isinstance(clips, Mapping) or len(clips) < 2:
        raise ListeningError("clips", "must be a mapping of at least two models -> list of clips")
    models = list(clips)
    if any(not isinstance(m, str) or not m.strip() for m in models):
        raise ListeningError("clips", "model names must be non-empty strings")
    lengths = {m: len(clips[m]) if isinstance(clips[m], Sequence) else -1 for m in models}
    if min(lengths.values()) < 1 or len(set(lengths.values())) != 1:
        raise ListeningError(
            "clips",
            f"every model needs the same number (>= 1) of clips, one per prompt; got {lengths}",
        )
    decoded = {}
    for m in models:
        try:
            decoded[m] = [
                as_audio(c, sr=sr, argument=f"clips[{m!r}][{i}]") for i, c in enumerate(clips[m])
            ]
        except AudioError as exc:
            raise ListeningError("clips", str(exc)) from None
    return models, lengths[models[0]], decoded


def fingerprint(models: list[str], decoded: Mapping[str, list[tuple[np.ndarray, int]]]) -> str:
    h = hashlib.sha256()
    for m in sorted(models):
        for arr, rate in decoded[m]:
            h.update(m.encode() + str(rate).encode() + str(arr.shape).encode() + arr.tobytes())
    return h.hexdigest()
