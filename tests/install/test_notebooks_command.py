"""`songlab notebooks DIR` from the checkout (an editable install): what it copies, where,
and that it never overwrites a user's files unless told to."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest

from songlab import cli
from songlab.notebooks import checkout_files, copy_notebooks, lab_files

ROOT = Path(__file__).resolve().parents[2]


def test_the_selection_is_the_notebooks_their_sanitize_file_and_the_fixtures() -> None:
    files = checkout_files(ROOT)
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert [p.name for p in files if p.suffix == ".ipynb"] == notebooks
    assert PurePosixPath("notebooks/sanitize.cfg") in files
    data = {p.name for p in files if p.parts[0] == "data"}
    assert {"voice_female.mp3", "voice_male.mp3", "hum.mp3", "melody.mid"} <= data
    assert "make_fixtures.py" not in data  # the script that made them stays in the checkout
    assert not [p for p in files if p.parts[0] not in ("notebooks", "data")]


def test_every_fixture_a_notebook_names_is_copied() -> None:
    # the notebooks read fixtures as ../data/NAME; each such NAME must travel with them
    copied = {p.name for p in checkout_files(ROOT) if p.parts[0] == "data"}
    named = set()
    for nb in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            named |= {part.split('"')[0].split("'")[0] for part in source.split("../data/")[1:]}
    assert named, "the notebooks read at least the voice reference"
    assert named <= copied, named - copied


def test_an_editable_install_reads_the_checkout() -> None:
    assert [rel for rel, _ in lab_files()] == checkout_files(ROOT)


def test_copy_into_a_new_directory_keeps_the_checkout_layout(tmp_path: Path) -> None:
    dest = tmp_path / "my" / "lab"
    written = copy_notebooks(dest)
    assert sorted(p.relative_to(dest).as_posix() for p in written) == [
        str(rel) for rel in checkout_files(ROOT)
    ]
    for path in written:
        assert path.read_bytes() == (ROOT / path.relative_to(dest)).read_bytes()
    # the relative path the notebooks use resolves inside DIR
    assert (dest / "notebooks" / "../data/voice_female.mp3").resolve().is_relative_to(dest)
    assert not list(dest.rglob("*.partial"))


def test_existing_files_are_never_overwritten_without_force(tmp_path: Path) -> None:
    copy_notebooks(tmp_path)
    mine = tmp_path / "notebooks" / "01_quickstart.ipynb"
    mine.write_text("my edits", encoding="utf-8")
    (tmp_path / "data" / "hum.mp3").unlink()  # a missing file is not a reason to proceed
    with pytest.raises(FileExistsError, match=r"notebooks/01_quickstart\.ipynb.*--force"):
        copy_notebooks(tmp_path)
    assert mine.read_text(encoding="utf-8") == "my edits"
    assert not (tmp_path / "data" / "hum.mp3").exists(), "nothing is written when it refuses"
    copy_notebooks(tmp_path, force=True)
    assert mine.read_bytes() == (ROOT / "notebooks" / "01_quickstart.ipynb").read_bytes()
    assert (tmp_path / "data" / "hum.mp3").exists()


def test_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["notebooks", "lab"]) == 0
    out = capsys.readouterr().out
    n = len(list((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    assert f"copied {n} notebooks and" in out and "next: jupyter lab lab" in out
    assert cli.main(["notebooks", "lab"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("songlab notebooks: DIR: lab already has") and "--force" in err
    assert cli.main(["notebooks", "lab", "--force"]) == 0
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    assert cli.main(["notebooks", "afile"]) == 1
    assert "DIR: afile exists and is not a directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["notebooks"])
    assert exc.value.code == 2
    assert "DIR" in capsys.readouterr().err
    assert cli.main(["--help"]) == 0
    assert "notebooks" in capsys.readouterr().out
