"""Attribution: which project, tags and API key each task was made for, kept locally.

The API has no label field. songlab scopes labels on the client side
(``with attribution(project="jingles", tags=["q4"]):``, or a client-level
default with :func:`set_default_attribution`), and every client writes every
accepted create, with its labels, to the client's record
(``songlab.client.RecordStore``). Labels are never sent to the service; they
survive a kernel restart because they are on disk. :func:`record_table` reads a
record as the :data:`RECORD` columns the ledger joins; :func:`attach` joins it onto a
tasks table (labels, and the facts the service does not show: ``tasks.resolve``). The
``labels.sqlite`` file of songlab before the record is no longer read (issue 29).

Project names and tags: 1-64 characters of ``A-Z a-z 0-9 _ . : -`` and space
(tags without spaces); tags are stored sorted, joined by ``,``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from songlab.client import (
    Labels,
    default_labels,
    label_scope,
    make_labels,
    set_default_labels,
)
from songlab.ledger._record import record_table

__all__ = [
    "attach",
    "attribution",
    "default_project",
    "make_labels",
    "set_default_attribution",
]


# make_labels: the rule lives with the client (songlab.connect(project=...) applies it too)


@contextmanager
def attribution(project: str | None = None, tags: Iterable[str] | str = ()) -> Iterator[Any]:
    """Label every create made in this block (this thread / async task and what it starts).

    Nested blocks merge: the inner project wins, tags add up. Labels stay
    local: the client's record keeps them, they are never sent.
    """
    with label_scope(make_labels(project, tags)) as active:
        yield active


def set_default_attribution(
    client: object, project: str | None = None, tags: Iterable[str] | str = ()
) -> None:
    """Labels every create of ``client`` carries outside any ``attribution`` block (and under one,
    merged). ``project=None`` with no tags removes the default."""
    lab = make_labels(project, tags)
    set_default_labels(client, None if lab == Labels() else lab)


def default_project(client: object) -> str | None:
    """The project ``client`` labels its creates with by default (None if it has none)."""
    return default_labels(client).project


def attach(tasks: pa.Table, record: object) -> pa.Table:
    """``tasks`` joined with the client's record (see ``tasks.resolve``): labels (project,
    tags, key_id; a sub-task inherits its run's), and the facts the service did not show.

    A task created by two keys (the same idempotency key used from both) keeps the first
    record. Tasks nobody recorded keep nulls (the listing cannot say which key made a task).
    """
    from songlab.ledger.tasks import resolve

    return resolve(tasks, record_table(record))
