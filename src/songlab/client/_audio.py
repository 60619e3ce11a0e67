"""Decode downloaded audio bytes to a numpy array: soundfile first, PyAV for m4a/AAC."""

from __future__ import annotations

import io

import numpy as np

from songlab.client._models import AudioArray

__all__ = ["decode_audio"]


def _decode_av(content: bytes) -> AudioArray:
    import av  # PyAV: m4a (AAC in an mp4/ipod container), which libsndfile cannot read

    with av.open(io.BytesIO(content), mode="r") as container:
        stream = container.streams.audio[0]
        rate = stream.codec_context.sample_rate or stream.rate
        chunks = []
        resampler = av.AudioResampler(format="fltp")
        for frame in container.decode(stream):
            for out in resampler.resample(frame):
                chunks.append(out.to_ndarray())
        for out in resampler.resample(None):
            chunks.append(out.to_ndarray())
    if not chunks:
        return AudioArray(np.zeros((1, 0), dtype=np.float32), int(rate))
    samples = np.concatenate(chunks, axis=1).astype(np.float32, copy=False)
    return AudioArray(samples, int(rate))


def decode_audio(content: bytes) -> AudioArray:
    """Samples as float32 of shape (channels, frames), and the sample rate in Hz."""
    import soundfile as sf

    try:
        data, rate = sf.read(io.BytesIO(content), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError):
        return _decode_av(content)
    return AudioArray(np.ascontiguousarray(data.T), int(rate))
