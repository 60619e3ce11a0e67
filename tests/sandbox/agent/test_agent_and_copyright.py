"""Agent One at the core (validation, reserve floor, the runner seam) and copyright checks."""

from __future__ import annotations

import io
import json
from decimal import Decimal

import httpx
import numpy as np
import pytest
import soundfile as sf

from songlab.pricing import AGENT_RATES
from tests.sandbox._util import (
    assert_invalid,
    balance,
    client,
    create,
    ledger,
    run,
    signed_url,
    tone,
    upload,
)


@pytest.mark.parametrize(
    "payload,field",
    [
        ({}, "prompt"),
        ({"prompt": ""}, "prompt"),
        ({"prompt": 5}, "prompt"),
        ({"prompt": "x", "max_steps": 51}, "max_steps"),
        ({"prompt": "x", "max_steps": -1}, "max_steps"),
        ({"prompt": "x", "max_steps": "3"}, "max_steps"),
        ({"prompt": "x", "studio": {}}, "studio"),
        ({"prompt": "x", "visualizer_theme": "dark"}, "visualizer_theme"),
        ({"prompt": "x", "max_budget": -5}, "max_budget"),
        ({"prompt": "x", "workflow_build_only": "no"}, "workflow_build_only"),
        ({"prompt": "x", "system_prompt": 3}, "system_prompt"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_agent_payload_rules(acct, payload, field):
    assert_invalid(create(acct, "agent", "flash", payload), field)


@pytest.mark.parametrize("tier", ["flash", "standard", "pro"])
def test_agent_reserve_floor(sandbox, new_account, tier):
    floor_tokens = int(AGENT_RATES[tier].reserve_floor / Decimal("0.01"))
    with client(sandbox, new_account(balance_tokens=floor_tokens - 1).api_key) as c:
        r = create(c, "agent", tier, {"prompt": "hello"})
        assert r.status_code == 402 and r.json()["error"] == "InsufficientFunds"
    with client(sandbox, new_account(balance_tokens=floor_tokens).api_key) as c:
        assert create(c, "agent", tier, {"prompt": "hello", "max_steps": 0}).status_code == 201


def test_agent_run_answers_with_text_trace_and_fee_line(acct, admin):
    snap = run(acct, "agent", "flash", {"prompt": "write short lyrics about rain", "max_steps": 1})
    assert snap["status"] == "completed", snap
    assert isinstance(snap["output"]["text"], str) and snap["output"]["text"]
    trace = json.loads(snap["output"]["metadata_json"])
    assert {"steps", "usage", "agent_fee_usd", "total_cost_usd", "stopped_by"} <= set(trace)
    lines = ledger(admin, acct.account_id)
    fee = [x for x in lines if x["kind"] == "agent_fee"]
    assert len(fee) == 1 and fee[0]["task_id"] == snap["task_id"]
    assert (fee[0]["operation"], fee[0]["model"]) == ("agent", "flash")
    for sub in (x for x in lines if x["kind"] == "agent_sub_tool"):
        assert sub["parent_task_id"] == snap["task_id"] and sub["task_id"] != snap["task_id"]
    assert Decimal(snap["cost_usd"]) == sum(Decimal(x["amount_usd"]) for x in lines)


# --- the runner seam, with a scripted runner on a sandbox of its own ------------------


@pytest.fixture
def seam_sandbox():
    from songlab.sandbox.http.server import serve_in_thread

    with serve_in_thread(speed=1000, admin_token="seam-admin") as srv:
        yield srv


def test_runner_seam_subtasks_and_agent_fee(seam_sandbox):
    from songlab.sandbox.tasks.context import Outcome, SubtaskRefused

    seen: dict = {}

    def scripted(ctx):
        sub = ctx.create_subtask("write_lyrics", "v5", {"prompt": "rain"})
        snap = ctx.run_subtask(sub)
        seen["sub"] = snap
        with pytest.raises(SubtaskRefused) as refused:
            ctx.create_subtask("generate_song", "v5", {})
        seen["refused"] = refused.value.status
        web = ctx.run_subtask(ctx.create_subtask("web_search", "internal", {"query": "x"}))
        seen["web"] = web["status"]
        return Outcome(
            text="done", metadata={"steps": []}, charges=[ctx.agent_fee(Decimal("0.00123456"))]
        )

    seam_sandbox.sandbox.worker.runners["agent"] = scripted
    adm = httpx.Client(
        base_url=seam_sandbox.base_url,
        verify=False,
        headers={"X-Sandbox-Admin-Token": "seam-admin"},
    )
    with client(seam_sandbox, "sk-sandbox-demo") as c, adm:
        before = balance(c)["total_effective"]
        snap = run(c, "agent", "pro", {"prompt": "go"})
        assert snap["status"] == "completed" and snap["output"]["text"] == "done"
        assert seen["sub"]["status"] == "completed"
        assert seen["sub"]["parent_task_id"] == snap["task_id"]
        assert seen["refused"] == 422 and seen["web"] == "completed"
        lines = adm.get("/_sandbox/accounts/acct_demo/ledger").json()["entries"]
        mine = [x for x in lines if snap["task_id"] in (x["task_id"], x["parent_task_id"])]
        kinds = sorted((x["kind"], x["operation"], x["amount_usd"]) for x in mine)
        assert kinds == [
            ("agent_fee", "agent", "0.00123456"),
            ("agent_sub_tool", "web_search", "0.01000000"),
            ("agent_sub_tool", "write_lyrics", "0.02000000"),
        ]
        assert snap["cost_usd"] == "0.03123456"
        assert before - balance(c)["total_effective"] in (3, 4)
        listed = {t["task_id"]: t for t in c.get("/v1/generations").json()["data"]}
        assert listed[seen["sub"]["task_id"]]["parent_task_id"] == snap["task_id"]


# --- copyright --------------------------------------------------------------------------


def _reencode(data: bytes, gain: float = 0.9) -> bytes:
    audio, sr = sf.read(io.BytesIO(data), dtype="float32")
    buf = io.BytesIO()
    sf.write(buf, np.clip(audio * gain, -1, 1), sr, format="WAV")
    return buf.getvalue()


def _check(c, fid: str) -> dict:
    snap = run(c, "copyright", "v5", {"audio": f"file_id:{fid}"})
    assert snap["status"] == "completed", snap
    return json.loads(snap["output"]["metadata_json"])


def test_copyright_flags_outputs_of_another_account(sandbox, acct, new_account):
    made = run(acct, "generate_music", "v5", {"prompt": "cinematic", "duration_seconds": 5})
    asset = made["output"]["assets"][0]
    data = httpx.get(signed_url(acct, asset["file_id"])).content
    with client(sandbox, new_account().api_key) as other:
        exact = _check(other, upload(other, data))
        assert exact["matched"] is True and exact["similarity"] == 1.0
        assert exact["match"] == {"owner": "another_account"}  # nothing about whose
        near = _check(other, upload(other, _reencode(data), name="x.wav", mime="audio/wav"))
        assert near["matched"] is True and near["match"] == {"owner": "another_account"}
        clean = _check(other, upload(other, tone(5.0, freq=97.0)))
        assert clean["matched"] is False and clean["match"] is None
    own = _check(acct, asset["file_id"])
    assert own["matched"] is True
    assert own["match"] == {
        "owner": "self",
        "task_id": made["task_id"],
        "file_id": asset["file_id"],
    }


def test_refused_subtask_keeps_no_inline_input(seam_sandbox):
    """Validation runs in the insert's transaction: the stored inline file is rolled back."""
    import base64

    from songlab.sandbox.tasks.context import Outcome, SubtaskRefused

    seen: dict = {}
    inline = {"base64": base64.b64encode(tone(0.5)).decode(), "filename": "t.mp3"}

    def files(ctx) -> int:
        return ctx.store.one(
            "SELECT COUNT(*) FROM files WHERE account_id = ? AND origin = 'inline'",
            (ctx.account_id,),
        )[0]

    def scripted(ctx):
        before = files(ctx)
        with pytest.raises(SubtaskRefused) as refused:  # the file is valid, the effect is not
            ctx.create_subtask("audio_effect", "v5", {"audio": inline, "effect": "bogus"})
        seen["refused"] = (refused.value.status, refused.value.body["message"])
        seen["after_refused"] = files(ctx) - before
        ctx.create_subtask("audio_effect", "v5", {"audio": inline, "effect": "reverb"})
        seen["after_accepted"] = files(ctx) - before
        return Outcome(
            text="done", metadata={"steps": []}, charges=[ctx.agent_fee(Decimal("0.001"))]
        )

    seam_sandbox.sandbox.worker.runners["agent"] = scripted
    with client(seam_sandbox, "sk-sandbox-demo") as c:
        snap = run(c, "agent", "flash", {"prompt": "go"})
    assert snap["status"] == "completed", snap
    assert seen["refused"][0] == 422 and seen["refused"][1].startswith("effect")
    assert seen["after_refused"] == 0
    assert seen["after_accepted"] == 1  # the same input is stored when the sub-task is accepted
