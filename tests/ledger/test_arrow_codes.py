"""The cube grouped by integer codes of the tasks' dictionary strings (``_arrow_codes``, an
in-memory table on DuckDB) is the cube grouped by the strings (``relation.CUBE_SQL``), row for
row, whatever the chunks' dictionaries hold: values that differ from chunk to chunk, a value
twice in one dictionary, a null in a dictionary, null indices, empty chunks."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

import songlab.ledger._arrow_codes as arrow_codes
from songlab.ledger._duckdb import DuckDB
from songlab.ledger.engine import Ledger
from songlab.ledger.relation import CUBE_COLUMNS, CUBE_SQL
from songlab.ledger.synthetic import synthetic_table

BASE = synthetic_table(90, seed=4, days=3, labels=True, compact=True)
TEXT = [c for c in CUBE_COLUMNS if pa.types.is_dictionary(BASE.schema.field(c).type)]
WORDS = st.sampled_from(["agent", "generate_song", "a", "A", "", "é", "completed"])


@st.composite
def _dictionary_column(draw: st.DrawFn, rows: int, index: pa.DataType) -> pa.DictionaryArray:
    words = draw(st.lists(st.none() | WORDS, max_size=5))
    slots = st.none() | st.integers(0, len(words) - 1) if words else st.none()
    picks = draw(st.lists(slots, min_size=rows, max_size=rows))
    return pa.DictionaryArray.from_arrays(pa.array(picks, index), pa.array(words, pa.string()))


@st.composite
def _tasks(draw: st.DrawFn) -> pa.Table:
    """One to three chunks of the tasks (some empty), each with dictionaries of its own."""
    sizes = draw(st.lists(st.integers(0, 30), min_size=1, max_size=3))
    chunks, start = [], 0
    for size in sizes:
        part = BASE.slice(start, size)
        start += size
        for name in TEXT:
            i = part.schema.get_field_index(name)
            index = part.schema.field(name).type.index_type
            part = part.set_column(i, name, draw(_dictionary_column(size, index)))
        chunks.append(part)
    return pa.concat_tables(chunks)


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


@settings(max_examples=30, deadline=None)
@given(tasks=_tasks())
def test_the_cube_by_codes_is_the_cube_by_strings(tasks: pa.Table) -> None:
    backend = DuckDB()
    try:
        backend.register("tasks", tasks)
        lg = Ledger(backend)
        lg.define()
        by_strings = backend.arrow(lg.sql(CUBE_SQL))
        lg.precompute()
        by_codes = backend.arrow("SELECT * FROM cube_sums")
        assert "tasks_coded" not in backend._kept  # dropped once grouped
    finally:
        backend.close()
    assert by_codes.schema.names == by_strings.schema.names
    assert _rows(by_codes) == _rows(by_strings)


def test_a_shared_clean_dictionary_is_coded_by_its_own_indices() -> None:
    """Every chunk with one dictionary, no null or repeated value in it: the codes are the
    chunks' indices, not a copy; a dictionary that differs is mapped to codes of its own."""
    clean = pc.dictionary_encode(BASE["operation"].cast(pa.string())).combine_chunks()
    whole = BASE.set_column(BASE.schema.get_field_index("operation"), "operation", clean)
    table = pa.concat_tables([whole.slice(0, 40), whole.slice(40)])
    coded = arrow_codes.encode(table, ["operation"])
    chunks = coded.table["operation"].chunks
    for got, given_ in zip(chunks, table["operation"].chunks, strict=True):
        assert got.buffers()[1].address == given_.indices.buffers()[1].address
    other = BASE.slice(40).set_column(
        BASE.schema.get_field_index("operation"),
        "operation",
        pa.DictionaryArray.from_arrays(
            pa.array([1, 0] * 25, pa.int8()), pa.array(["x", "agent"], pa.string())
        ),
    )
    mixed = arrow_codes.encode(pa.concat_tables([BASE.slice(0, 40), other]), ["operation"])
    decoded = arrow_codes.decode(mixed.table.select(["operation"]), mixed.values)
    expected = pa.concat_tables([BASE.slice(0, 40), other])["operation"].cast(pa.string())
    assert decoded["operation"].to_pylist() == expected.to_pylist()
