"""schemathesis's own CLI, ``--checks all`` with its stateful phase, against a real sandbox process.

What a team adopting the sandbox would run: ``schemathesis run <url>/openapi.json
--checks all`` (every check: server errors, status codes, content types,
response schemas and SSE events, positive data accepted, negative data
rejected, unsupported methods and their Allow header, missing auth headers,
use after free, resource availability, ...) with the examples, coverage,
fuzzing and stateful phases (links inferred from the document), deterministic
and bounded (``MAX_EXAMPLES``; the run stays under ~3 minutes on an idle 2-core
machine). It must report zero failures.

The fuzzing account gets what no JSON Schema can describe: real resources.
A schema can say "a uuid", not "the id of a file you uploaded", so a
``before_call`` hook (``_st_hooks.py``) gives *positive* cases real values of
this account for the file-id fields, ``vocal_id``, file inputs and the native
create's ``tool_id``/``payload_json`` (JSON text whose rules depend on the
tool); negative cases go out as drawn, and everything else is generated. Workers fail every task (``fail_tasks``: no audio
is rendered; reservations are released), so thousands of accepted creates cost
no CPU. The documented 500 (``payload_json`` sent as a raw JSON value) is the one
answer ``not_a_server_error`` would flag: negative cases that mutate
``payload_json`` into an object or array are excluded by the hook's
``filter_body`` (the spec documents that 500; ``tests/sandbox/http/test_native.py``
asserts it on its own), and nothing else is excluded. The ``/_sandbox`` admin routes run in a second
process of their own: they switch faults, tools and the clock, which would
otherwise turn the vendor run's answers into injected 503s.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.external._proc import ADMIN, Sandbox
from tests.sandbox._util import midi_file, tone

# per operation in the fuzzing phase. Measured side by side (load 1.3-1.9, with .pyc): 25 gives
# 3,234 + 671 cases in 46 s, 10 gives 2,620 + 455 in 38 s; 8 s is not worth 830 cases, so 25 stays
# (the 150 s of the old runs was load and a schemathesis process compiling all it imported).
MAX_EXAMPLES = int(os.environ.get("SONGLAB_ST_MAX_EXAMPLES", "25"))
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
ROOT = Path(__file__).resolve().parents[2]
COUNTS = re.compile(r"(\d+) generated")


def _resources(srv: Sandbox) -> tuple[str, dict[str, str]]:
    """A rich account and the real values its requests need: (api key, body overrides)."""
    acct = srv.admin.post("/_sandbox/accounts", json={"balance_tokens": 10**9}).json()
    with httpx.Client(
        base_url=srv.base_url, timeout=60, headers={"Authorization": f"Bearer {acct['api_key']}"}
    ) as c:

        def up(data: bytes, name: str, mime: str) -> str:
            r = c.post("/v1/files", files={"file": (name, data, mime)})
            assert r.status_code == 201, r.text
            return r.json()["file_id"]

        song = up(tone(3.0), "song.mp3", "audio/mpeg")
        midi = up(midi_file(), "tune.mid", "audio/midi")
        clone = c.post(
            "/v1/voice-clones",
            json={
                "reference_file_id": up(
                    (Path(__file__).parents[2] / "data" / "voice_female.mp3").read_bytes(),
                    "voice.mp3",
                    "audio/mpeg",
                ),
                "consent": True,
                "rights_attestation": "my own voice",
            },
        )
        assert clone.status_code == 201, clone.text
        deadline = time.monotonic() + 120
        while (snap := c.get(f"/v1/generations/{clone.json()['task_id']}").json())[
            "status"
        ] not in ("completed", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert snap["status"] == "completed", snap
        import json

        vocal_id = json.loads(snap["output"]["metadata_json"])["vocal_id"]
        lyrics_tool = next(
            t["id"] for t in c.get("/v1/tools").json()["data"] if t["operation"] == "write_lyrics"
        )
    # from here on every task fails in the worker: nothing renders, reservations come back
    srv.admin.put("/_sandbox/faults", json={"fail_tasks": 1.0}).raise_for_status()
    resources = {
        **dict.fromkeys(
            ("song_file_id", "hum_file_id", "recording_file_id", "reference_file_id"), song
        ),
        "midi_file_id": midi,
        "vocal_id": vocal_id,
        "audio_url": f"file_id:{song}",
        "vocal_reference": f"file_id:{song}",
        "tool_id": lyrics_tool,
        "payload_json": '{"prompt": "rain on a tin roof"}',
        "start_ms": 0,
        "end_ms": 500,
    }
    return acct["api_key"], resources


def _run(
    srv: Sandbox, tmp: Path, *args: str, resources: dict[str, object] | None = None
) -> tuple[int, str, int, float]:
    cfg = tmp / "schemathesis.toml"
    cfg.write_text("")
    cmd = [
        str(SCHEMATHESIS),
        "--no-color",
        "--config-file",
        str(cfg),
        "run",
        f"{srv.base_url}/openapi.json",
        "--checks",
        "all",
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "-n",
        str(MAX_EXAMPLES),
        "--generation-deterministic",
        "--max-failures",
        "50",
        "--request-timeout",
        "30",
        "--suppress-health-check",
        "all",
        *args,
    ]
    start = time.perf_counter()
    import json

    env = {
        **os.environ,
        "NO_COLOR": "1",
        "SCHEMATHESIS_TELEMETRY": "false",
        "SCHEMATHESIS_HOOKS": "tests.external._st_hooks",
        "SONGLAB_ST_RESOURCES": json.dumps(resources or {}),
        "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
    }
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp)
    seconds = time.perf_counter() - start
    text = out.stdout + out.stderr
    found = COUNTS.findall(text)
    return out.returncode, text, int(found[-1]) if found else 0, seconds


def test_vendor_api_passes_every_check(sandbox_proc: Sandbox, tmp_path: Path, capsys) -> None:
    key, resources = _resources(sandbox_proc)
    code, text, cases, seconds = _run(
        sandbox_proc,
        tmp_path,
        "-H",
        f"Authorization: Bearer {key}",
        "--exclude-path-regex",
        "^/_sandbox",
        resources=resources,
    )
    with capsys.disabled():
        print(f"\nschemathesis (vendor API): {cases} test cases in {seconds:.0f} s, exit {code}")
        print(
            "\n".join(
                line
                for line in text.splitlines()
                if re.search(
                    r"(Examples|Coverage|Fuzzing|Stateful|Selected|Tested|"
                    r"scenarios|generated|links|transitions|Links|API Links)",
                    line,
                )
            )
        )
    assert code == 0, text[-8000:]
    assert cases > 500, text[-2000:]


def test_admin_api_passes_every_check(sandbox_proc: Sandbox, tmp_path: Path, capsys) -> None:
    code, text, cases, seconds = _run(
        sandbox_proc,
        tmp_path,
        "-H",
        f"X-Sandbox-Admin-Token: {ADMIN}",
        "--include-path-regex",
        "^/_sandbox",
    )
    with capsys.disabled():
        print(f"\nschemathesis (admin API): {cases} test cases in {seconds:.0f} s, exit {code}")
    assert code == 0, text[-6000:]
    assert cases > 50, text[-2000:]
