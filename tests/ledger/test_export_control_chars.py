"""Exports always open: text with any character XML 1.0 forbids gives an .xlsx openpyxl loads.

The issue's case, end to end: an Agent One prompt holding every C0 control character (ESC,
NUL, ...) runs on the sandbox, its trace lands in the report's tables, and the workbook
written by ``write_report`` opens, with each forbidden character shown as a visible
stand-in. CSV keeps every character as it is, inert.
"""

from __future__ import annotations

import csv
import zipfile
from pathlib import Path
from typing import Any

import openpyxl
import pandas as pd
import pytest

from songlab.ledger.export import export_csv, export_excel, inert, xml_text

CONTROLS = "".join(chr(c) for c in range(0x20))  # NUL .. US, tab/LF/CR among them
FORBIDDEN = [chr(c) for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)]


def test_xml_text_shows_each_forbidden_character_visibly() -> None:
    text = "a" + CONTROLS + "b\ud800c\ufffe\uffffd"
    shown = xml_text(text)
    assert shown == (
        "a"
        + "".join(chr(0x2400 + c) for c in range(9))
        + "\t\n\u240b\u240c\n"
        + "".join(chr(0x2400 + c) for c in range(0x0E, 0x20))
        + "b\ufffdc\ufffd\ufffdd"
    )
    assert xml_text("\x1b[31mred") == "\u241b[31mred"  # ESC as the picture of ESC
    assert len(shown) == len(text)  # one stand-in per character: nothing dropped
    assert xml_text("plain text, é, 音楽") == "plain text, é, 音楽"


def test_ooxml_escape_lookalikes_are_kept_as_typed() -> None:
    # Excel reads _x0041_ in a cell as "A"; the underscore is escaped so it shows as typed
    assert xml_text("_x0041_ and _x00e9_") == "_x005F_x0041_ and _x005F_x00e9_"
    assert xml_text("_x41_ and x0041_") == "_x41_ and x0041_"


@pytest.mark.parametrize("ch", FORBIDDEN, ids=lambda c: f"0x{ord(c):02X}")
def test_one_forbidden_character_no_longer_breaks_the_workbook(ch: str, tmp_path: Path) -> None:
    frame = pd.DataFrame({"prompt": [f"before{ch}after"], "label": [ch + "=1+1"]})
    path = export_excel({"tasks": frame}, tmp_path / "one.xlsx")
    ws = openpyxl.load_workbook(path)["tasks"]
    assert ws["A2"].value == f"before{chr(0x2400 + ord(ch))}after"
    assert ws["B2"].value == chr(0x2400 + ord(ch)) + "=1+1"
    assert ws["B2"].data_type == "s"  # text, never a formula


def test_csv_keeps_every_character_and_stays_inert(tmp_path: Path) -> None:
    text = "x" + CONTROLS + "y"
    frame = pd.DataFrame({"prompt": [text, "\x00=cmd|' /C calc'!A0", "\x1b[0m"]})
    (path,) = export_csv({"tasks": frame}, tmp_path)
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[1] == [text]  # every character kept
    assert rows[2] == ["'\x00=cmd|' /C calc'!A0"]  # a leading control character: inert
    assert rows[3] == ["'\x1b[0m"]
    assert inert("ok\x00") == "ok\x00" and inert("") == ""


def test_the_streamed_tasks_csv_makes_a_leading_control_character_inert(tmp_path: Path) -> None:
    """The DuckDB path of every task (``--csv-all-tasks``) follows the same rule."""
    from songlab.ledger import tasks_frame
    from songlab.ledger.tables import copy_tasks_csv
    from tests.ledger._util import snap

    frame = tasks_frame([snap("\x1b[31mhostile"), snap("=1+1"), snap("plain\x00id")])
    path = copy_tasks_csv(frame, tmp_path / "tasks.csv")
    with open(path, newline="", encoding="utf-8") as fh:
        ids = sorted(row["task_id"] for row in csv.DictReader(fh))
    assert ids == ["'\x1b[31mhostile", "'=1+1", "plain\x00id"]


def _agent_run(client: Any, prompt: str) -> Any:
    run = client.agent.start(tier="flash", prompt=prompt, max_steps=4)
    return client.generations.wait(run.task_id, timeout=60)


def test_an_agent_one_prompt_with_every_control_character_gives_an_xlsx_openpyxl_loads(
    sandbox: Any, new_account: Any, tmp_path: Path
) -> None:
    from songlab.client import Client
    from songlab.ledger.report import write_report

    # the planner writes its plan with the prompt's topic, so the trace carries the characters
    prompt = "Write lyrics about coffee" + CONTROLS + " \x1b[31mred\x1b[0m end"
    with Client(new_account().api_key, base_url=sandbox.base_url) as c:
        task = _agent_run(c, prompt)
        assert task.status == "completed"
        assert "\x00" in task.output.text and "\x1b[31mred" in task.output.text
        xlsx, csv_dir = tmp_path / "r.xlsx", tmp_path / "csv"
        write_report(c, tmp_path / "r.html", xlsx=str(xlsx), csv_dir=str(csv_dir))
    wb = openpyxl.load_workbook(xlsx)  # the issue: this raised a ParseError
    cells = [str(cell.value) for ws in wb.worksheets for row in ws.iter_rows() for cell in row]
    shown = [v for v in cells if "\u241b[31mred\u241b[0m" in v]
    assert shown, "the prompt's text, ESC shown as a picture, is in the workbook"
    assert not any(ch in v for v in cells for ch in FORBIDDEN)
    with zipfile.ZipFile(xlsx) as z:  # every part is well-formed XML 1.0
        from xml.dom.minidom import parseString

        for name in z.namelist():
            if name.endswith(".xml"):
                parseString(z.read(name))
    # the CSV of the same table keeps the characters themselves
    found = []
    for path in csv_dir.glob("*.csv"):
        with open(path, newline="", encoding="utf-8") as fh:
            found += [cell for row in csv.reader(fh) for cell in row if "\x1b[31mred" in cell]
    assert found
