"""Waveform, spectrogram and stems figures: right panels, right axes, no pyplot state."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from songlab.audio import AudioError, encode, spectrogram, stems, waveform

SR = 16000


def _tone(freq: float, seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(SR * seconds)) / SR
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def test_waveform_spans_the_clip_and_draws_an_envelope_for_long_clips() -> None:
    fig = waveform(np.stack([_tone(220, 3.0), _tone(330, 3.0)]), sr=SR, title="mix")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_xlim() == pytest.approx((0.0, 3.0))
    assert ax.get_title() == "mix" and len(ax.collections) == 2  # two channels, envelopes


def test_waveform_of_short_mono_bytes_is_one_line() -> None:
    fig = waveform(encode(_tone(220, 0.1), sr=SR))
    assert len(fig.axes[0].lines) == 1


def test_spectrogram_peaks_at_the_tone() -> None:
    fig = spectrogram(_tone(1000.0), sr=SR, n_fft=1024, hop=256)
    mesh = fig.axes[0].collections[0]
    values = (
        np.asarray(mesh.get_array()).reshape(-1, 1)
        if mesh.get_array().ndim == 1
        else np.asarray(mesh.get_array())
    )
    freqs = np.fft.rfftfreq(1024, 1 / SR)
    assert values.shape[0] == freqs.size
    assert freqs[int(np.argmax(values.mean(axis=1)))] == pytest.approx(1000.0, abs=SR / 1024)


def test_stems_side_by_side_in_one_row() -> None:
    fig = stems({"drums": (_tone(100), SR), "bass": (_tone(60), SR), "vocal": (_tone(440), SR)})
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["drums", "bass", "vocal"]
    ys = {round(ax.get_position().y0, 3) for ax in panels}
    assert len(ys) == 1  # one row
    fig = stems({"a": (_tone(100), SR), "b": (_tone(200), SR)}, kind="spectrogram", n_fft=512)
    assert len([ax for ax in fig.axes if ax.get_title()]) == 2


def test_no_pyplot_figures_are_left_open() -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    waveform(_tone(220), sr=SR)
    assert plt.get_fignums() == before
    assert matplotlib.get_backend()  # a backend exists; nothing was shown


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: stems({}), "sources"),
        (lambda: stems({"a": (_tone(1), SR)}, kind="bars"), "kind"),
        (lambda: spectrogram(_tone(1), sr=SR, hop=0), "hop"),
        (lambda: waveform(_tone(1)), "sr"),
    ],
    ids=["empty", "kind", "hop", "no-sr"],
)
def test_plot_errors_name_the_argument(call, argument: str) -> None:
    with pytest.raises(AudioError) as info:
        call()
    assert info.value.argument == argument
