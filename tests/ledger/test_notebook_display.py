"""One display rule for every frame a notebook shows: money to the cent (a sub-cent fee to
four places, never more), every other cell as pandas shows it, the data untouched; it is
what ``songlab.connect()`` gives an IPython kernel."""

from __future__ import annotations

import re
from decimal import Decimal

import pandas as pd
import pyarrow as pa
import pytest

from songlab.ledger.notebook_display import frame_html, frame_text, money_text, register

D = Decimal


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        ("0.25000000", "0.25"),
        ("1234.5", "1,234.50"),
        ("0", "0.00"),
        ("0.005", "0.005"),  # half-even gives 0.00 at the cent: it is not zero
        ("0.00159469", "0.0016"),  # Agent One's flash fee: cents would hide it
        ("0.053732", "0.05"),
        ("0.015", "0.02"),  # half-even at the cent, as pricing.cents
        ("0.00000067", "< 0.0001"),
        ("-0.001", "-0.001"),
    ],
)
def test_an_amount_reads_to_the_cent_and_a_hidden_fee_to_four_places(amount, shown) -> None:
    assert money_text(D(amount)) == shown


def _takes() -> pd.DataFrame:
    """Notebook 01's export manifest and 02's takes: Decimals from task.cost_usd."""
    return pd.DataFrame(
        {
            "tier": ["standard", "royalty_free", "royalty_free"],
            "take": [1, 1, 2],
            "cost_usd": [D("0.25000000"), D("0.07000000"), None],
            "seconds": [5.0, 6.914285, 5.0],
            "used_pct": [D("12.50"), D("1"), D("0")],  # a decimal that is not money
        }
    )


def test_money_cells_read_at_cents_and_everything_else_as_pandas_shows_it() -> None:
    frame = _takes()
    before = frame.copy()
    text = frame_text(frame)
    assert "0.25000000" in repr(frame) and "0.25000000" not in text
    assert re.search(r"standard\s+1\s+0\.25\s+5\.000000\s+12\.50", text), text
    html = frame_html(frame)
    assert html is not None and "<td>0.25</td>" in html and "0.25000000" not in html
    assert (
        html.replace("<td>0.25</td>", "<td>0.25000000</td>").replace(
            "<td>0.07</td>", "<td>0.07000000</td>"
        )
        == frame._repr_html_()
    )
    pd.testing.assert_frame_equal(frame, before)  # the data keeps its exact decimals


def test_arrow_decimal_columns_and_frames_without_money() -> None:
    ledger = pd.DataFrame(
        {"cost_usd": pd.array([D("0.10000000")], dtype=pd.ArrowDtype(pa.decimal128(18, 8)))}
    )
    assert "0.10" in frame_text(ledger) and "0.10000000" not in frame_text(ledger)
    plain = pd.DataFrame({"score": [0.123456789], "name": ["v5"]})
    assert frame_text(plain) == repr(plain) and frame_html(plain) == plain._repr_html_()


def test_a_long_frame_shows_what_pandas_shows_with_money_at_cents() -> None:
    long = pd.DataFrame({"cost_usd": [D("0.10000000")] * 5000, "n": range(5000)})
    text = frame_text(long)
    assert text.endswith("[5000 rows x 2 columns]") and "0.10000000" not in text
    assert text.count("\n") == repr(long).count("\n")  # the same rows left out
    html = frame_html(long)
    assert html is not None and html.count("<tr>") == long._repr_html_().count("<tr>")


class _Shell:
    """What register() uses of an IPython shell: its display formatter (no real shell, so no
    history database or hooks are made in the test process)."""

    def __init__(self) -> None:
        from IPython.core.formatters import DisplayFormatter

        self.display_formatter = DisplayFormatter()


def test_a_registered_shell_shows_every_frame_by_the_rule() -> None:
    shell = _Shell()
    register(shell)
    register(shell)  # again: nothing changes
    data, _ = shell.display_formatter.format(_takes())
    assert "0.25000000" not in data["text/plain"] and "0.25" in data["text/plain"]
    assert "<td>0.25</td>" in data["text/html"]
    series, _ = shell.display_formatter.format(_takes()["cost_usd"])
    assert "0.07" in series["text/plain"] and "0.07000000" not in series["text/plain"]


def test_connect_registers_the_rule_only_in_a_kernel(monkeypatch) -> None:
    """Outside IPython, connect() imports nothing for it (the client stays frame-free)."""
    import IPython

    import songlab._connect as connect_module

    seen: list[object] = []
    monkeypatch.setattr("songlab.ledger.notebook_display.register", seen.append)
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)  # IPython loaded, no kernel
    connect_module._notebook_display()
    assert seen == []
    shell = _Shell()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)  # in a kernel
    connect_module._notebook_display()
    assert seen == [shell]
