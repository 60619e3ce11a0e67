"""The dictionary string columns of an in-memory table as integer codes, and back.

DuckDB groups an Arrow dictionary column by its strings, hashing each row's; grouping ten
million tasks by five such columns costs several times what the same grouping by integers
does. :func:`encode` gives each distinct value of a column one code across every chunk (a
chunk's dictionary may differ from the next's, hold a value twice, or hold a null), taken by
the chunks' indices (zero copy where every chunk shares one clean dictionary; else one
NumPy lookup per chunk, a null its own code); :func:`decode` turns the codes of a grouped result back into the values.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import songlab.ledger._arrow as arrow
from songlab.ledger._arrow import Chunked, Column, Dictionary

__all__ = ["Coded", "decode", "encode"]


@dataclass(frozen=True)
class Coded:
    """``table`` with the columns of ``values`` as codes: code ``i`` of a column stands for
    ``values[column][i]`` (a null stands for a null)."""

    table: pa.Table
    values: Mapping[str, Column]


def _is_text_dictionary(t: pa.DataType) -> bool:
    if not pa.types.is_dictionary(t):
        return False
    values = cast("pa.DictionaryType[Any, Any]", t).value_type
    return pa.types.is_string(values) or pa.types.is_large_string(values)


def _codes(column: Chunked) -> tuple[Chunked, Column]:
    """One dictionary column's codes and values (code ``i`` is ``values[i]``)."""
    chunks = [cast("Dictionary", c) for c in column.chunks]
    kind = cast("pa.DictionaryType[Any, Any]", column.type)
    first: Column = chunks[0].dictionary if chunks else pa.array([], kind.value_type)
    words: list[object] = first.to_pylist()
    clean = first.null_count == 0 and len(set(words)) == len(words)
    if clean and all(c.dictionary.equals(first) for c in chunks):  # the indices are the codes
        indices: list[Column] = [c.indices for c in chunks]
        return _chunked(indices, kind.index_type), first
    code: dict[object, int] = {}  # None too: a null is one more value, with a code of its own
    mappings = [[code.setdefault(w, len(code)) for w in c.dictionary.to_pylist()] for c in chunks]
    if any(c.indices.null_count for c in chunks):
        code.setdefault(None, len(code))
    dtype = np.int8 if len(code) <= 127 else np.int16 if len(code) <= 32767 else np.int32
    parts: list[Column] = []
    for chunk, mapping in zip(chunks, mappings, strict=True):
        at = chunk.indices
        if at.null_count:  # a null index: the code of None, put after the dictionary's
            at = arrow.fill_null(at, len(mapping))
        lookup = pa.array(np.asarray([*mapping, code.get(None, 0)], dtype))
        parts.append(pc.take(lookup, at))
    return _chunked(parts, pa.from_numpy_dtype(np.dtype(dtype))), pa.array(
        list(code), kind.value_type
    )


def _chunked(parts: list[Column], type_: pa.DataType) -> Chunked:
    """``pa.chunked_array`` of a type known at run time (the stub has one overload per type)."""
    return cast("Chunked", pa.chunked_array(parts, type_))  # type: ignore[call-overload]


def encode(table: pa.Table, columns: Iterable[str]) -> Coded:
    """``table`` with those of ``columns`` that are dictionaries of strings as codes (the
    others, and the rest of the table, as they are)."""
    names = [
        n
        for n in columns
        if n in table.column_names and _is_text_dictionary(table.schema.field(n).type)
    ]
    # a column at a time on each core: Arrow's kernels release the GIL
    with ThreadPoolExecutor(max(1, min(len(names), os.cpu_count() or 1))) as pool:
        made = list(pool.map(lambda name: _codes(table[name]), names))
    values: dict[str, Column] = {}
    for name, (codes, values[name]) in zip(names, made, strict=True):
        table = table.set_column(table.schema.get_field_index(name), name, codes)
    return Coded(table, values)


def decode(table: pa.Table, values: Mapping[str, Column]) -> pa.Table:
    """``table`` (a result grouped by codes of :func:`encode`) with each column of ``values``
    as the values its codes stand for."""
    for name, words in values.items():
        codes = table[name].combine_chunks()
        table = table.set_column(table.schema.get_field_index(name), name, pc.take(words, codes))
    return table
