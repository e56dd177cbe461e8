"""TxnMarkerChannel: one queue per destination broker, drained into one WriteTxnMarkers request carrying the
markers of every transaction queued for that broker (Kafka 2.8's TransactionMarkerChannelManager with its
per-broker queues, drained by the InterBrokerSendThread).

A transaction hands in the markers it needs on one broker (``submit``, in the call that decided them) and
awaits that broker's answer for its producer id. Each destination has at most one request in flight. With
none out and the connection open, the request leaves in the ``submit`` call itself (batching never waits
for company); while one is out, new markers queue, and they all leave together when it returns, so
concurrent transactions share requests instead of each sending its own. Two markers of one producer never
share a request (the response is keyed by producer id, as in Kafka); the later one waits for the next. What a marker's answer means (done, retry, fenced) is the
sender's business (marker_sender.py): this module only moves requests and hands back per-producer results.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from ....clients.connection import BrokerConnection
from ....protocol.messages import WriteTxnMarkersRequest
from .trace import trace

log = logging.getLogger(__name__)

_WRITE_TXN_MARKERS = WriteTxnMarkersRequest.MESSAGE.api_key
_Marker = WriteTxnMarkersRequest.WritableTxnMarker
_MarkerTopic = _Marker.WritableTxnMarkerTopic

CONNECT_TIMEOUT_S = 10.0  # as Kafka 2.8's socket.connection.setup.timeout.ms: a hung broker is given up sooner


@dataclass
class QueuedMarker:
    """The markers of one transaction for one broker's partitions; ``result`` gets that broker's
    WritableTxnMarkerResult for the producer, or None when the request failed as a whole."""
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: list[tuple[str, int]]
    result: asyncio.Future = field(repr=False)

    def to_request_marker(self) -> Any:
        topics: dict[str, list[int]] = {}
        for topic, index in self.partitions:
            topics.setdefault(topic, []).append(index)
        return _Marker(producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                       transaction_result=self.commit, coordinator_epoch=self.coordinator_epoch,
                       topics=[_MarkerTopic(name=t, partition_indexes=ps) for t, ps in topics.items()])


class TxnMarkerChannel:
    def __init__(self, broker_id: int, request_timeout_s: float,
                 connect: Callable[..., Awaitable[BrokerConnection]] = BrokerConnection.connect) -> None:
        self.broker_id = broker_id
        self.request_timeout_s = request_timeout_s
        self.connect = connect  # with the inter-broker security; a unit test's fake connection
        self._queues: dict[int, list[QueuedMarker]] = {}
        self._addresses: dict[int, tuple[str, int]] = {}
        self._drainers: dict[int, asyncio.Task] = {}
        self._connections: dict[int, tuple[tuple[str, int], BrokerConnection]] = {}
        self.requests_sent = 0    # WriteTxnMarkers requests sent (for tests and benchmarks)
        self.markers_sent = 0     # markers they carried

    def submit(self, broker: int, address: tuple[str, int], producer_id: int, producer_epoch: int,
               commit: bool, coordinator_epoch: int, partitions: list[tuple[str, int]]) -> asyncio.Future:
        """Queue one transaction's markers for ``broker``; the future of its WritableTxnMarkerResult, or None
        if the request failed (lost connection, timeout). With no request out to that broker and its
        connection open, the request leaves in this call, with whatever else is queued: batching never waits
        for company. Cancelling the future drops the marker from the queue."""
        loop = asyncio.get_running_loop()
        queued = QueuedMarker(producer_id, producer_epoch, commit, coordinator_epoch, list(partitions),
                              loop.create_future())
        self._queues.setdefault(broker, []).append(queued)
        self._addresses[broker] = address
        trace(producer_id, "markers-queued", broker=broker, partitions=len(partitions))
        drainer = self._drainers.get(broker)
        if drainer is None or drainer.done():
            self._drainers[broker] = loop.create_task(self._drain(broker, self._send_now(broker)),
                                                      name=f"txn-marker-channel-{broker}")
        return queued.result

    def queued(self, broker: int) -> int:
        return sum(1 for q in self._queues.get(broker, ()) if not q.result.done())

    async def shutdown(self) -> None:
        drainers = list(self._drainers.values())
        for task in drainers:
            task.cancel()
        await asyncio.gather(*drainers, return_exceptions=True)
        self._drainers.clear()
        for queue in self._queues.values():
            for queued in queue:
                queued.result.cancel()
        self._queues.clear()
        for _, conn in self._connections.values():
            await conn.close()
        self._connections.clear()

    # -- draining ---------------------------------------------------------------------------------

    def _take_batch(self, broker: int) -> list[QueuedMarker]:
        """Everything queued for the broker, one marker per producer id (the rest stays queued)."""
        batch: list[QueuedMarker] = []
        left: list[QueuedMarker] = []
        producers: set[int] = set()
        for queued in self._queues.get(broker, []):
            if queued.result.done():  # its transaction task was cancelled
                continue
            if queued.producer_id in producers:
                left.append(queued)
            else:
                producers.add(queued.producer_id)
                batch.append(queued)
        self._queues[broker] = left
        return batch

    def _send_now(self, broker: int) -> tuple[list[QueuedMarker], asyncio.Future] | None:
        """Write the queued batch on the broker's open connection in this call: (batch, answer future), or None
        (not connected yet, or the connection cannot take it now): the drainer then sends it."""
        known = self._connections.get(broker)
        if known is None or known[0] != self._addresses[broker] or known[1].closed:
            return None
        batch = self._take_batch(broker)
        if not batch:
            return None
        waiter = known[1].send_now(self._request(broker, batch))
        if waiter is None:
            self._queues[broker] = batch + self._queues[broker]
            return None
        return batch, waiter

    async def _drain(self, broker: int, in_flight: tuple[list[QueuedMarker], asyncio.Future] | None = None) -> None:
        batch: list[QueuedMarker] = []
        try:
            while True:
                waiter = None
                if in_flight is not None:
                    (batch, waiter), in_flight = in_flight, None
                else:
                    batch = self._take_batch(broker)
                if not batch:
                    return
                results = await self._send_batch(broker, batch, waiter)
                for queued in batch:
                    if not queued.result.done():
                        queued.result.set_result(None if results is None else results.get(queued.producer_id))
                batch = []
        finally:
            # cancelled (shutdown) or a bug: nobody may wait forever on a marker this task held
            for queued in batch + self._queues.get(broker, []):
                if not queued.result.done():
                    queued.result.set_result(None)

    def _request(self, broker: int, batch: list[QueuedMarker]) -> Any:
        self.requests_sent += 1
        self.markers_sent += len(batch)
        for queued in batch:
            trace(queued.producer_id, "markers-sent", broker=broker, batch=len(batch))
        return WriteTxnMarkersRequest(markers=[queued.to_request_marker() for queued in batch])

    async def _send_batch(self, broker: int, batch: list[QueuedMarker],
                          waiter: asyncio.Future | None = None) -> dict[int, Any] | None:
        """Send the batch (unless ``waiter``: it was written already) and wait for the answer; the results by
        producer id, or None when the request failed as a whole."""
        try:
            conn = await self._connection(broker, self._addresses[broker])
            if waiter is None:
                response = await conn.send(self._request(broker, batch), timeout=self.request_timeout_s)
            else:
                response = await conn.answer(waiter, _WRITE_TXN_MARKERS, conn.version_for(_WRITE_TXN_MARKERS),
                                             self.request_timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # lost connection, timeout, a broker that does not serve the API yet
            log.info("Sending %d transaction markers to broker %d failed (%s); they will be retried", len(batch),
                     broker, exc)
            await self._drop_connection(broker)
            return None
        for queued in batch:
            trace(queued.producer_id, "markers-answered", broker=broker)
        return {result.producer_id: result for result in response.markers}

    # -- connections ------------------------------------------------------------------------------

    async def _connection(self, broker: int, address: tuple[str, int]) -> BrokerConnection:
        # only this broker's drainer connects to it, so no lock is needed
        known = self._connections.get(broker)
        if known is not None and known[0] == address and not known[1].closed:
            return known[1]
        if known is not None:
            await known[1].close()
        conn = await self.connect(address[0], address[1],
                                  client_id=f"broker-{self.broker_id}-txn-marker-sender",
                                  timeout=min(self.request_timeout_s, CONNECT_TIMEOUT_S))
        self._connections[broker] = (address, conn)
        return conn

    async def _drop_connection(self, broker: int) -> None:
        known = self._connections.pop(broker, None)
        if known is not None:
            await known[1].close()
