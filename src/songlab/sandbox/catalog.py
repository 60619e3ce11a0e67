"""The tool catalog: every (operation, model) pair of the spec registry with a stable id.

Ids are uuid5 of ``model/operation`` in a fixed namespace, so they are the same
across restarts and re-registrations. Internal-only tools (``spec.INTERNAL_OPERATIONS``)
have ids too but are never listed and answer 400 UnknownTool when called
directly. Admin switches (``PUT /_sandbox/tools/{id}``) are kept in the store.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import songlab.sandbox.errors as errors
from songlab.pricing import PRICES
from songlab.sandbox.storage.db import Store
from songlab.spec import REGISTRY, ErrorCode

NAMESPACE = uuid.UUID("6f1c2d0e-4a3b-5c6d-8e9f-a0b1c2d3e4f5")
ALL_LICENSES: tuple[int, ...] = (1, 2, 3, 4, 5)


def tool_id(operation: str, model: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{model}/{operation}"))


@dataclass(frozen=True, slots=True)
class Tool:
    id: str
    operation: str
    model: str
    name: str
    internal: bool

    def listing(self) -> dict[str, str]:
        return {"id": self.id, "model": self.model, "operation": self.operation, "name": self.name}


def _build() -> dict[str, Tool]:
    """One tool per (operation, model) of the registry; a billed operation's models are
    those of the price list (every one of them, checked at import)."""
    tools: dict[str, Tool] = {}
    for op in REGISTRY.values():
        for model in op.models:
            assert op.pricing_key is None or (op.name, model) in PRICES, (op.name, model)
            tid = tool_id(op.name, model)
            tools[tid] = Tool(tid, op.name, model, f"{op.title} {model}", op.internal)
    return tools


TOOLS: dict[str, Tool] = _build()
BY_PAIR: dict[tuple[str, str], Tool] = {(t.operation, t.model): t for t in TOOLS.values()}


class Catalog:
    """Tools plus the admin switches stored in the database."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._overrides: dict[str, tuple[bool, tuple[int, ...]]] = {}
        for row in store.all("SELECT * FROM tool_overrides"):
            self._overrides[row["tool_id"]] = (
                bool(row["active"]),
                tuple(json.loads(row["priced_licenses"])),
            )

    def state(self, tid: str) -> tuple[bool, tuple[int, ...]]:
        return self._overrides.get(tid, (True, ALL_LICENSES))

    def set_state(self, tid: str, active: bool | None, priced: list[int] | None) -> dict[str, Any]:
        cur_active, cur_priced = self.state(tid)
        new = (
            cur_active if active is None else active,
            cur_priced if priced is None else tuple(sorted(set(priced))),
        )
        self.store.execute(
            "INSERT INTO tool_overrides (tool_id, active, priced_licenses) VALUES (?,?,?) "
            "ON CONFLICT(tool_id) DO UPDATE SET active = excluded.active, "
            "priced_licenses = excluded.priced_licenses",
            (tid, int(new[0]), json.dumps(list(new[1]))),
        )
        self._overrides[tid] = new
        t = TOOLS[tid]
        return {**t.listing(), "active": new[0], "priced_licenses": list(new[1])}

    def listing(self) -> list[dict[str, str]]:
        out = []
        for t in TOOLS.values():
            active, priced = self.state(t.id)
            if not t.internal and active and priced:
                out.append(t.listing())
        return out

    def resolve(self, tid: object) -> Tool:
        """A directly usable tool or 400 UnknownTool."""
        t = TOOLS.get(tid) if isinstance(tid, str) else None
        if t is None or t.internal or not self.state(t.id)[0]:
            raise errors.pipeline(
                ErrorCode.UNKNOWN_TOOL, f"tool_id: unknown or inactive tool {tid!r}"
            )
        return t

    def by_pair(self, operation: str, model: str) -> Tool:
        t = BY_PAIR.get((operation, model))
        if t is None or t.internal or not self.state(t.id)[0]:
            raise errors.pipeline(
                ErrorCode.UNKNOWN_TOOL, f"no active tool for ({operation!r}, {model!r})"
            )
        return t

    def check_priced(self, t: Tool, license: int) -> None:
        if license not in self.state(t.id)[1]:
            raise errors.pipeline(
                ErrorCode.TOOL_NOT_PRICED,
                f"license: tool {t.operation} {t.model} has no price for license tier {license}",
            )
