"""The public surface: a sorted __all__, and the sandbox never imported by the client."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import songlab
import songlab.client

CLIENT_DIR = pathlib.Path(songlab.client.__file__).parent


def test_all_is_sorted_and_complete():
    assert songlab.client.__all__ == sorted(songlab.client.__all__)
    for name in songlab.client.__all__:
        assert hasattr(songlab.client, name), name
    # dir(): RECORD_SCHEMA is made on first use (module __getattr__ / __dir__)
    public = {n for n in dir(songlab.client) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(songlab.client, n)).__name__ == "module"}
    assert public - modules - {"annotations"} == set(songlab.client.__all__)


def test_songlab_exports_connect():
    assert "connect" in songlab.__all__ and callable(songlab.connect)


def test_only_connect_imports_the_sandbox():
    offenders = [
        p.name
        for p in CLIENT_DIR.glob("*.py")
        if "songlab.sandbox" in p.read_text() and p.name != "_connect.py"
    ]
    assert offenders == []


def test_import_reads_no_environment_and_starts_nothing():
    code = (
        "import os, sys; os.environ['SONGLAB_API_KEY']='x';"
        "import songlab, songlab.client;"
        "print(any(m.startswith('songlab.sandbox') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
