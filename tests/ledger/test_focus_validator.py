"""The FOCUS export through the FinOps Foundation's published validator (``focus-validator``
2.2.1 from PyPI, its FOCUS 1.2 requirements model, run offline with ``--block-download``).

The validator cannot share songlab's environment: it pins ``numpy<2`` and ``pandas<3``
(songlab needs numpy 2 and runs on pandas 3) and ``python>=3.12``, and the newest pyarrow
no longer runs on numpy 1, so it gets its own venv (``.venv-focus-validator``, made once by
this test from PyPI: ``focus-validator==2.2.1 'pyarrow<21'``) on a Python 3.12 (numpy 1.26
has no wheels for 3.13). Where no Python 3.12 is found the test is skipped and says so. It
reads its currency list from a path relative to the working directory, so it runs from its
own site-packages.

Every rule must pass but the three the validator models differently from the
specification text (KNOWN, each with its reason; docs/ledger/focus-spark.md says the same).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from songlab.ledger import _schema
from songlab.ledger.focus import write_focus
from songlab.ledger.synthetic import synthetic_table
from tests.ledger.test_focus_conformance import _balances, _edge_rows

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-focus-validator"
REQUIREMENTS = ("focus-validator==2.2.1", "pyarrow<21")
# The conditions of FOCUS 1.2 this service meets (the validator's names).
CRITERIA = (
    "PUBLIC_PRICE_LIST_SUPPORTED,UNIT_PRICING_SUPPORTED,USAGE_MEASUREMENT_SUPPORTED,"
    "SUB_ACCOUNT_SUPPORTED,TAGGING_SUPPORTED,NEGOTIATED_PRICING_SUPPORTED,"
    "PRICING_BILLING_CURRENCY_DIFFERENCES_SUPPORTED,VIRTUAL_CURRENCY_SUPPORTED"
)
KNOWN = {
    # FormatCurrency accepts ISO 4217 codes only, but FOCUS 1.2's CurrencyFormat lets a
    # virtual currency be any string (StringHandling), and the appendix's own virtual
    # currency example uses "Token": every usage row fails it (the top-up, in USD, passes).
    "PricingCurrency-C-003-M": "a virtual currency is not an ISO 4217 code",
    "PricingCurrency-C-000-C": "the composite of PricingCurrency-C-003-M",
    # Modelled with no condition: every charge must have an InvoiceId. The text: InvoiceId
    # MUST be null when the charge is not associated with an invoice; usage paid from
    # prepaid tokens is not, and songlab knows no invoice id for a top-up.
    "InvoiceId-C-005-C": "the rule's condition (charge is invoiced) is not modelled",
    # Depends on CommitmentDiscountStatus, a column for commitment discounts (the service
    # has none): in a full run the chain fails on that dependency; run alone
    # (--filter-rules ConsumedQuantity-C-006) the rule passes.
    "ConsumedQuantity-C-000-C": "dependency on the absent CommitmentDiscountStatus",
    "ConsumedQuantity-C-003-C": "dependency on the absent CommitmentDiscountStatus",
    "ConsumedQuantity-C-004-C": "dependency on the absent CommitmentDiscountStatus",
    "ConsumedQuantity-C-005-C": "dependency on the absent CommitmentDiscountStatus",
    "ConsumedQuantity-C-006-C": "dependency on the absent CommitmentDiscountStatus",
}


def _python312() -> str | None:
    """A Python 3.12 that runs (``.ci/pythons all`` looks on the PATH and under pyenv)."""
    done = subprocess.run(
        ["bash", str(ROOT / ".ci" / "pythons"), "all"], capture_output=True, text=True
    )
    for line in done.stdout.splitlines():
        version, _, where = line.partition(" ")
        if version == "3.12" and where.startswith("/"):
            return where
    return None


def _validator() -> tuple[Path, Path]:
    """(the validator's executable, its site-packages), installing it once."""
    exe = VENV / "bin" / "focus-validator"
    stamp = VENV / (".installed-" + "-".join(REQUIREMENTS).replace("<", "lt").replace("=", ""))
    if not stamp.exists():
        python = _python312()
        if python is None:
            pytest.skip(
                "focus-validator 2.2.1 needs Python 3.12 (it pins numpy 1.26, no wheels for "
                "3.13; songlab's venv needs numpy 2): no python3.12 found"
            )
        shutil.rmtree(VENV, ignore_errors=True)
        uv = Path(sys.executable).parent / "uv"  # make installs it beside pip: 100 s less
        if uv.exists():
            subprocess.run([str(uv), "venv", "-q", "--python", python, str(VENV)], check=True)
            install = [str(uv), "pip", "install", "-q", "--python", str(VENV / "bin" / "python")]
        else:
            subprocess.run([python, "-m", "venv", str(VENV)], check=True)
            install = [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*install, *REQUIREMENTS], check=True, timeout=900)
        stamp.touch()
    site = next((VENV / "lib").glob("python3.*/site-packages"))
    return exe, site


@pytest.fixture(scope="module")
def validator() -> tuple[Path, Path]:
    return _validator()


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_the_published_validator_passes_every_rule_it_models_as_the_spec_says(
    validator: tuple[Path, Path], tmp_path: Path, suffix: str
) -> None:
    exe, site = validator
    frame = pd.concat(
        [_schema.to_frame(synthetic_table(3_000, seed=4, labels=True)), _edge_rows()],
        ignore_index=True,
    )
    out = tmp_path / f"focus{suffix}"
    report = write_focus(frame, out, account="acct-7", balances=_balances())
    assert report.usage_rows > 2_000 and report.purchase_rows == 1
    done = subprocess.run(
        [
            str(exe),
            "--data-file",
            str(out),
            "--validate-version",
            "1.2",
            "--block-download",
            "--applicability-criteria",
            CRITERIA,
        ],
        cwd=site,  # it opens focus_validator/rules/currency_codes.csv relative to here
        capture_output=True,
        text=True,
        timeout=1500,
    )
    text = done.stdout + done.stderr
    totals = re.search(r"Total: (\d+) \| Pass: (\d+) \| Fail: (\d+) \| Skipped: (\d+)", text)
    assert totals, text[-3000:]
    total, passed, failed, skipped = map(int, totals.groups())
    failures = set(re.findall(r"^\S+ (\S+): FAIL", text, flags=re.M))
    assert failures <= set(KNOWN), sorted(failures - set(KNOWN))
    assert failed == len(failures)
    assert passed >= 200, (total, passed, failed, skipped)  # the rules that apply do run
    print(
        f"focus-validator on {out.name}: {total} rules, {passed} pass, {failed} fail "
        f"(known: {sorted(failures)}), {skipped} skipped",
        file=sys.stderr,
    )
