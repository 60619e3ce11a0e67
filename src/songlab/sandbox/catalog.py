"""The tool catalog: every priced (operation, model) pair with a stable id.

Ids are uuid5 of ``model/operation`` in a fixed namespace, so they are the same
across restarts and re-registrations. Internal-only tools (``spec.INTERNAL_OPERATIONS``)
have ids too but are never listed and answer 400 UnknownTool when called
directly. Admin switches (``PUT /_sandbox/tools/{id}``) are kept in the store.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from songlab.pricing import PRICES
from songlab.sandbox import errors
from songlab.sandbox.storage.db import Store
from songlab.spec import AGENT_TIERS, INTERNAL_OPERATIONS, ErrorCode

NAMESPACE = uuid.UUID("6f1c2d0e-4a3b-5c6d-8e9f-a0b1c2d3e4f5")
ALL_LICENSES: tuple[int, ...] = (1, 2, 3, 4, 5)

_NAMES = {
    "generate_song": "Song generation",
    "similar_song": "Similar song",
    "melody_to_song": "Melody to song",
    "midi_to_song": "MIDI to song",
    "generate_music": "Music generation",
    "similar_music": "Similar music",
    "generate_singing": "Singing generation",
    "extend_song": "Extend song",
    "extend_music": "Extend music",
    "remix_song": "Remix",
    "vocal_clone": "Voice clone",
    "inpaint": "Audio inpainting",
    "separate_stems": "Stem separation",
    "copyright": "Copyright check",
    "write_lyrics": "Lyrics",
    "transcribe": "Transcription",
    "sfx_gen": "Sound effects",
    "audio_effect": "Audio effect",
    "agent": "Agent One",
    "web_search": "Web search (internal)",
    "mix": "Mix (internal)",
    "translate_lyrics": "Lyrics translation (internal)",
}


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
    tools: dict[str, Tool] = {}
    pairs = list(PRICES) + [("agent", tier) for tier in AGENT_TIERS]
    for operation, model in pairs:
        tid = tool_id(operation, model)
        tools[tid] = Tool(
            tid, operation, model, f"{_NAMES.get(operation, operation)} {model}",
            operation in INTERNAL_OPERATIONS,
        )
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
                bool(row["active"]), tuple(json.loads(row["priced_licenses"]))
            )

    def state(self, tid: str) -> tuple[bool, tuple[int, ...]]:
        return self._overrides.get(tid, (True, ALL_LICENSES))

    def set_state(self, tid: str, active: bool | None, priced: list[int] | None) -> dict:
        cur_active, cur_priced = self.state(tid)
        new = (cur_active if active is None else active,
               cur_priced if priced is None else tuple(sorted(set(priced))))
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
            raise errors.pipeline(ErrorCode.UNKNOWN_TOOL, f"tool_id: unknown or inactive tool {tid!r}")
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
