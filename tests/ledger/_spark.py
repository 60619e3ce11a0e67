"""The Spark tests' shared JVM: what the ``spark_jvm`` fixture yields, and when it skips."""

from __future__ import annotations

import os
import shutil
from typing import Any, NamedTuple

import pytest


class SparkJVM(NamedTuple):
    """The one Spark JVM of the test run: a classic ``session`` in this process and the
    ``remote`` address (``sc://127.0.0.1:PORT``) a Spark Connect client reaches it at."""

    session: Any
    remote: str


def java_or_skip() -> None:
    """Skip where there is no Java and none can be installed here; where apt-get could
    install it (root, as in CI) its absence is a failure: ``make test`` runs ``java-deps``."""
    if shutil.which("java") is not None:
        return
    if os.geteuid() == 0 and shutil.which("apt-get") is not None:
        pytest.fail(
            "no Java runtime although apt-get could install one: run `make java-deps` "
            "(openjdk-17-jre-headless; `make test` runs it first)"
        )
    pytest.skip(
        "Spark tests: no Java runtime, and installing openjdk-17-jre-headless needs root "
        "and apt-get (make java-deps)"
    )
