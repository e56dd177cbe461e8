"""IsrManager: writes a leader's ISR changes to ZooKeeper and tells the controller about them.

Kafka 2.8's ZooKeeper path for ISR changes (Partition.shrinkIsr/expandIsr with the zkIsrManager):
the partition state znode is written conditionally on its version (the partition epoch); on a
version conflict the znode is re-read and, unless it already holds exactly what we meant to write,
the change is given up: the controller changed the partition and a LeaderAndIsr is on its way
("cached zkVersion not equal to that in zookeeper"). A write whose answer was lost with the connection
may have been applied: it is retried until its outcome is known (Kafka's retryRequestsUntilConnected; the
retry's version conflict finds our own ISR there), and meanwhile the partition keeps the change pending,
so a replica being added counts for the high watermark. Changed partitions are then announced through
``/isr_change_notification`` in batches (Kafka's isr-change-propagation: checked every 2.5 s,
sent once no change came for 5 s or the oldest waited 60 s), so the controller's UpdateMetadata
carries the new ISR to every broker.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from ..controller.zk_client import ZkConnectionError
from ..controller.zk_data import LeaderIsrAndControllerEpoch
from .partition import Partition

log = logging.getLogger(__name__)

# Kafka's ReplicaManager.DefaultIsrPropagationConfig
PROPAGATION_CHECK_INTERVAL_MS = 2500
PROPAGATION_LINGER_MS = 5000
PROPAGATION_MAX_DELAY_MS = 60000


class IsrManager:
    def __init__(self, zk: Any, broker_id: int, clock: Callable[[], int],
                 on_isr_changed: Callable[[Partition], None] | None = None) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.clock = clock
        self.on_isr_changed = on_isr_changed  # the replica manager completes waiting produces
        self._changed: set[tuple[str, int]] = set()
        self._last_change_ms = 0
        self._last_propagation_ms = clock()  # Kafka's lastIsrPropagationMs starts at start-up
        self._tasks: set[asyncio.Task] = set()
        self.retry_backoff_s = 0.5  # between attempts of a write whose outcome is unknown

    def submit(self, partition: Partition, new_isr: list[int]) -> bool:
        """Start the conditional write of ``new_isr``; False if one is already under way."""
        if partition.isr_update_in_flight or not partition.is_leader:
            return False
        partition.pending_isr = list(new_isr)
        task = asyncio.get_running_loop().create_task(self._write(partition, new_isr))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _write(self, partition: Partition, new_isr: list[int]) -> None:
        leader_epoch, expected = partition.leader_epoch, partition.partition_epoch
        state = LeaderIsrAndControllerEpoch(self.broker_id, leader_epoch, list(new_isr), partition.controller_epoch)
        loop = asyncio.get_running_loop()

        def replaced() -> bool:  # a LeaderAndIsr replaced the state meanwhile; it wins
            return partition.leader_epoch != leader_epoch or partition.partition_epoch != expected
        attempt = 0
        while True:
            try:
                version = await loop.run_in_executor(None, self._conditional_write, partition.key, state, expected)
                break
            except ZkConnectionError as e:  # applied or not: ask again once connected
                attempt += 1
                if attempt == 1:
                    log.warning("[Partition %s-%d broker=%d] the outcome of writing ISR %s is unknown (%s); "
                                "retrying until ZooKeeper answers", *partition.key, self.broker_id, new_isr, e)
            except Exception:
                log.exception("Cannot write the ISR %s of %s-%d to ZooKeeper", new_isr, *partition.key)
                version = None
                break
            if replaced():
                return
            await asyncio.sleep(self.retry_backoff_s)
        if replaced():
            return
        if version is None:
            partition.pending_isr = None
            log.info("[Partition %s-%d broker=%d] cached zkVersion %d is not the one in ZooKeeper; "
                     "skipping the ISR update to %s", *partition.key, self.broker_id, expected, new_isr)
            if self.on_isr_changed is not None:  # a dropped addition no longer holds the high watermark
                self.on_isr_changed(partition)
            return
        log.info("[Partition %s-%d broker=%d] ISR updated from %s to %s (partition epoch %d)",
                 *partition.key, self.broker_id, partition.isr, new_isr, version)
        partition.apply_isr(new_isr, version)
        self.record_isr_change(partition.key)
        if self.on_isr_changed is not None:
            self.on_isr_changed(partition)

    def _conditional_write(self, key: tuple[str, int], state: LeaderIsrAndControllerEpoch,
                           expected: int) -> int | None:
        """In an executor: the new znode version, or None if the controller changed the partition."""
        version = self.zk.update_partition_state(key[0], key[1], state, expected)
        if version is not None:
            return version
        current = self.zk.get_partition_states([key]).get(key)
        if current is not None and current[0] == state:  # our own write, already there (a retried request)
            return current[1]
        return None

    # -- propagation ------------------------------------------------------------------------------

    def record_isr_change(self, key: tuple[str, int]) -> None:
        self._changed.add(key)
        self._last_change_ms = self.clock()

    def take_due_changes(self) -> list[tuple[str, int]]:
        """The changed partitions to announce now (Kafka's maybePropagateIsrChanges rule), or []."""
        now = self.clock()
        if not self._changed:
            return []
        if (self._last_change_ms + PROPAGATION_LINGER_MS < now
                or self._last_propagation_ms + PROPAGATION_MAX_DELAY_MS < now):
            changed = sorted(self._changed)
            self._changed.clear()
            self._last_propagation_ms = now
            return changed
        return []

    async def propagate_due_changes(self) -> list[tuple[str, int]]:
        """Run every PROPAGATION_CHECK_INTERVAL_MS: write one notification if changes are due."""
        changed = self.take_due_changes()
        if changed:
            try:
                await asyncio.get_running_loop().run_in_executor(None, self.zk.propagate_isr_changes, changed)
            except Exception:
                self._changed.update(changed)  # try again at the next check
                raise
        return changed

    async def shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
