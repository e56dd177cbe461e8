"""ControllerEventManager: every controller action is an event on one queue, processed by one task.

This is the design's (and Kafka's ControllerEventManager's) answer to concurrency in the controller:
ZooKeeper watches, broker responses and API calls never act themselves; they enqueue an event, and
a single task processes events one at a time, so the controller's state is only ever touched by
that task. ZooKeeper callbacks run on kazoo's thread and enqueue with ``put_threadsafe``, which only
does ``loop.call_soon_threadsafe``.

The events of the controller are small frozen dataclasses, declared here next to the queue.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

log = logging.getLogger(__name__)


class ControllerEvent:
    """Base of the controller's events."""


@dataclass(frozen=True)
class Startup(ControllerEvent):
    """The broker started its controller: watch /controller and try to become controller."""


@dataclass(frozen=True)
class ControllerChange(ControllerEvent):
    """/controller was written (another broker, or us, is controller now)."""
    controller_id: int | None = None


@dataclass(frozen=True)
class Reelect(ControllerEvent):
    """/controller disappeared: resign if it was ours, then run for election."""


@dataclass(frozen=True)
class BrokerChange(ControllerEvent):
    """The children of /brokers/ids changed."""


@dataclass(frozen=True)
class TopicChange(ControllerEvent):
    """The children of /brokers/topics changed."""


@dataclass(frozen=True)
class TopicDeletion(ControllerEvent):
    """The children of /admin/delete_topics changed."""


@dataclass(frozen=True)
class StopReplicaResponseReceived(ControllerEvent):
    """A broker answered a StopReplica sent for a topic deletion."""
    broker_id: int
    partition_errors: tuple[tuple[str, int, int], ...]  # (topic, partition, error code)
    error_code: int = 0


@dataclass(frozen=True)
class IsrChangeNotification(ControllerEvent):
    """The children of /isr_change_notification changed (a leader wrote a new ISR)."""


@dataclass(frozen=True)
class LogDirEventNotification(ControllerEvent):
    """The children of /log_dir_event_notification changed (a broker's log directory went offline)."""


@dataclass(frozen=True)
class LeaderAndIsrResponseReceived(ControllerEvent):
    """A broker answered a LeaderAndIsr: KAFKA_STORAGE_ERROR marks its replica offline, NONE online again."""
    broker_id: int
    partition_errors: tuple[tuple[str, int, int], ...]  # (topic, partition, error code)


@dataclass(frozen=True)
class PartitionModifications(ControllerEvent):
    """/brokers/topics/<topic> was written (partitions added) or deleted."""
    topic: str


@dataclass(frozen=True)
class PreferredReplicaElection(ControllerEvent):
    """/admin/preferred_replica_election was created or written."""


@dataclass(frozen=True)
class PartitionReassignment(ControllerEvent):
    """/admin/reassign_partitions was created or written."""


@dataclass(frozen=True, eq=False)
class ControlledShutdown(ControllerEvent):
    """A broker asked to shut down; ``result`` gets the partitions it still leads, or an exception."""
    broker_id: int
    broker_epoch: int
    result: Any  # asyncio.Future[set[tuple[str, int]]]


@dataclass(frozen=True)
class PartitionReassignmentIsrChange(ControllerEvent):
    """The state znode of a partition being reassigned changed (Kafka's PartitionReassignmentIsrChange)."""
    topic: str
    partition: int


@dataclass(frozen=True)
class AutoPreferredReplicaLeaderElection(ControllerEvent):
    """The periodic leader imbalance check (Kafka's event of that name)."""


@dataclass(frozen=True, eq=False)
class ApiCall(ControllerEvent):
    """An admin API's work for the active controller (ElectLeaders, AlterPartitionReassignments,
    ListPartitionReassignments): ``action()`` runs on the event task, ``result`` gets its value."""
    name: str
    action: Any  # Callable[[], Awaitable[Any]]
    result: Any  # asyncio.Future[Any]


@dataclass(frozen=True)
class ShutdownEventThread(ControllerEvent):
    """Last event: the processing task ends after it."""


Processor = Callable[[ControllerEvent], Awaitable[None] | None]


class ControllerEventManager:
    """One asyncio queue, one task calling ``processor(event)`` for each event in order.

    A processor's exception is logged and the next event processed (Kafka logs and carries on too).
    """

    def __init__(self, processor: Processor, name: str = "controller-event-thread") -> None:
        self.processor = processor
        self.name = name
        self._queue: asyncio.Queue[ControllerEvent] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self.processed = 0
        self.failed = 0
        self.current: ControllerEvent | None = None

    def start(self) -> None:
        """Start the processing task on the running loop."""
        self._loop = asyncio.get_running_loop()
        self._task = self._loop.create_task(self._run(), name=self.name)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def queue_size(self) -> int:
        return self._queue.qsize()

    def put(self, event: ControllerEvent) -> None:
        """Enqueue an event (from the event loop's thread)."""
        self._queue.put_nowait(event)

    def put_threadsafe(self, event: ControllerEvent) -> None:
        """Enqueue an event from any thread (kazoo's callbacks); dropped once the loop is closed."""
        loop = self._loop
        if loop is None or loop.is_closed():
            log.debug("%s: dropping %r, the event loop is gone", self.name, event)
            return
        try:
            loop.call_soon_threadsafe(self._queue.put_nowait, event)
        except RuntimeError:  # the loop closed between the check and the call
            log.debug("%s: dropping %r, the event loop is closed", self.name, event)

    def clear_and_put(self, event: ControllerEvent) -> None:
        """Drop every queued event, then enqueue ``event`` (Kafka uses it for shutdown and expiry)."""
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()
        self.put(event)

    async def wait_idle(self) -> None:
        """Return once every event enqueued so far has been processed."""
        await self._queue.join()

    async def close(self) -> None:
        """Drop pending events, let the current one finish, stop the task."""
        if self._task is None:
            return
        if not self._task.done():
            self.clear_and_put(ShutdownEventThread())
            await asyncio.shield(self._task)
        self._task = None

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                if isinstance(event, ShutdownEventThread):
                    return
                self.current = event
                result: Any = self.processor(event)
                if inspect.isawaitable(result):
                    await result
                self.processed += 1
            except asyncio.CancelledError:
                raise
            except Exception:
                self.failed += 1
                log.exception("%s: processing %r failed", self.name, event)
            finally:
                self.current = None
                self._queue.task_done()
