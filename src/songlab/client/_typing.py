"""One declaration, two clients: how a method written once gets its type on each client.

The resources (``Generations``, ``Files``, ...) and :class:`TaskHandle` are shared by
:class:`Client` and :class:`AsyncClient` at run time; for the type checker they are generic
in the client (``Generations[Client]``). A method is written once, as an operation (a
generator of steps returning ``T``, see ``_call``) under one of three decorators:

- ``@operation``: on a ``Client`` a method returning ``T``; on an ``AsyncClient`` one
  returning ``Awaiting[T]`` (a coroutine). The client's ``_drive`` runs the operation.
- ``@creates``: the same for creates, whose ``T`` is the client's own
  ``TaskHandle[Client]`` / ``TaskHandle[AsyncClient]``.
- ``@iterates``: streams and listings; ``Iterator[T]`` on a ``Client``, ``AsyncIterator[T]``
  on an ``AsyncClient`` (the method returns what the client's stream or pager gives).

The overloads that say so are written here once (on ``__get__``), so a new method is one
declaration: its parameters and its ``T`` flow to both clients (``tests/client/test_typing``
checks what mypy infers for user code). Before, each method was written three times (two
overloads and the implementation).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeAlias, TypeVar, overload

if TYPE_CHECKING:
    from typing import Self

    from songlab.client._async import AsyncClient
    from songlab.client._base import BaseClient
    from songlab.client._call import Op
    from songlab.client._handle import TaskHandle
    from songlab.client._sync import Client

__all__ = ["Awaiting", "C", "OnClient", "Resource", "Slot", "creates", "iterates", "operation"]

_T = TypeVar("_T")
_S = TypeVar("_S")
_A = TypeVar("_A")
_P = ParamSpec("_P")
C = TypeVar("C", bound="BaseClient")
Awaiting: TypeAlias = Coroutine[Any, Any, _T]


class OnClient(Generic[C]):
    """Something bound to one client: a resource or a task handle."""

    __slots__ = ()
    _client: C

    @property
    def _c(self) -> C:
        return self._client


class Resource(OnClient[C]):
    """A group of routes (``client.generations``, ``client.files`` ...)."""

    def __init__(self, client: C) -> None:
        self._client = client


class _Method:
    """The run-time half of the three decorators: ``obj.name`` is ``fn`` bound to ``obj``,
    its result handed to :meth:`_finish` (the client drives an operation)."""

    def __init__(self, fn: Callable[..., object]) -> None:
        self.fn = fn
        self.name = fn.__name__
        full = inspect.signature(fn)
        result = full.return_annotation  # "Op[Task]": what the client's driver gives, a Task
        if isinstance(result, str) and result.startswith("Op[") and result.endswith("]"):
            result = result[3:-1]
        params = list(full.parameters.values())[1:]
        self.signature = full.replace(parameters=params, return_annotation=result)
        functools.update_wrapper(self, fn)

    def __set_name__(self, owner: type[object], name: str) -> None:
        self.name = name

    def __call__(self, obj: object, /, *args: object, **kwargs: object) -> object:
        """Called on the class (``Client.estimate(client, ...)``), as a plain method is."""
        return self._bind(obj)(*args, **kwargs)

    @staticmethod
    def _finish(obj: object, result: object) -> object:
        return result

    def _bind(self, obj: object) -> Callable[..., object]:
        fn, finish = self.fn, self._finish

        def method(*args: object, **kwargs: object) -> object:
            return finish(obj, fn(obj, *args, **kwargs))

        method.__name__ = self.name
        method.__module__ = self.fn.__module__
        method.__qualname__ = getattr(self.fn, "__qualname__", self.name)
        method.__doc__ = self.fn.__doc__
        method.__signature__ = self.signature  # type: ignore[attr-defined]
        instance_dict = getattr(obj, "__dict__", None)
        if instance_dict is not None:  # bound once per object (a handle has slots: each time)
            instance_dict[self.name] = method
        return method


class _Driven(_Method):
    @staticmethod
    def _finish(obj: object, result: object) -> object:
        return obj._c._drive(result)  # type: ignore[attr-defined]


class operation(_Driven, Generic[_P, _T]):  # lower case: used as a decorator
    """A method whose body is an operation returning ``T``: ``T`` on a ``Client``,
    ``Awaiting[T]`` on an ``AsyncClient``."""

    def __init__(self, fn: Callable[Concatenate[Any, _P], Op[_T]]) -> None:
        super().__init__(fn)

    @overload
    def __get__(self, obj: None, owner: type[object]) -> Self: ...
    @overload
    def __get__(self, obj: OnClient[Client] | Client, owner: type[object]) -> Callable[_P, _T]: ...
    @overload
    def __get__(
        self, obj: OnClient[AsyncClient] | AsyncClient, owner: type[object]
    ) -> Callable[_P, Awaiting[_T]]: ...
    def __get__(self, obj: object, owner: type[object]) -> object:
        return self if obj is None else self._bind(obj)


class creates(_Driven, Generic[_P]):  # lower case: used as a decorator
    """A create: its operation returns the client's own :class:`TaskHandle`."""

    def __init__(self, fn: Callable[Concatenate[Any, _P], Op[TaskHandle[Any]]]) -> None:
        super().__init__(fn)

    @overload
    def __get__(self, obj: None, owner: type[object]) -> Self: ...
    @overload
    def __get__(
        self, obj: OnClient[Client] | Client, owner: type[object]
    ) -> Callable[_P, TaskHandle[Client]]: ...
    @overload
    def __get__(
        self, obj: OnClient[AsyncClient] | AsyncClient, owner: type[object]
    ) -> Callable[_P, Awaiting[TaskHandle[AsyncClient]]]: ...
    def __get__(self, obj: object, owner: type[object]) -> object:
        return self if obj is None else self._bind(obj)


