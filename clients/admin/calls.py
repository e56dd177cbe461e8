"""How every ``AIOAdmin`` call is sent: its deadline, its retries and the broker each try goes to, as
Kafka 2.8's KafkaAdminClient runs a ``Call``.

    calls = AdminCalls(client, request_timeout_ms=30000, default_api_timeout_ms=60000,
                       retries=MAX_RETRIES, retry_backoff_ms=100)
    answer = await calls.run("describeAcls", ANY, lambda t: t.conn.send(request, timeout=t.timeout))

``attempt(t)`` makes one try: it sends on ``t.conn``, the connection its route picked, waiting at most
``t.timeout`` seconds (the request timeout, or less when the deadline is nearer; ``t.timeout_ms`` goes
in requests that carry a server-side timeout), and turns the answer into the call's result, raising the
errors it finds. The deadline is the call's ``timeout_ms`` from now, else ``default_api_timeout_ms``.
A try that ends with a lost connection, a request timeout or a retriable Kafka error is made again
after ``retry_backoff_ms``, at the node the route picks then; any other error ends the call at once (an
attempt marks an error it does not want retried with ``final``). Once the deadline has passed, or the
tries exceed ``retries``, the call raises ``AdminTimeoutError`` naming the last failure, which is also
its ``__cause__`` (Kafka's TimeoutException "... timed out ... after N attempt(s)").

Routes, as Kafka's node providers:

* ``ANY``: the least loaded live connection, else a known broker, those that failed lately last
  (LeastLoadedNodeProvider; Kafka skips nodes in reconnect backoff). The brokers are looked up with the
  first such try and again after a lost connection, as Kafka's admin metadata is.
* ``CONTROLLER``: the controller the metadata names; NOT_CONTROLLER or a lost connection makes the
  next try look it up again (ControllerNodeProvider and handleNotControllerError).
* ``Broker(n)``: broker n, every time (ConstantNodeIdProvider: broker configs, log dirs, ListGroups).
* ``CoordinatorOf(group)``: the group's coordinator, found with FindCoordinator at any broker and
  remembered; NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS or a lost
  connection make the next try find it again. (Kafka 2.8 looked again only on NOT_COORDINATOR and kept
  a lost coordinator until the deadline; Kafka 3.0's AdminApiDriver also looks again after a disconnect.)
* ``LEADERS``: the attempt picks partition leaders itself (``t.conn`` is None); a failure drops the
  cached partition metadata so that leaders are looked up again.

Retrying never resends what Kafka would not: only the failures above repeat a try, and an error a
broker reports for one topic or resource (a CreateTopics REQUEST_TIMED_OUT, say) is that item's result.
A write whose earlier try was cut off may have been applied; ``t.after`` tells the attempt what cut it
(CreateTopics then reports TOPIC_ALREADY_EXISTS as Kafka does, saying so).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any, Awaitable, Callable, Iterable, NamedTuple, TypeVar

from ...protocol.errors import (  # type: ignore[attr-defined]
    KafkaError, RequestTimedOutError, TopicAlreadyExistsError, for_code,
)
from ...protocol.messages import FindCoordinatorRequest
from ..connection import BrokerConnection

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_RETRIES = 2**31 - 1  # Kafka's default retries (Integer.MAX_VALUE): only the deadline ends them
NOT_CONTROLLER = 41
COORDINATOR_ERRORS = frozenset({14, 15, 16})  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR
_GROUP_KEY_TYPE = 0


class AdminTimeoutError(RequestTimedOutError):  # type: ignore[misc, valid-type]
    """An admin call ran out of time or tries (Kafka's TimeoutException); ``__cause__`` is the last failure."""


class Coordinator(NamedTuple):
    node_id: int
    host: str
    port: int


class Try(NamedTuple):
    """One try of a call: where to send, how long it may take, and what ended the try before it."""
    conn: BrokerConnection | None
    timeout: float  # seconds
    elapsed: float  # seconds since the call began
    after: BaseException | None  # the previous try's failure

    @property
    def timeout_ms(self) -> int:
        return max(int(self.timeout * 1000), 0)


def final(error: KafkaError) -> KafkaError:
    """``error``, marked to end the call instead of being retried (a per-item answer Kafka does not retry)."""
    error.retriable = False
    return error


def retriable(exc: BaseException) -> bool:
    """Whether another try may succeed: lost connections, request timeouts, retriable Kafka errors.
    A TLS handshake failure is not (Kafka's SslAuthenticationException)."""
    if isinstance(exc, KafkaError):
        return bool(exc.retriable)
    if not isinstance(exc, OSError):
        return False
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLError):
            return False
        cause = cause.__cause__
    return True


