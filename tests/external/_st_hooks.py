"""schemathesis hooks for tests/external/test_schemathesis_cli.py (loaded by SCHEMATHESIS_HOOKS).

A JSON Schema can say "a uuid" but not "the id of a file you uploaded": before a
*positive* case is sent, the fields that name this account's resources get real
values (from ``SONGLAB_ST_RESOURCES``, JSON). Negative cases are left as drawn,
so every mutation still reaches the server. Only fields the case already
carries are replaced, and only with values its schema allows.
"""

from __future__ import annotations

import json
import os
from typing import Any

import schemathesis

RESOURCES: dict[str, Any] = json.loads(os.environ.get("SONGLAB_ST_RESOURCES", "{}"))


@schemathesis.hook
def before_call(ctx: Any, case: Any, **kwargs: Any) -> None:
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or not isinstance(case.body, dict):
        return
    for name, value in RESOURCES.items():
        if case.body.get(name) is not None:
            case.body[name] = value


@schemathesis.hook("filter_body").apply_to(method="POST", path="/v1/generations")
def no_raw_payload_json(ctx: Any, body: Any) -> bool:
    """Exclude exactly the spec's documented 500: payload_json sent as a raw JSON value."""
    return not (isinstance(body, dict) and isinstance(body.get("payload_json"), dict | list))