class iterates(_Method, Generic[_P, _T]):  # lower case: used as a decorator
    """A method returning the client's own kind of iterator: ``Iterator[T]`` on a
    ``Client``, ``AsyncIterator[T]`` on an ``AsyncClient``."""

    def __init__(
        self, fn: Callable[Concatenate[Any, _P], Iterator[_T] | AsyncIterator[_T]]
    ) -> None:
        super().__init__(fn)

    @overload
    def __get__(self, obj: None, owner: type[object]) -> Self: ...
    @overload
    def __get__(
        self, obj: OnClient[Client] | Client, owner: type[object]
    ) -> Callable[_P, Iterator[_T]]: ...
    @overload
    def __get__(
        self, obj: OnClient[AsyncClient] | AsyncClient, owner: type[object]
    ) -> Callable[_P, AsyncIterator[_T]]: ...
    def __get__(self, obj: object, owner: type[object]) -> object:
        return self if obj is None else self._bind(obj)


class Slot(Generic[_S, _A]):
    """A resource attribute of the clients (``client.generations`` ...), made on first use:
    ``_S`` on a ``Client``, ``_A`` on an ``AsyncClient``. One line in ``BaseClient`` per
    resource, where both clients used to repeat its type."""

    def __init__(self, make: Callable[[BaseClient], object]) -> None:
        self.make = make
        self.name = ""

    def __set_name__(self, owner: type[object], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type[object]) -> Self: ...
    @overload
    def __get__(self, obj: Client, owner: type[object]) -> _S: ...
    @overload
    def __get__(self, obj: AsyncClient, owner: type[object]) -> _A: ...
    @overload
    def __get__(self, obj: BaseClient, owner: type[object]) -> _S | _A: ...
    def __get__(self, obj: BaseClient | None, owner: type[object]) -> object:
        if obj is None:
            return self
        made = obj.__dict__[self.name] = self.make(obj)
        return made
