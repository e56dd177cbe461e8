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
from typing import TYPE_CHECKING, Callable

from ..controller.zk_client import ZkConnectionError
from ..controller.zk_data import LeaderIsrAndControllerEpoch
from .partition import Partition

if TYPE_CHECKING:
    from ..controller.zk_client import KafkaZkClient

log = logging.getLogger(__name__)

# Kafka's ReplicaManager.DefaultIsrPropagationConfig
PROPAGATION_CHECK_INTERVAL_MS = 2500
PROPAGATION_LINGER_MS = 5000
PROPAGATION_MAX_DELAY_MS = 60000


class IsrManager:
    def __init__(self, zk: KafkaZkClient, broker_id: int, clock: Callable[[], int],
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
        # Changes submitted and not yet written: one bulk write for all of them (a restarted follower
        # rejoins thousands of ISRs at once; one ZooKeeper round trip each would take seconds).
        self._pending: list[tuple[Partition, list[int], int, int]] = []

    def submit(self, partition: Partition, new_isr: list[int]) -> bool:
        """Start the conditional write of ``new_isr``; False if one is already under way."""
        if partition.isr_update_in_flight or not partition.is_leader:
            return False
        partition.pending_isr = list(new_isr)
        self._pending.append((partition, list(new_isr), partition.leader_epoch, partition.partition_epoch))
        if len(self._pending) == 1:
            task = asyncio.get_running_loop().create_task(self._write_pending())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return True

    async def _write_pending(self) -> None:
        await asyncio.sleep(0)  # the other changes of this turn of the loop join the write
        batch, self._pending = self._pending, []
        loop = asyncio.get_running_loop()

        def current() -> list[tuple[Partition, list[int], int, int]]:  # a LeaderAndIsr replacing a state wins
            return [item for item in batch if item[0].leader_epoch == item[2] and item[0].partition_epoch == item[3]]
        attempt = 0
        while True:
            batch = current()
            if not batch:
                return
            updates = {p.key: (LeaderIsrAndControllerEpoch(self.broker_id, epoch, isr, p.controller_epoch), expected)
                       for p, isr, epoch, expected in batch}
            try:
                versions = await loop.run_in_executor(None, self._conditional_writes, updates)
                break
            except ZkConnectionError as e:  # applied or not: ask again once connected
                attempt += 1
                if attempt == 1:
                    log.warning("[Broker %d] the outcome of writing ISR changes of %d partitions is unknown (%s); "
                                "retrying until ZooKeeper answers", self.broker_id, len(updates), e)
            except Exception:
                log.exception("Cannot write the ISRs of %d partitions to ZooKeeper", len(updates))
                versions = {}
                break
            await asyncio.sleep(self.retry_backoff_s)
        applied, skipped = [], []
        for partition, new_isr, _, _ in current():
            version = versions.get(partition.key)
            if version is None:
                partition.pending_isr = None
                skipped.append(partition.key)
                if self.on_isr_changed is not None:  # a dropped addition no longer holds the high watermark
                    self.on_isr_changed(partition)
                continue
            applied.append((partition.key, partition.isr, new_isr))
            partition.apply_isr(new_isr, version)
            self.record_isr_change(partition.key)
            if self.on_isr_changed is not None:
                self.on_isr_changed(partition)
        if skipped:
            log.info("[Broker %d] cached zkVersion is not the one in ZooKeeper for %d partitions; skipping their "
                     "ISR update: %s", self.broker_id, len(skipped), _some(skipped))
        if applied:  # one line, not one per partition (Kafka logs each)
            log.info("[Broker %d] ISR updated for %d partitions: %s", self.broker_id, len(applied),
                     _some([key for key, _, _ in applied], {key: f" {old} -> {new}" for key, old, new in applied}))

    def _conditional_writes(self, updates: dict[tuple[str, int], tuple[LeaderIsrAndControllerEpoch, int]]
                            ) -> dict[tuple[str, int], int | None]:
        """In an executor: the new znode version of each partition, or None if the controller changed it."""
        versions = self.zk.update_partition_states(updates)
        conflicts = [key for key, version in versions.items() if version is None]
        if conflicts:
            for key, (state, version) in self.zk.get_partition_states(conflicts).items():
                if state == updates[key][0]:  # our own write, already there (a retried request)
                    versions[key] = version
        return versions

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


def _some(keys: list[tuple[str, int]], detail: dict | None = None, limit: int = 10) -> str:
    shown = ", ".join(f"{t}-{p}{(detail or {}).get((t, p), '')}" for t, p in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")
