"""What the sync and async clients share and that needs no I/O.

Every operation is a generator (sans-I/O): it yields :class:`Call` objects and
receives the decoded answer of each; a sender (``Client._drive`` or
``AsyncClient._drive``) performs the calls, with retries, and throws errors back
in. So request building, validation, estimates, budget checks and response
parsing are written once and unit-tested with ``httpx.MockTransport``; the two
clients only send.
"""

from __future__ import annotations

import json
import logging
import random
import uuid
from collections.abc import Generator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final
from urllib.parse import quote

import httpx

from songlab.client import _attribution
from songlab.client._budget import Budget, BudgetStack
from songlab.client._errors import APIConnectionError, APITimeoutError, error_from_response
from songlab.client._models import Tool, UploadedFile, parse_tools
from songlab.client._retry import RetryPolicy
from songlab.client._validate import ValidationError, require

__all__ = ["NOT_GIVEN", "BaseClient", "Call", "NotGiven", "Op"]

log = logging.getLogger("songlab.client")

DEFAULT_TIMEOUT: Final = httpx.Timeout(30.0, connect=10.0)
USER_AGENT: Final = "songlab-client/0.1"


class NotGiven:
    """Sentinel for "use the default", distinct from None (which may mean "send null")."""

    _instance: NotGiven | None = None

    def __new__(cls) -> NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Final = NotGiven()


@dataclass(frozen=True, slots=True)
class Call:
    """One HTTP exchange an operation asks for."""

    method: str
    path: str  # relative to base_url, or an absolute signed URL (auth=False)
    params: dict[str, Any] | None = None
    json: Any = None
    files: Any = None
    idempotency_key: str | None = None
    auth: bool = True
    expect: str = "json"  # "json" or "bytes"


Op = Generator[Call, Any, Any]


def new_idempotency_key() -> str:
    """A fresh key in the spec's alphabet (A-Z a-z 0-9 _ . : -), 44 characters."""
    return f"songlab:{uuid.uuid4()}"


def path_id(value: Any, field: str) -> str:
    require(isinstance(value, str) and bool(value), field, "a non-empty string id")
    return quote(value, safe="")


class _RedactingFilter(logging.Filter):
    """Defence in depth: scrub every client's key from records of httpx/httpcore/songlab.

    httpx logs no headers, and no songlab log line includes one; this filter makes
    sure of it. One filter per process holds the keys of the clients made.
    """

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()
        self.installed = False

    def add(self, secret: str) -> None:
        self.secrets.add(secret)
        if not self.installed:
            for name in _FILTERED_LOGGERS:
                logging.getLogger(name).addFilter(self)
            self.installed = True

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        hits = [s for s in self.secrets if s in msg]
        if hits:
            for secret in hits:
                msg = msg.replace(secret, "<redacted>")
            record.msg, record.args = msg, ()
        return True


_FILTERED_LOGGERS = ("httpx", "httpcore", "httpcore.connection", "httpcore.http11",
                     "httpcore.http2", "httpcore.proxy", "songlab.client")
_REDACTOR = _RedactingFilter()


