"""A served page's side, in Python: what a rater's browser does with a served campaign page
(read its design, token and assignment; answer every trial with valid values; sign and post
each answer with an id it makes). The load tests, the replicas test and the benchmark use it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from typing import Any

ANSWER_FORMAT = "songlab.campaign.answer/1"


def _script(page: str, name: str) -> Any:
    found = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', page, re.S)
    assert found is not None, name
    return found.group(1)


@dataclass
class PageState:
    """What a served page holds: its design (and the text it hashes), token and assignment."""

    design_text: str
    token: str
    served: dict[str, Any]

    @classmethod
    def read(cls, page: str) -> PageState:
        return cls(
            _script(page, "design"),
            json.loads(_script(page, "token")),
            json.loads(_script(page, "served")),
        )

    @property
    def design(self) -> dict[str, Any]:
        return json.loads(self.design_text)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.design_text.encode("utf-8")).hexdigest()

    def item(
        self, trial: int, value: Any, heard: list[list[Any]], *, ident: str | None = None
    ) -> dict[str, Any]:
        """One answer as the page posts it, signed as the page signs it."""
        d = self.design
        ident = ident or secrets.token_hex(16)
        body = json.dumps(
            [
                ANSWER_FORMAT,
                d["campaign"],
                d["rater"],
                self.digest,
                self.served["assignment"],
                ident,
                trial,
                value,
                heard,
            ],
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode("utf-8")
        mac = hmac.new(self.token.encode("ascii"), body, hashlib.sha256).hexdigest()
        return {
            "assignment": self.served["assignment"],
            "id": ident,
            "trial": trial,
            "value": value,
            "heard": heard,
            "mac": mac,
        }

    def answers(self, rng: Any) -> list[dict[str, Any]]:
        """A valid answer to every trial (values drawn with ``rng``), each clip heard for the
        minimum."""
        d = self.design
        out = []
        for tr in d["trials"]:
            c = tr["controls"]
            if c.get("scale"):
                sc = c["scale"]
                value = [
                    [label, int(rng.integers(sc["low"], sc["high"] + 1))]
                    for label in sorted(sc["rate"])
                ]
            else:
                value = c["choices"][int(rng.integers(len(c["choices"])))][0]
            heard = [[label, d["need_ms"]] for label in sorted(tr["play"])]
            out.append(self.item(tr["trial"], value, heard))
        return out

    def seconds(self) -> float:
        """The least time the trials' clips take to hear (what the server waits for)."""
        d = self.design
        return sum(d["need_ms"] * len(tr["labels"]) for tr in d["trials"]) / 1000
