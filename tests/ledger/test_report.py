"""The HTML cost report: self-contained (tables + base64 PNG), from the CLI against a service."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from songlab import cli
from songlab.ledger import tasks_frame, trace_frame
from songlab.ledger.report import render_html


def _self_contained(document: str) -> None:
    assert document.startswith("<!doctype html>")
    assert not re.search(r'(src|href)="(https?:)?//', document)
    assert "<script" not in document and "<link" not in document
    assert document.count('src="data:image/png;base64,') == 6


def test_render_html(records: list[dict[str, Any]]) -> None:
    tasks = tasks_frame(records[:300])
    document = render_html(tasks, trace_frame(tasks), title="Q4 <costs>")
    _self_contained(document)
    assert "<h1>Q4 &lt;costs&gt;</h1>" in document
    total = tasks.songlab.total()
    whole, frac = f"{total:,.8f}".split(".")
    assert f"${whole}.{frac.rstrip('0').ljust(2, '0')}" in document
    for heading in ("Spend by operation", "Tier comparison", "Agent One: cost per step"):
        assert heading in document


def test_cli_report_against_the_service(
    sandbox: Any, new_account: Callable[..., Any], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    acct = new_account()
    with httpx.Client(
        base_url=sandbox.base_url, headers={"Authorization": f"Bearer {acct.api_key}"}
    ) as http:
        tools = {
            (t["operation"], t["model"]): t["id"] for t in http.get("/v1/tools").json()["data"]
        }
        body = {
            "tool_id": tools[("write_lyrics", "v5")],
            "payload_json": json.dumps({"prompt": "x"}),
        }
        task_id = http.post("/v1/generations", json=body).json()["task_id"]
        deadline = time.monotonic() + 30
        while http.get(f"/v1/generations/{task_id}").json()["status"] != "completed":
            assert time.monotonic() < deadline
            time.sleep(0.02)
    monkeypatch.setenv("SONGLAB_API_KEY", acct.api_key)
    monkeypatch.setenv("SONGLAB_BASE_URL", sandbox.base_url)
    out = tmp_path / "report" / "costs.html"
    assert cli.main(["report", "--out", str(out), "--ledger", str(tmp_path / "ledger")]) == 0
    document = out.read_text(encoding="utf-8")
    _self_contained(document)
    assert task_id in document and "write_lyrics" in document
    assert "$0.02" in document
    printed = capsys.readouterr().out
    assert f"wrote {out}" in printed
    assert acct.api_key not in printed + document
    assert list(tmp_path.glob("report/.*")) == []  # no temporary file left


def test_cli_report_needs_out(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["report"])
    assert "--out" in capsys.readouterr().err
