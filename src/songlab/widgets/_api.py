"""The few client calls the panels make, in one place.

The widgets are built only on songlab's public client (``songlab.connect()``);
this module names every call they make, so the panels stay small and a change
of the client's surface is one edit here.
"""

from __future__ import annotations

import uuid
from typing import Any

__all__ = [
    "create_generation",
    "create_voice_clone",
    "download",
    "get_task",
    "list_tools",
    "new_key",
    "upload",
]


def new_key() -> str:
    """A fresh Idempotency-Key (the spec's alphabet A-Z a-z 0-9 _ . : -, 52 characters)."""
    return f"songlab-widgets:{uuid.uuid4()}"


def list_tools(client: Any) -> tuple[Any, ...]:
    """``GET /v1/tools``: objects with ``id``, ``model``, ``operation``."""
    return tuple(client.tools.list())


def create_generation(
    client: Any,
    *,
    tool_id: str,
    payload: dict[str, Any],
    license: int,
    idempotency_key: str | None,
    take: int = 1,
) -> Any:
    """``POST /v1/generations``; answers a handle with ``task_id``. Without a key the client
    derives one from the request and ``take`` (and re-attaches to a recorded task)."""
    if idempotency_key is None:
        return client.generations.create(
            tool_id=tool_id, payload=payload, license=license, take=take
        )
    return client.generations.create(
        tool_id=tool_id, payload=payload, license=license, idempotency_key=idempotency_key
    )


def upload(client: Any, content: bytes, *, filename: str) -> Any:
    """``POST /v1/files`` (multipart); answers an object with ``file_id``."""
    return client.files.upload(content, filename=filename)


def create_voice_clone(client: Any, *, idempotency_key: str | None, **fields: Any) -> Any:
    """``POST /v1/voice-clones``; answers a handle with ``task_id`` and ``consent_id``."""
    return client.voice_clones.create(idempotency_key=idempotency_key, **fields)


def get_task(client: Any, task_id: str) -> Any:
    """``GET /v1/generations/{id}``: the task snapshot."""
    return client.generations.get(task_id)


def download(client: Any, file_id: str) -> bytes:
    """The bytes of one of the account's files."""
    content: bytes = client.files.download(file_id)
    return content
