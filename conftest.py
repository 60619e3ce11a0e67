"""What every pytest run of this repository sets, the notebooks run alone included
(``pytest notebooks --nbval``, which does not load ``tests/conftest.py``): ``connect()``'s
sandbox keeps nothing, so no run writes the user's sandbox file and every notebook starts
from a fresh service. A test of the kept sandbox gives its kernels a file of its own."""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    os.environ["SONGLAB_SANDBOX_DB"] = ":memory:"