def _described(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class Route:
    """Where a call's tries go (Kafka's NodeProvider)."""

    async def connect(self, calls: "AdminCalls", timeout: float) -> BrokerConnection | None:
        raise NotImplementedError

    def failed(self, calls: "AdminCalls", error: BaseException) -> None:
        """Forget what ``error`` showed to be stale before the next try."""


class _Any(Route):
    async def connect(self, calls: "AdminCalls", timeout: float) -> BrokerConnection:
        conn = await calls.client._any_connection()
        if calls.brokers_due:  # so that a lost broker's successor can be found among the others
            await calls.client.metadata_at(conn, [], timeout=timeout)
            calls.brokers_due = False
        return conn

    def failed(self, calls: "AdminCalls", error: BaseException) -> None:
        if isinstance(error, OSError):  # Kafka's admin refreshes its metadata after a disconnect
            calls.brokers_due = True

    def __repr__(self) -> str:
        return "ANY"


class _Controller(Route):
    async def connect(self, calls: "AdminCalls", timeout: float) -> BrokerConnection:
        client = calls.client
        if client.cluster.controller_id not in client.cluster.brokers:
            await client.metadata(topics=[])
        if client.cluster.controller_id not in client.cluster.brokers:  # none elected yet
            raise for_code(NOT_CONTROLLER)("no controller is known yet")
        return await client.connection(client.cluster.controller_id)

    def failed(self, calls: "AdminCalls", error: BaseException) -> None:
        if isinstance(error, OSError) or getattr(error, "code", None) == NOT_CONTROLLER:
            calls.client.forget_controller()

    def __repr__(self) -> str:
        return "CONTROLLER"


class _Leaders(Route):
    async def connect(self, calls: "AdminCalls", timeout: float) -> None:
        return None

    def failed(self, calls: "AdminCalls", error: BaseException) -> None:
        calls.client.forget_topics()

    def __repr__(self) -> str:
        return "LEADERS"


class Broker(Route):
    def __init__(self, node_id: int) -> None:
        self.node_id = node_id

    async def connect(self, calls: "AdminCalls", timeout: float) -> BrokerConnection:
        return await calls.client.connection(self.node_id)

    def __repr__(self) -> str:
        return f"Broker({self.node_id})"


class CoordinatorOf(Route):
    """The group's coordinator; ``coordinator`` is the one the last try went to."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.coordinator: Coordinator | None = None

    async def connect(self, calls: "AdminCalls", timeout: float) -> BrokerConnection:
        found = calls.coordinators.get(self.group_id)
        if found is None:
            found = await calls.find_coordinator(self.group_id, await calls.client._any_connection(), timeout)
        self.coordinator = found
        return await calls.client._connect(found.node_id, found.host, found.port)

    def failed(self, calls: "AdminCalls", error: BaseException) -> None:
        if isinstance(error, OSError) or getattr(error, "code", None) in COORDINATOR_ERRORS:
            calls.coordinators.pop(self.group_id, None)

    def __repr__(self) -> str:
        return f"CoordinatorOf({self.group_id!r})"


ANY: Route = _Any()
CONTROLLER: Route = _Controller()
LEADERS: Route = _Leaders()


class AdminCalls:
    """Runs calls for one admin client over its ``SimpleClient`` (which must make one try per request:
    ``retries=0``), and remembers the groups' coordinators."""

    def __init__(self, client: Any, *, request_timeout_ms: int, default_api_timeout_ms: int, retries: int,
                 retry_backoff_ms: int) -> None:
        self.client = client
        self.request_timeout = request_timeout_ms / 1000.0
        self.default_api_timeout_ms = default_api_timeout_ms
        self.retries = retries
        self.retry_backoff = retry_backoff_ms / 1000.0
        self.coordinators: dict[str, Coordinator] = {}
        self.brokers_due = True  # the brokers are to be looked up (first, and after a lost connection)

    async def run(self, name: str, route: Route, attempt: Callable[[Try], Awaitable[T]],
                  timeout_ms: int | None = None) -> T:
        """Make tries of ``attempt`` at ``route`` until one returns, as the module docstring says."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        budget_ms = self.default_api_timeout_ms if timeout_ms is None else max(timeout_ms, 0)
        deadline = started + budget_ms / 1000.0
        last: BaseException | None = None
        tries = 0
        while True:
            tries += 1
            conn: BrokerConnection | None = None
            remaining = deadline - loop.time()
            try:
                async with asyncio.timeout(max(remaining, 0.0)) as cut:
                    conn = await route.connect(self, min(self.request_timeout, remaining))
                    return await attempt(Try(conn, min(self.request_timeout, deadline - loop.time()),
                                             loop.time() - started, last))
            except (KafkaError, OSError) as exc:
                if cut.expired():  # the deadline came in the middle of this try
                    where = f"{conn.host}:{conn.port}" if conn is not None else repr(route)
                    raise self._timed_out(name, tries, budget_ms, last, where) from (last or exc)
                if not retriable(exc) or self.client.closed:  # Kafka does not retry once closing either
                    raise
                if conn is not None and isinstance(exc, OSError):
                    self.client.note_failure(conn.host, conn.port)  # tried last by ANY for a while
                last = exc
                route.failed(self, exc)
            if tries > self.retries or loop.time() + self.retry_backoff >= deadline:
                raise self._timed_out(name, tries, budget_ms, last, None) from last
            log.debug("%s at %r failed (%s); try %d follows", name, route, _described(last), tries + 1)
            await asyncio.sleep(self.retry_backoff)

    def _timed_out(self, name: str, tries: int, budget_ms: int, last: BaseException | None,
                   unanswered_at: str | None) -> AdminTimeoutError:
        spent = f"retries={self.retries} spent" if tries > self.retries else f"deadline of {budget_ms} ms passed"
        text = f"{name} timed out after {tries} attempt(s) ({spent})"
        if unanswered_at is not None:
            text += f"; the last try, at {unanswered_at}, had no answer by then"
        if last is not None:
            text += f"; last error: {_described(last)}"
        return AdminTimeoutError(text)

    async def find_coordinator(self, group_id: str, conn: BrokerConnection, timeout: float) -> Coordinator:
        """Ask ``conn``'s broker for the group's coordinator (one try) and remember it."""
        response = await conn.send(FindCoordinatorRequest(key=group_id, key_type=_GROUP_KEY_TYPE), timeout=timeout)
        if response.error_code:
            raise for_code(response.error_code)(response.error_message or f"FindCoordinator for group '{group_id}'")
        found = self.coordinators[group_id] = Coordinator(response.node_id, response.host, response.port)
        return found



async def at_controller(calls: AdminCalls, name: str, items: dict[str, Any],
                        make_request: Callable[[list[Any], Try], Any],
                        results_of: Callable[[Any], Iterable[tuple[str, int, str | None]]],
                        timeout_ms: int | None, item: str = "topic") -> dict[str, KafkaError | None]:
    """One request about several items (topics, users) at the controller: name -> None or its error.
    Items answered NOT_CONTROLLER are sent again, and only they (the others are done); every other
    answer, retriable or not, is that item's result, as in Kafka. Items still pending when the call
    fails get its error."""
    if not items:
        return {}
    results: dict[str, KafkaError | None] = {}
    pending = list(items)
    cut_off: BaseException | None = None  # what cut off an earlier try, which may have been applied

    async def attempt(t: Try) -> None:
        nonlocal pending, cut_off
        assert t.conn is not None
        if isinstance(t.after, OSError):
            cut_off = t.after
        response = await t.conn.send(make_request([items[n] for n in pending], t), timeout=t.timeout)
        answered = {key: (code, message) for key, code, message in results_of(response)}
        for key in pending:
            if key not in answered:  # as Kafka's completeUnrealizedFutures
                results[key] = for_code(-1)(f"The controller response did not contain a result for {item} {key}")
            elif answered[key][0] != NOT_CONTROLLER:
                results[key] = _item_error(*answered[key], f"{item} '{key}'", cut_off)
        pending = [key for key in pending if key not in results]
        if pending:
            raise for_code(NOT_CONTROLLER)(f"{name} of {', '.join(pending)}")

    try:
        await calls.run(name, CONTROLLER, attempt, timeout_ms)
    except KafkaError as exc:
        results.update({key: exc for key in pending})
    return {key: results[key] for key in items}


def _item_error(code: int, message: str | None, what: str, cut_off: BaseException | None) -> KafkaError | None:
    if not code:
        return None
    if code == TopicAlreadyExistsError.code and cut_off is not None:
        return TopicAlreadyExistsError(f"{message or what} (an earlier try of this call was cut off by "
                                       f"{_described(cut_off)}, and may have created it)")
    return for_code(code)(message or what)