class BaseClient:
    """Configuration, state and the pure request/response halves of the client."""

    _http: Any

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven = NOT_GIVEN,
        seed: int | None = None,
    ) -> None:
        require(isinstance(api_key, str) and bool(api_key.strip()), "api_key",
                "a non-empty string")
        # A stray newline or control character would make httpx refuse the header with an
        # error that quotes the key: strip the ends, refuse the rest naming only the rule.
        api_key = api_key.strip()
        require(api_key.isascii() and api_key.isprintable() and " " not in api_key, "api_key",
                "printable ASCII without spaces or control characters")
        require(isinstance(base_url, str) and base_url.startswith(("http://", "https://")),
                "base_url", "an http:// or https:// URL")
        self.base_url = base_url.rstrip("/")
        self._plain_headers = {"Accept": "*/*", "Accept-Encoding": "gzip, deflate",
                               "User-Agent": USER_AGENT}
        # The spec: every authenticated request carries the bearer header and
        # Content-Type: application/json, except multipart uploads.
        self._auth_headers = {**self._plain_headers, "Authorization": f"Bearer {api_key}",
                              "Content-Type": "application/json"}
        self.timeout = DEFAULT_TIMEOUT if isinstance(timeout, NotGiven) else httpx.Timeout(timeout)
        self._extensions = {"timeout": self.timeout.as_dict()}
        self.retry = RetryPolicy() if isinstance(retry, NotGiven) else retry
        self._rng = random.Random(seed)
        self._tools: tuple[Tool, ...] | None = None
        self._uploads: dict[str, UploadedFile] = {}
        self._budgets = BudgetStack()
        self.key_id = _attribution.key_id(api_key)  # non-secret; names the key in ledgers
        self._attach_resources()
        _REDACTOR.add(api_key)

    def _attach_resources(self) -> None:
        from songlab.client._agent import Agent
        from songlab.client._compat import Compat
        from songlab.client._dedicated import SongTranslations, VoiceClones, Workflows
        from songlab.client._files import Files
        from songlab.client._generations import Account, Generations, Tools

        self.generations = Generations(self)
        self.tools = Tools(self)
        self.files = Files(self)
        self.account = Account(self)
        self.voice_clones = VoiceClones(self)
        self.song_translations = SongTranslations(self)
        self.workflows = Workflows(self)
        self.compat = Compat(self)
        self.agent = Agent(self)

    def estimate(
        self,
        *,
        tool_id: str | NotGiven = NOT_GIVEN,
        operation: str | NotGiven = NOT_GIVEN,
        model: str | NotGiven = NOT_GIVEN,
        route: str | NotGiven = NOT_GIVEN,
        tier: str | NotGiven = NOT_GIVEN,
        max_budget: int | NotGiven = NOT_GIVEN,
        license: int | str | NotGiven = NOT_GIVEN,
        version: str | NotGiven = NOT_GIVEN,
    ) -> Any:
        """What a create would bill -> :class:`Estimate` (Decimal USD), before sending it.

        Name the create by ``tool_id``, ``operation`` (+ ``model``), a create
        ``route`` (``"/v1/karaoke-tracks"``, ``"/v1/voice-clones"``,
        ``"/v7/generate/song"`` ...) or an Agent One ``tier`` (+ ``max_budget``).
        """
        from songlab.client._generations import estimate_op

        return self._drive(estimate_op(self, tool_id=tool_id, operation=operation, model=model,
                                       route=route, tier=tier, max_budget=max_budget,
                                       license=license, version=version))

    def _drive(self, op: Op) -> Any:  # pragma: no cover - implemented by the senders
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, api_key=<redacted>)"

    # -- requests --------------------------------------------------------------

    def _build_request(self, call: Call) -> httpx.Request:
        """The request of ``call``, built directly (no merge with client defaults: the
        get path is measured against raw httpx by ``benchmarks/client_overhead.py``)."""
        headers = self._auth_headers if call.auth else self._plain_headers
        if call.files is not None:
            headers = {k: v for k, v in headers.items() if k != "Content-Type"}
        if call.idempotency_key is not None:
            headers = {**headers, "Idempotency-Key": call.idempotency_key}
        url = call.path if call.path.startswith(("http://", "https://")) else self.base_url + call.path
        return httpx.Request(call.method, url, params=call.params, json=call.json,
                             files=call.files, headers=headers, extensions=self._extensions)

    @staticmethod
    def _decode(call: Call, response: httpx.Response) -> Any:
        """The answer of a call, or the exception of its error body."""
        if response.status_code >= 400:
            raise error_from_response(response.status_code, response.content,
                                      method=call.method, path=_loggable(call.path))
        if call.expect == "bytes":
            return response.content
        if not response.content:
            return None
        return json.loads(response.content)

    @staticmethod
    def _transport_error(call: Call, exc: Exception) -> APIConnectionError:
        cls = APITimeoutError if isinstance(exc, httpx.TimeoutException) else APIConnectionError
        return cls(f"{type(exc).__name__}: {exc}", method=call.method, path=_loggable(call.path))

    # -- shared operations -----------------------------------------------------

    def _tools_op(self, refresh: bool = False) -> Op:
        if self._tools is None or refresh:
            self._tools = parse_tools((yield Call("GET", "/v1/tools")))
        return self._tools

    def _tool_by_id(self, tool_id: str) -> Op:
        tools = yield from self._tools_op()
        for t in tools:
            if t.id == tool_id:
                return t
        return None

    def _create_op(self, path: str, body: dict[str, Any], estimate: Any, key: str) -> Op:
        """POST a create with its Idempotency-Key, under the active budgets."""
        from songlab.client._handle import TaskHandle

        reservation = self._budgets.reserve(estimate)
        try:
            data = yield Call("POST", path, json=body, idempotency_key=key)
        except BaseException:
            reservation.release()
            raise
        reservation.commit(data["task_id"])
        _attribution.notify(self, route=path, body=body, estimate=estimate, key=key, data=data)
        return TaskHandle.from_created(data, key, self)

    def budget(self, *, usd: Decimal | int | str) -> Budget:
        """``with client.budget(usd="2.50"):`` refuses creates that would exceed it."""
        try:
            limit = Decimal(str(usd))
        except ArithmeticError:
            raise ValidationError("usd", f"a decimal amount, got {usd!r}") from None
        require(limit.is_finite() and limit >= 0, "usd", f"a non-negative amount, got {usd}")
        return Budget(limit, self._budgets)

    def task(self, task_id: str) -> Any:
        """A handle on an existing task, from its id alone (e.g. after a kernel restart)."""
        from songlab.client._handle import TaskHandle

        path_id(task_id, "task_id")
        return TaskHandle(task_id=task_id, status=None, consent_id=None, idempotency_key=None,
                          raw={}, _client=self)


def _loggable(path: str) -> str:
    """A path safe to show: signed URLs lose their token."""
    if path.startswith(("http://", "https://")):
        return path.split("?", 1)[0].rsplit("/", 1)[0] + "/<signed>"
    return path
