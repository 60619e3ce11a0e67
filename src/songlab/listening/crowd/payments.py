"""Paying a crowd: who is approved and what bonus each gets, from rules the organiser sets,
exported in each platform's bulk format.

``payments(server, base="2.50", bonus="0.50", min_minutes=5)``: a participant who finished
is approved when they passed the per-rater checks (gold clips, trapping questions, flat
answers, headphones: the campaign's rules) and spent at least ``min_minutes``; an approved
participant earns ``bonus`` plus ``per_minute`` for each whole minute over ``min_minutes``, up
to ``bonus_cap``. Money is ``Decimal`` to the cent, never a float. ``Payments.export(folder)``
writes, 0600:

* Prolific: ``prolific-approve.txt`` (one participant id a line, for bulk approval) and
  ``prolific-bonuses.csv`` (``participant_id,amount`` a line, Prolific's bulk bonus format);
* Mechanical Turk: ``mturk-approve.csv`` (``AssignmentId,WorkerId,HITId,Approve,Reject``, the
  batch results columns a requester uploads) and ``mturk-bonuses.csv`` (``WorkerId,
  AssignmentId,BonusAmount,Reason``: one ``send-bonus`` call a row).

These files are the only place platform ids leave songlab; the frame itself shows pseudonyms.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import pandas as pd

from songlab.listening._errors import ListeningError
from songlab.listening.crowd.store import COMPLETE
from songlab.localfiles import private_dir, write_atomic

__all__ = ["Payments", "payments"]

CENT = Decimal("0.01")


def _money(name: str, value: Any) -> Decimal:
    if isinstance(value, float) or isinstance(value, bool):
        raise ListeningError(name, f"must be a decimal amount as text or Decimal, not {value!r}")
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise ListeningError(name, f"must be a decimal amount; got {value!r}") from None
    if not amount.is_finite() or amount < 0 or amount != amount.quantize(CENT):
        raise ListeningError(name, f"must be an amount >= 0 in whole cents; got {value!r}")
    return amount


@dataclass(frozen=True)
class Payments:
    """Who is approved and paid what (``table``: pseudonyms only), and the platforms' ids."""

    table: pd.DataFrame
    _ids: dict[str, tuple[str, dict[str, str]]]

    def __repr__(self) -> str:
        approved = int(self.table["approve"].sum()) if len(self.table) else 0
        total = sum(self.table["bonus"], Decimal(0)) if len(self.table) else Decimal(0)
        return f"Payments({len(self.table)} finished, {approved} approved, bonuses ${total})"

    def export(self, folder: str | Path, /) -> list[Path]:
        """Write each platform's bulk files into ``folder`` (0600); the paths written."""
        out = private_dir(folder)
        rows = self.table.to_dict("records")
        by = {
            "prolific": [r for r in rows if r["platform"] == "prolific"],
            "mturk": [r for r in rows if r["platform"] == "mturk"],
        }
        written = []
        if by["prolific"]:
            ids = [
                self._ids[r["participant"]][1]["PROLIFIC_PID"]
                for r in by["prolific"]
                if r["approve"]
            ]
            written.append(
                write_atomic(out / "prolific-approve.txt", "".join(f"{i}\n" for i in ids))
            )
            lines = [
                f"{self._ids[r['participant']][1]['PROLIFIC_PID']},{r['bonus']}"
                for r in by["prolific"]
                if r["approve"] and r["bonus"] > 0
            ]
            written.append(
                write_atomic(out / "prolific-bonuses.csv", "".join(f"{x}\n" for x in lines))
            )
        if by["mturk"]:
            written.extend(self._mturk(out, by["mturk"]))
        return written

    def _mturk(self, out: Path, rows: Sequence[Mapping[Hashable, Any]]) -> list[Path]:
        approve, bonus = io.StringIO(), io.StringIO()
        a = csv.writer(approve, lineterminator="\n")
        b = csv.writer(bonus, lineterminator="\n")
        a.writerow(["AssignmentId", "WorkerId", "HITId", "Approve", "Reject"])
        b.writerow(["WorkerId", "AssignmentId", "BonusAmount", "Reason"])
        for r in rows:
            f = self._ids[r["participant"]][1]
            a.writerow(
                [
                    f["assignmentId"],
                    f["workerId"],
                    f["hitId"],
                    "x" if r["approve"] else "",
                    "" if r["approve"] else r["reason"],
                ]
            )
            if r["approve"] and r["bonus"] > 0:
                b.writerow(
                    [f["workerId"], f["assignmentId"], str(r["bonus"]), "listening test bonus"]
                )
        return [
            write_atomic(out / "mturk-approve.csv", approve.getvalue()),
            write_atomic(out / "mturk-bonuses.csv", bonus.getvalue()),
        ]


def payments(
    server: Any,
    /,
    *,
    base: Any,
    bonus: Any = "0",
    per_minute: Any = "0",
    bonus_cap: Any = None,
    min_minutes: float = 0.0,
) -> Payments:
    """The payments of a served campaign's finished participants, from these rules."""
    service = server.service if hasattr(server, "service") else server
    base_d, bonus_d, minute_d = (
        _money("base", base),
        _money("bonus", bonus),
        _money("per_minute", per_minute),
    )
    cap = _money("bonus_cap", bonus_cap) if bonus_cap is not None else None
    if isinstance(min_minutes, bool) or not isinstance(min_minutes, int | float) or min_minutes < 0:
        raise ListeningError("min_minutes", f"must be minutes >= 0; got {min_minutes!r}")
    rows = []
    for a in service.store.assignments(service.campaign.id):
        if a.status != COMPLETE or a.finished_at is None:
            continue
        minutes = (a.finished_at - a.started_at) / 60
        approve = bool(a.kept) and minutes >= min_minutes
        reason = a.reason or ""
        if bool(a.kept) and not approve:
            reason = f"finished in {minutes:.1f} minutes, under the {min_minutes:g} the rules ask"
        extra = bonus_d + minute_d * int(max(0.0, minutes - min_minutes))
        extra = min(extra, cap) if cap is not None else extra
        rows.append(
            {
                "participant": a.participant,
                "platform": a.platform,
                "minutes": minutes,
                "approve": approve,
                "reason": reason,
                "base": base_d if approve else Decimal(0),
                "bonus": extra.quantize(CENT) if approve else Decimal(0),
            }
        )
    columns = ["participant", "platform", "minutes", "approve", "reason", "base", "bonus"]
    table = pd.DataFrame(rows, columns=columns).astype(
        {
            "participant": "string",
            "platform": "string",
            "minutes": "Float64",
            "approve": "boolean",
            "reason": "string",
        }
    )
    return Payments(table, service.store.platform_fields(service.campaign.id))
