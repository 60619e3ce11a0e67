"""The library export (songlab.ledger.library): names, templates, the manifest, re-runs.

Against the session sandbox (a fresh account per test); the kill-and-resume test with 300
assets in a real process is ``test_library_kill.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from decimal import Decimal as D
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import songlab.ledger as ledger
from songlab.client import Client, RecordStore
from songlab.ledger.library import MANIFEST_COLUMNS, ExportProgress, export_library
from songlab.ledger.naming import FIELDS, check_template, render, slug, take_filename


def test_slug_keeps_the_first_words_in_ascii() -> None:
    assert slug("Slow sad piano ballad, in A minor") == "slow-sad-piano-ballad-in-a"
    assert slug("  Café  Ünïcode — fado!  ", words=3) == "cafe-unicode-fado"
    assert slug("///") == "" and slug("") == ""
    assert len(slug("x" * 500)) == 48


def test_take_filename_names_model_take_prompt_and_id() -> None:
    name = take_filename(
        model="v7",
        take=2,
        prompt="Slow sad piano ballad in A minor",
        task_id="3f2c1a2b-0000-4000-8000-000000000000",
        ext="mp3",
    )
    assert name == "v7-take2-slow-sad-piano-ballad-in-a-3f2c1a2b.mp3"
    assert take_filename(model=None, take=None, prompt="", task_id="t_xyz", ext="wav") == (
        "unknown-takeunknown-xyz.wav"
    )


@pytest.mark.parametrize(
    ("template", "rule"),
    [
        ("{project}/{colour}.{ext}", "unknown field {colour}"),
        ("{project}/{prompt}.mp3", "must end with .{ext}"),
        ("{ext}/{prompt}.{ext}", "must end with .{ext} (and name it once)"),
        ("/abs/{prompt}.{ext}", "must be a relative path"),
        ("", "a non-empty text"),
        ("{project/{prompt}.{ext}", "template: "),
    ],
    ids=["unknown-field", "no-ext", "ext-twice", "absolute", "empty", "unbalanced"],
)
def test_a_bad_template_is_refused_naming_the_rule(template: str, rule: str) -> None:
    with pytest.raises(ValueError, match="template: ") as err:
        check_template(template)
    assert rule in str(err.value)
    if "unknown field" in rule:
        assert all("{" + f + "}" in str(err.value) for f in FIELDS)  # the fields are listed


def test_a_field_value_never_leaves_the_folder() -> None:
    values = {f: "x" for f in FIELDS} | {"project": "../../etc", "prompt": "a/b\\c:d*e"}
    path = render("{project}/{prompt}-{take}", values)
    assert path == "-..-etc/a-b-c-d-e-x"  # no separator, no leading dot (a hidden file)
    with pytest.raises(ValueError, match="leave|gives the path"):
        render("../{prompt}", values)


def _client(sandbox: Any, account: Any, **kw: Any) -> Client:
    return Client(account.api_key, base_url=sandbox.base_url, quiet=True, cache=False, **kw)


def _song(client: Client, prompt: str, *, model: str = "v5", take: int = 1, seed: int = 1) -> str:
    handle = client.generations.create(
        operation="generate_song",
        model=model,
        payload={"prompt": prompt, "duration_seconds": 5, "seed": seed},
        take=take,
    )
    handle.wait()
    return handle.task_id


def _files(folder: Path) -> set[str]:
    return {
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and not p.name.startswith(".") and not p.name.startswith("manifest.")
    }


def test_export_names_files_writes_a_whole_manifest_and_keeps_them_private(
    sandbox: Any, new_account: Any, tmp_path: Path
) -> None:
    account = new_account()
    record = RecordStore(tmp_path / "record.sqlite", keep_payloads=True)
    with _client(sandbox, account, record=record) as client:
        with ledger.attribution(project="album"):
            a = _song(client, "Rain on the window, I count every drop", model="v7")
            b = _song(client, "Rain on the window, I count every drop", model="v7", take=2, seed=2)
            c = _song(client, "sunny ukulele pop")
        with ledger.attribution(project="other"):
            _song(client, "not in the album")
        lyrics = client.generations.create(
            operation="write_lyrics", model="v5", payload={"prompt": "a song about rain"}
        )
        lyrics.wait()
        seen: list[ExportProgress] = []
        out = tmp_path / "library"
        result = export_library(client, out, project="album", progress=seen.append)
        frame = ledger.tasks_frame(client)
    assert result.ok and result.files == 3 and result.downloaded == 3 and result.tasks == 3
    assert result.prompts_unknown == 0
    assert _files(out) == {
        f"album/v7/rain-on-the-window-i-count-take1-{a.replace('-', '')[:8]}.mp3",
        f"album/v7/rain-on-the-window-i-count-take2-{b.replace('-', '')[:8]}.mp3",
        f"album/v5/sunny-ukulele-pop-take1-{c.replace('-', '')[:8]}.mp3",
    }
    manifest = pd.read_csv(out / "manifest.csv", dtype=str)
    # the ledger's CSV convention: a time column says its zone in its header
    assert [c.removesuffix(" (UTC)") for c in manifest.columns] == list(MANIFEST_COLUMNS)
    assert set(manifest["task_id"]) == {a, b, c} and manifest["error"].isna().all()
    costs = dict(zip(frame["task_id"], frame["cost_usd"], strict=True))
    for row in manifest.itertuples():
        content = (out / row.file).read_bytes()
        assert hashlib.sha256(content).hexdigest() == row.sha256 == row.blob_hash
        assert D(row.cost_usd) == costs[row.task_id]  # the ledger's cost, to the cent
        assert json.loads(row.request)["tool_id"]  # the request as songlab's record kept it
    assert set(manifest["cost_usd"]) == {"0.12000000", "0.07000000"}
    # private: files 0600, folders 0700, the journal included
    for p in [out, *out.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), (p, oct(mode))
    phases = [p.phase for p in seen]
    assert phases[0] == "tasks" and phases[-1] == "done" and "files" in phases
    files = [p for p in seen if p.phase == "files"]
    assert files[-1].done == files[-1].total == 3 and files[-1].downloaded == 3


def test_a_second_run_downloads_nothing_and_a_damaged_file_is_fetched_again(
    sandbox: Any, new_account: Any, tmp_path: Path
) -> None:
    account = new_account()
    with _client(sandbox, account) as client:
        ids = [_song(client, f"loop {i}", seed=i) for i in range(3)]
        out = tmp_path / "lib"
        first = export_library(client, out, template="{model}/{task}.{ext}")
        again = export_library(client, out, template="{model}/{task}.{ext}")
        assert (first.downloaded, again.downloaded, again.present) == (3, 0, 3)
        cut = out / "v5" / f"{ids[0]}.mp3"
        cut.write_bytes(cut.read_bytes()[:1000])  # a damaged file
        (out / "v5" / f"{ids[1]}.mp3").unlink()  # a lost one
        (out / "v5" / f".{ids[2]}.mp3.{'0' * 32}.tmp").write_bytes(b"half")  # a killed write
        third = export_library(client, out, template="{model}/{task}.{ext}")
    assert (third.downloaded, third.present) == (2, 1)
    assert _files(out) == {f"v5/{i}.mp3" for i in ids}
    assert not list(out.rglob("*.tmp"))
    manifest = pd.read_csv(out / "manifest.csv", dtype=str)
    for row in manifest.itertuples():
        assert hashlib.sha256((out / row.file).read_bytes()).hexdigest() == row.blob_hash


def test_the_same_bytes_are_fetched_once_and_clashing_names_are_numbered(
    sandbox: Any, new_account: Any, tmp_path: Path
) -> None:
    account = new_account()
    with _client(sandbox, account, reuse=False) as client:
        # two tasks of the very same request and seed: the same audio, the same blob hash
        twins = [_song(client, "twin song", seed=5) for _ in range(2)]
        other = _song(client, "twin song", seed=6)
        out = tmp_path / "lib"
        result = export_library(
            client,
            out,
            template="{model}/{prompt}.{ext}",
            prompts=dict.fromkeys(twins + [other], "twin song"),
        )
    assert (result.downloaded, result.copied, result.files) == (2, 1, 3)
    assert _files(out) == {"v5/twin-song.mp3", "v5/twin-song-2.mp3", "v5/twin-song-3.mp3"}
    manifest = pd.read_csv(out / "manifest.csv", dtype=str).set_index("task_id")
    assert manifest.loc[twins[0], "blob_hash"] == manifest.loc[twins[1], "blob_hash"]
    assert manifest.loc[twins[0], "file"] != manifest.loc[twins[1], "file"]


def test_selection_by_notebook_and_period_and_a_parquet_manifest(
    sandbox: Any, new_account: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = new_account()
    with _client(sandbox, account) as client:
        monkeypatch.setenv("SONGLAB_ORIGIN", "/home/me/notebooks/01_quickstart.ipynb")
        mine = _song(client, "from the quickstart")
        monkeypatch.setenv("SONGLAB_ORIGIN", "/home/me/notebooks/05_ab_listening.ipynb")
        _song(client, "from the listening notebook")
        out = tmp_path / "lib"
        result = export_library(
            client,
            out,
            notebook="01_quickstart",
            manifest="parquet",
            template="{notebook}/{id}.{ext}",
        )
        assert result.tasks == 1 and _files(out) == {
            f"01_quickstart/{mine.replace('-', '')[:8]}.mp3"
        }
        back = pd.read_parquet(out / "manifest.parquet")
        assert str(back["cost_usd"].dtype).startswith("decimal128") and back[
            "task_id"
        ].tolist() == [mine]
        assert stat.S_IMODE((out / "manifest.parquet").stat().st_mode) == 0o600
        none = export_library(client, tmp_path / "empty", period="2020-01")
        assert none.tasks == none.files == 0 and len(none.manifest) == 0
        with pytest.raises(ValueError, match="period: "):
            export_library(client, tmp_path / "bad", period="someday")


def test_bad_arguments_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    for kw, rule in (
        ({"manifest": "xlsx"}, "manifest: 'csv' or 'parquet'"),
        ({"workers": 0}, "workers: a whole number 1-32"),
        ({"template": "{nope}.{ext}"}, "template: unknown field {nope}"),
    ):
        with pytest.raises(ValueError, match=rule.replace("{", r"\{").replace("}", r"\}")):
            export_library(object(), tmp_path / "lib", **kw)
    assert not (tmp_path / "lib").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="folder: .* is a file"):
        export_library(object(), tmp_path / "file")


class _Flaky:
    """A client whose download of one file fails: the export goes on and says which."""

    def __init__(self, inner: Client, bad: str) -> None:
        self._inner, self._bad = inner, bad
        self.generations, self.record, self.key_id = inner.generations, inner.record, inner.key_id
        self.files = self

    def download(self, file_id: str) -> bytes:
        if file_id == self._bad:
            raise ConnectionError("the network went away")
        return self._inner.files.download(file_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_failed_download_is_named_in_the_manifest_and_the_rest_written(
    sandbox: Any, new_account: Any, tmp_path: Path
) -> None:
    account = new_account()
    with _client(sandbox, account) as client:
        ids = [_song(client, f"song {i}", seed=i) for i in range(2)]
        bad = client.generations.get(ids[0]).file_ids[0]
        result = export_library(_Flaky(client, bad), tmp_path / "lib")
        assert not result.ok and result.files == 1 and result.failed[0][0] == bad
        assert "ConnectionError: the network went away" in result.failed[0][1]
        assert "1 failed" in str(result)
        manifest = pd.read_csv(tmp_path / "lib" / "manifest.csv", dtype=str)
        assert len(manifest) == 2 and manifest["error"].notna().sum() == 1
        healed = export_library(client, tmp_path / "lib")  # the next run fetches only it
        assert healed.ok and (healed.downloaded, healed.present) == (1, 1)
    assert os.path.exists(tmp_path / "lib" / "manifest.csv")


def test_a_template_without_prompt_says_nothing_of_prompts(sandbox, new_account, tmp_path) -> None:
    """The fallback of {prompt} is explained only where the template uses {prompt}."""
    account = new_account()
    record = RecordStore(tmp_path / "record.sqlite", keep_payloads=False)  # prompts unknown
    with _client(sandbox, account, record=record) as client:
        with ledger.attribution(project="p"):
            _song(client, "a song whose prompt the record does not keep")
        plain = export_library(client, tmp_path / "a", project="p", template="{model}-{id}.{ext}")
        named = export_library(client, tmp_path / "b", project="p")  # the default names {prompt}
    assert plain.prompts_unknown == 0 and "{prompt}" not in str(plain)
    assert named.prompts_unknown == 1 and "their {prompt} is the operation" in str(named)
