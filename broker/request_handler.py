"""KafkaRequestHandlerPool: ``num.io.threads`` tasks taking requests off the channel.

Each task runs ``receive -> KafkaApis.dispatch -> send_response``; a request read while no request is
queued or being handled skips the queue and runs the same steps in the processor's read callback
(``RequestChannel.direct``), sparing a loop turn and a task switch. A request that must wait frees its
handler, as Kafka's purgatory frees its handler threads: a fetch or acks=-1 produce parked in the purgatory
comes back as a ``Completion`` whose answer is sent in the call that completes it (a woken follower fetch
answers inside the append that woke it); any other awaitable (a ZooKeeper call) continues in a task of its
own. The connection stays muted until the answer is sent, so order is kept. When handlers cannot keep up,
the channel fills and the processors stop reading (backpressure).
"""

from __future__ import annotations

import asyncio
import logging
from time import monotonic
from typing import TYPE_CHECKING, Awaitable, Callable

from .metrics.request_log import describe_request, enabled as request_log_enabled
from .network.request_channel import Request, RequestChannel, Response
from .purgatory.completion import Completion

if TYPE_CHECKING:
    from .metrics.request_metrics import RequestMetrics

Dispatch = Callable[[Request], "Response | Completion | Awaitable[Response]"]

log = logging.getLogger(__name__)


class KafkaRequestHandlerPool:
    def __init__(self, channel: RequestChannel, dispatch: Dispatch, num_threads: int) -> None:
        self.channel = channel
        self.dispatch = dispatch  # KafkaApis.dispatch, passed down: this pool does not know the api layer
        self.num_threads = num_threads
        self.tasks: list[asyncio.Task] = []
        self.busy = 0  # handlers between receive and send_response (for draining on shutdown)
        # requests parked until a purgatory (their Completion) or ZooKeeper (their task) answers
        self.waiting: set[asyncio.Task | Completion] = set()
        self.metrics: RequestMetrics | None = None  # latency breakdown of each answered request

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.tasks = [loop.create_task(self._run(), name=f"kafka-request-handler-{i}")
                      for i in range(self.num_threads)]
        self.channel.direct = self._handle_now

    def _handle_now(self, request: Request) -> bool:
        """The channel's direct hand-off (a request just read, none queued): handle it in this call, unless
        a request is being handled already, e.g. this one was read while a response was sent from a
        handler (it is queued then, so handlers never nest)."""
        if self.busy or not self.tasks:
            return False
        self._handle(request)
        return True

    async def _run(self) -> None:
        receive = self.channel.receive_request
        handle = self._handle
        while True:
            handle(await receive())

    def _handle(self, request: Request) -> None:
        dequeued = request.dequeue_time = monotonic()
        if request_log_enabled():
            request.log_entry = describe_request(request)  # before a handler may consume the body
        self.busy += 1
        try:
            try:
                response = self.dispatch(request)
            except Exception:  # dispatch() has its own error path; this is a bug guard
                log.exception("KafkaApis.dispatch failed on %r", request)
                response = Response.close(request, "internal error")
            finally:
                request.release_memory()  # handled: its bytes are in the log now (Kafka releases here too)
            local_done = monotonic()
            if type(response) is Response:
                self.channel.send_response(response)
                if self.metrics is not None:
                    self.metrics.record(request, dequeued, local_done, local_done, monotonic())
            else:
                request.local_complete_time = local_done  # request quotas count handler time only
                if type(response) is Completion:
                    self._answer_on_completion(request, response, dequeued, local_done)
                else:
                    self._park(request, response, dequeued, local_done)
        except Exception:  # never let one request end a handler task: the others would wait forever
            log.exception("Request handler failed on %r; closing its connection", request)
            request.connection.close()
        finally:
            self.busy -= 1

    def _answer_on_completion(self, request: Request, completion: Completion, dequeued: float,
                              local_done: float) -> None:
        """Send the answer of a request parked in the purgatory in the call that completes it."""
        self.waiting.add(completion)

        def answer(done: Completion) -> None:
            self.waiting.discard(done)
            if done.cancelled():  # only stop() cancels; the connection must not stay muted
                request.connection.close()
                return
            try:
                failure = done.exception()
                if failure is not None:
                    log.error("Request %r failed: %r", request, failure)
                    response = Response.close(request, "internal error")
                else:
                    response = done.result()
                    if type(response) is not Response:  # still to compute off the loop (Fetch down-conversion)
                        self._park(request, response, dequeued, local_done)
                        return
                self._send_parked(request, response, dequeued, local_done)
            except Exception:  # a bug guard, as in _run: never leave the connection muted
                log.exception("Answering %r failed; closing its connection", request)
                request.connection.close()

        completion.add_done_callback(answer)

    def _park(self, request, pending, dequeued: float = 0.0, local_done: float = 0.0) -> None:
        """Finish a waiting request in its own task; the connection stays muted until it answers."""
        task = asyncio.get_running_loop().create_task(self._answer_when_done(request, pending, dequeued, local_done))
        self.waiting.add(task)

        def done(t: asyncio.Task) -> None:
            self.waiting.discard(t)
            if t.cancelled():  # only stop() cancels; anything else would leave the connection muted
                if self.tasks:
                    request.connection.close()
            elif t.exception() is not None:
                log.error("Answering %r failed; closing its connection", request, exc_info=t.exception())
                request.connection.close()

        task.add_done_callback(done)

    async def _answer_when_done(self, request: Request, pending: Awaitable[Response], dequeued: float,
                                local_done: float) -> None:
        """Await the request's answer (a ZooKeeper write, a group join) and send it at once, in the same
        event-loop turn: a done callback would send it a turn later, behind whatever else that turn runs."""
        try:
            response = await pending
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("Request %r failed: %r", request, exc)
            response = Response.close(request, "internal error")
        self._send_parked(request, response, dequeued, local_done)

    def _send_parked(self, request: Request, response: Response, dequeued: float, local_done: float) -> None:
        """Send the answer of a request that waited, and record its times (the wait is its remote time)."""
        remote_done = monotonic()
        self.channel.send_response(response)
        if self.metrics is not None:
            self.metrics.record(request, dequeued, local_done, remote_done, monotonic())

    async def stop(self) -> None:
        self.channel.direct = None
        parked = [w for w in self.waiting if type(w) is Completion]
        tasks = self.tasks + [w for w in self.waiting if type(w) is not Completion]
        for waiting in parked + tasks:
            waiting.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.tasks = []
        self.waiting.clear()
