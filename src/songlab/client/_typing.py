"""Type names shared by the resources: one surface, two clients.

The resource classes (``Generations``, ``Files``, ...) and :class:`TaskHandle` are
shared by :class:`Client` and :class:`AsyncClient` at run time; for the type
checker they are generic in the client (``Generations[Client]``), and each public
method is overloaded on ``self``: on a ``Client`` it returns the dataclass, on an
``AsyncClient`` a coroutine of it (``Awaiting[Task]``).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

if TYPE_CHECKING:
    from songlab.client._base import BaseClient

__all__ = ["Awaiting", "C"]

_T = TypeVar("_T")
C = TypeVar("C", bound="BaseClient")
Awaiting: TypeAlias = Coroutine[Any, Any, _T]
