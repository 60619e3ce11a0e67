"""Where a create came from: the notebook a Jupyter kernel runs, else the script."""

from __future__ import annotations

import os
import sys

import pytest

from songlab.client._origin import current_origin


def test_a_jupyter_kernel_names_its_notebook(tmp_path):
    jupyter_client = pytest.importorskip("jupyter_client")
    env = {k: v for k, v in os.environ.items() if k != "SONGLAB_ORIGIN"}
    env["JPY_SESSION_NAME"] = str(tmp_path / "study.ipynb")  # what jupyter_server sets
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(env=env, cwd=str(tmp_path))
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        out = []
        kc.execute_interactive(
            "from songlab.client._origin import current_origin\nprint(current_origin())",
            timeout=60,
            output_hook=lambda m: out.append(m["content"].get("text", "")),
        )
        kc.stop_channels()
    finally:
        km.shutdown_kernel(now=True)
    assert "".join(out).strip() == str(tmp_path / "study.ipynb")


def test_a_script_names_itself_and_the_env_names_it_first(monkeypatch, tmp_path):
    monkeypatch.delenv("SONGLAB_ORIGIN")
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "make_songs.py")])
    assert current_origin() == str((tmp_path / "make_songs.py").resolve())
    monkeypatch.setattr(sys, "argv", ["-c"])
    assert current_origin() is None
    monkeypatch.setenv("SONGLAB_ORIGIN", "batch-42")
    assert current_origin() == "batch-42"
