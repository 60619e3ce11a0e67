"""Fixtures of the ledger tests: synthetic task snapshots in design.md's shape, and the one
Spark session the Spark tests share."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from songlab.ledger.synthetic import synthetic_tasks
from tests.ledger._spark import SparkJVM, java_or_skip


@pytest.fixture(scope="session")
def records() -> list[dict[str, Any]]:
    """3000 synthetic task snapshots, newest first, with Agent One runs and failures."""
    return list(synthetic_tasks(3000, seed=7))


@pytest.fixture(scope="session")
def spark_jvm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkJVM]:
    """ONE local Spark session for every Spark test (a JVM takes seconds to start):
    ``local[1]``, one shuffle partition, no adaptive execution or whole-stage codegen, no
    UI, bound to loopback, with Spark Connect's plugin on a free loopback port so that a
    Connect client in another process (the ``--spark-remote`` path) runs on the same JVM."""
    java_or_skip()
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'songlab[spark]')")
    from songlab.ledger.spark import local_session

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    session = local_session(
        "local[1]",
        {
            # one partition, no adaptive re-planning, no whole-stage code generation: the
            # report's thirty-odd small queries each plan and compile less (the Spark file
            # took 86 s here against 107 s with two partitions and Spark's defaults, the
            # million-task report 41.5 s against 48 s; the figures are the same)
            "spark.sql.shuffle.partitions": "1",
            "spark.default.parallelism": "1",
            "spark.sql.adaptive.enabled": "false",
            "spark.sql.codegen.wholeStage": "false",
            "spark.driver.memory": "1g",
            "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(port),
        },
        scratch=tmp_path_factory.mktemp("spark"),
    )
    try:
        yield SparkJVM(session, f"sc://127.0.0.1:{port}")
    finally:
        session.stop()
