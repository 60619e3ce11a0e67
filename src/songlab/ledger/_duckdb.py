"""The DuckDB backend of the ledger engine: embedded, the default.

It reads an Arrow table in place (zero copy; dictionary columns as they are) and a
``LedgerStore``'s month-partitioned Parquet files in place, out of core (1 GB of memory,
then a scratch directory), on all cores; sums are exact ``DECIMAL(38, 8)``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

__all__ = ["DuckDB"]


class DuckDB:
    """``engine.Backend`` on an in-process DuckDB connection (closed by :meth:`close`)."""

    dialect = "duckdb"

    def __init__(self, *, memory_limit: str = "1GB") -> None:
        import duckdb

        self._scratch = tempfile.mkdtemp(prefix="songlab-duckdb-")
        self.con: Any = duckdb.connect(
            config={
                "threads": max(1, os.cpu_count() or 1),
                "memory_limit": memory_limit,
                "temp_directory": self._scratch,
                "preserve_insertion_order": False,
            }
        )
        self.con.execute("SET TimeZone = 'UTC'")
        self.con.execute("SET enable_progress_bar = false")
        self._kept: list[pa.Table] = []  # registered tables stay alive while the view exists

    def register(self, name: str, table: pa.Table) -> None:
        self._kept.append(table)
        self.con.register(name, table)

    def register_dataset(self, name: str, root: Path, files: Sequence[Path]) -> None:
        # newest month first: a ledger's rows are newest first in each file, so a scan in
        # file order is the ledger's order (the CSV of every task keeps it)
        listed = ", ".join(
            "'" + str(f).replace("'", "''") + "'" for f in sorted(files, reverse=True)
        )
        self.con.execute(
            f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet([{listed}], "
            "hive_partitioning = true, union_by_name = true)"
        )

    def execute(self, sql: str) -> None:
        self.con.execute(sql)

    def materialize(self, name: str, sql: str) -> None:
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}")

    def arrow(self, sql: str) -> pa.Table:
        result: pa.Table = self.con.sql(sql).to_arrow_table()
        return result

    def write_csv(self, sql: str, path: Path) -> None:
        target = str(path).replace("'", "''")
        # the source's order (a ledger's: newest first), streamed: a sort of every task
        # would cost more than the whole rest of the report
        self.con.execute("SET preserve_insertion_order = true")
        try:
            self.con.execute(f"COPY ({sql}) TO '{target}' (FORMAT csv, HEADER true)")
        finally:
            self.con.execute("SET preserve_insertion_order = false")

    def close(self) -> None:
        try:
            self.con.close()
        finally:
            self._kept.clear()
            shutil.rmtree(self._scratch, ignore_errors=True)
