"""Secrets: no API key or admin token in any log line, repr, exception, OpenAPI text or notebook.

A workload with successes, every kind of error, retried faults and resumed
streams runs through the sync and async clients while logging is captured at
DEBUG from httpx, httpcore, uvicorn, fastapi and songlab. Then every log record,
the str/repr of every client object and exception (with its traceback), every
error body, ``/openapi.json`` and the outputs of every notebook under
``notebooks/`` are scanned for the secrets.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import traceback
from pathlib import Path
from typing import Any

import httpx
import pytest

from songlab.client import AsyncClient, Client, RetryPolicy, SonglabError
from tests.reliability._util import repo_root, tone

LOGGERS = (
    "",
    "httpx",
    "httpcore",
    "uvicorn",
    "uvicorn.error",
    "uvicorn.access",
    "fastapi",
    "songlab",
    "songlab.client",
    "songlab.sandbox",
    "python_multipart",
    "multipart",
)
# What a generated secret looks like (sandbox keys and admin tokens; a bearer header).
SECRET_PATTERNS = (
    re.compile(r"sk-sandbox-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"adm-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"Bearer\s+sk-[A-Za-z0-9_\-]{16,}"),
)
FAST = RetryPolicy(max_attempts=12, base_s=0.001, cap_s=0.01, max_total_s=20.0)


def _leaks(text: str, secrets: list[str]) -> list[str]:
    found = [s[:6] + "..." for s in secrets if s and s in text]
    found += [p.pattern for p in SECRET_PATTERNS if p.search(text)]
    return found


def _exception_texts(exc: BaseException) -> list[str]:
    return [str(exc), repr(exc), "".join(traceback.format_exception(exc))]


def _sync_workload(sandbox: Any, key: str, admin: httpx.Client, texts: list[str]) -> None:
    with Client(key, base_url=sandbox.base_url, retry=FAST) as client:
        texts += [repr(client), str(client)]
        up = client.files.upload(tone(1.0), filename="a.mp3")
        link = client.files.link(up)
        texts += [repr(up), repr(link), str(link)]
        r = admin.put(
            "/_sandbox/faults", json={"rate_limited": 0.5, "drop_stream_after": 2, "seed": 7}
        )
        assert r.status_code == 200
        try:
            h = client.generations.create(
                operation="write_lyrics", model="v5", payload={"prompt": "secret scan"}
            )
            events = list(client.generations.stream(h.task_id))
            task = client.generations.get(h.task_id)
        finally:
            assert admin.delete("/_sandbox/faults").status_code == 204
        texts += [repr(h), repr(task), str(task)] + [repr(e) for e in events]
        texts += [repr(client.account.balance()), repr(client.tools.list()[:3])]
        calls = [
            lambda: client.generations.get("no-such-task"),
            lambda: client.files.link("no-such-file"),
            lambda: client.files.download("no-such-file"),
            lambda: client.generations.create(
                operation="write_lyrics", model="v5", payload={"prompt": 5}
            ),
            lambda: client.voice_clones.create(
                reference_file_id="00000000-0000-4000-8000-000000000000",
                consent=True,
                rights_attestation="mine",
            ),
            lambda: client.generations.create(tool_id="not-a-tool", payload={"prompt": "x"}),
            lambda: client.generations.list(limit=0),
            lambda: Client(key + " trailing", base_url=sandbox.base_url),
            lambda: Client(key + "\nX-Injected: 1", base_url=sandbox.base_url),
        ]
        for call in calls:
            with pytest.raises((SonglabError, ValueError)) as info:
                call()
            texts += _exception_texts(info.value)
    with Client(key + "-wrong", base_url=sandbox.base_url, retry=FAST) as wrong:
        with pytest.raises(SonglabError) as info:
            wrong.account.balance()
        texts += _exception_texts(info.value) + [repr(wrong)]
    # a transport failure (nothing listens there) keeps the key out of its text too
    with Client(key, base_url="http://127.0.0.1:9", retry=RetryPolicy.never()) as dead:
        with pytest.raises(SonglabError) as info:
            dead.account.balance()
        texts += _exception_texts(info.value)


async def _async_workload(sandbox: Any, key: str, texts: list[str]) -> None:
    async with AsyncClient(key, base_url=sandbox.base_url, retry=FAST) as client:
        texts += [repr(client)]
        h = await client.generations.create(
            operation="write_lyrics", model="v5", payload={"prompt": "async scan"}
        )
        task = await client.generations.wait(h.task_id, timeout=60)
        texts += [repr(h), repr(task)]
        for call in (client.generations.get("missing"), client.files.link("missing")):
            try:
                await call
            except SonglabError as exc:
                texts += _exception_texts(exc)


def test_no_secret_in_logs_reprs_exceptions_or_error_bodies(
    sandbox, admin, new_account, caplog, capsys
):
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    acct = new_account()
    secrets = [acct.api_key, sandbox.admin_token, acct.api_key.removeprefix("sk-")]
    texts: list[str] = [
        repr(sandbox),
        str(sandbox),
        repr(sandbox.sandbox),
        repr(sandbox.sandbox.config),
    ]
    _sync_workload(sandbox, acct.api_key, admin, texts)
    asyncio.run(_async_workload(sandbox, acct.api_key, texts))
    # error bodies: a wrong key, a wrong admin token
    for r in (
        httpx.get(
            sandbox.base_url + "/v1/account/balance",
            headers={"Authorization": f"Bearer {acct.api_key}x"},
        ),
        httpx.get(
            sandbox.base_url + "/_sandbox/faults",
            headers={"X-Sandbox-Admin-Token": sandbox.admin_token + "x"},
        ),
    ):
        assert r.status_code == 401
        texts.append(r.text)
    records = list(caplog.records)
    assert any(r.name.startswith("httpx") for r in records)  # DEBUG capture did happen
    for r in records:
        texts += [r.getMessage(), repr(r.args), r.exc_text or ""]
        if r.exc_info and r.exc_info[1] is not None:
            texts += _exception_texts(r.exc_info[1])
    texts.append(caplog.text)
    leaks = {i: _leaks(t, secrets) for i, t in enumerate(texts) if _leaks(t, secrets)}
    with capsys.disabled():
        print(
            f"\nsecrets: scanned {len(records)} log records and {len(texts)} texts, "
            f"{len(leaks)} leaks"
        )
    assert leaks == {}, {i: (texts[i][:300], found) for i, found in leaks.items()}


def test_openapi_document_holds_no_secret(sandbox, new_account):
    acct = new_account()
    doc = httpx.get(sandbox.base_url + "/openapi.json")
    assert doc.status_code == 200
    text = doc.text
    assert _leaks(text, [acct.api_key, sandbox.admin_token]) == []
    assert "sk-sandbox-demo" not in text
    paths = json.loads(text)["paths"]
    assert "/v1/generations" in paths  # the document is the real one
    # the admin routes are declared (header name only, never a token), apart from the API
    for path, ops in paths.items():
        if path.startswith("/_sandbox"):
            assert all(op["tags"] == ["sandbox-admin"] for op in ops.values()), path


def _notebooks() -> list[Path]:
    return (
        sorted((repo_root() / "notebooks").rglob("*.ipynb"))
        if (repo_root() / "notebooks").is_dir()
        else []
    )


def _output_texts(nb: dict[str, Any]) -> list[str]:
    out = []
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []):
            for key in ("text", "traceback", "evalue"):
                v = o.get(key)
                out.append("".join(v) if isinstance(v, list) else str(v or ""))
            for value in (o.get("data") or {}).values():
                out.append("".join(value) if isinstance(value, list) else json.dumps(value))
    out.append(json.dumps(nb.get("metadata", {})))
    return out


@pytest.mark.parametrize(
    "path", _notebooks() or [None], ids=lambda p: p.name if p else "no-notebooks-yet"
)
def test_notebook_outputs_hold_no_secret(path):
    if path is None:
        pytest.skip("no notebooks/*.ipynb exist yet; the scan covers each one once written")
    nb = json.loads(path.read_text())
    import os

    secrets = [
        os.environ.get("SONGLAB_API_KEY", ""),
        os.environ.get("SONGLAB_SANDBOX_ADMIN_TOKEN", ""),
    ]
    for text in _output_texts(nb):
        assert _leaks(text, secrets) == [], (path.name, text[:200])


def test_scanner_finds_what_it_looks_for():
    """The scan is not vacuous: planted secrets are found."""
    assert _leaks("Authorization: Bearer sk-sandbox-AbCdEfGhIjKlMnOpQrStUv", [])
    assert _leaks("token adm-AbCdEfGhIjKlMnOpQrStUv12", [])
    assert _leaks("xx my-secret-value yy", ["my-secret-value"])
    assert _output_texts({"cells": [{"outputs": [{"text": ["a", "b"]}]}]})[0] == "ab"
