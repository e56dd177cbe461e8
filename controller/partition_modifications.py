"""New partitions of existing topics: the controller's watch of each /brokers/topics/<t> (Kafka 2.8's
PartitionModificationsHandler and processPartitionModifications).

Adding partitions (AdminZkClient.add_partitions, later CreatePartitions) only rewrites the topic's
assignment znode. The controller watches every topic's znode; a change becomes a
PartitionModifications event, which reads the assignment and sends the partitions the context does
not know yet through onNewPartitionCreation (NewPartition/NewReplica, then the first election to
OnlinePartition/OnlineReplica). While a topic is being deleted, new partitions are refused and the
assignment written back without them, as Kafka does.
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

from .controller_context import ControllerContext, TopicPartition
from .event_manager import ControllerEvent, PartitionModifications
from .leader_and_isr_writer import ZkCall
from .zk_data import TopicAssignment, TopicZNode

log = logging.getLogger(__name__)


class PartitionModificationsWatcher:
    def __init__(self, context: ControllerContext, zk: Any, run: ZkCall, controller_id: int,
                 enqueue_threadsafe: Callable[[ControllerEvent], None],
                 on_new_partitions: Callable[[list[TopicPartition]], Awaitable[None]]) -> None:
        self.context = context
        self.zk = zk
        self.run = run
        self.controller_id = controller_id
        self.enqueue_threadsafe = enqueue_threadsafe
        self.on_new_partitions = on_new_partitions
        self._unwatch: dict[str, Callable[[], None]] = {}

    @property
    def watched_topics(self) -> set[str]:
        return set(self._unwatch)

    # --- watches ---------------------------------------------------------------------------------------
    async def watch(self, versions: dict[str, int]) -> None:
        """Watch the assignment znode of each topic, read at ``versions[topic]``: any later version (or
        the znode's deletion) enqueues a PartitionModifications event."""
        self.unwatch(versions)
        if versions:
            self._unwatch.update(await self.run(self._watch_all, dict(versions)))

    def _watch_all(self, versions: dict[str, int]) -> dict[str, Callable[[], None]]:
        # the ZooKeeper thread: one DataWatch per topic, each reads the znode once as it is set
        return {topic: self.zk.watch_data(TopicZNode.path(topic), self._callback(topic, version))
                for topic, version in versions.items()}

    def _callback(self, topic: str, known_version: int) -> Callable[[bytes | None, int | None], None]:
        def fire(data: bytes | None, version: int | None) -> None:  # kazoo's thread
            # the watch fires once as it is set: nothing changed if the version is the one we read
            if data is None or version != known_version:
                self.enqueue_threadsafe(PartitionModifications(topic))
        return fire

    def unwatch(self, topics: Any) -> None:
        for topic in list(topics):
            unwatch = self._unwatch.pop(topic, None)
            if unwatch is not None:
                unwatch()

    def unwatch_all(self) -> None:
        self.unwatch(list(self._unwatch))

    # --- the event -------------------------------------------------------------------------------------
    async def process(self, topic: str) -> None:
        ctx = self.context
        if topic not in ctx.assignments:
            self.unwatch([topic])  # deleted (the TopicChange event forgets it)
            return
        found = await self.run(self.zk.get_topic_assignments_with_versions, [topic])
        if topic not in found:
            return
        assignment = found[topic][0].partitions
        added = {p: replicas for p, replicas in sorted(assignment.items()) if not ctx.replicas((topic, p))}
        if not added:
            return
        if ctx.is_topic_queued_for_deletion(topic):
            log.warning("Controller %d: skipping adding partitions %s for topic %s since it is currently being "
                        "deleted", self.controller_id, sorted(added), topic)
            await self._restore_assignment(topic, assignment)
            return
        log.info("Controller %d: new partitions to be added to %s: %s", self.controller_id, topic, added)
        ctx.add_partitions(topic, added)
        await self.on_new_partitions([(topic, p) for p in added])

    async def _restore_assignment(self, topic: str, assignment: dict[int, list[int]]) -> None:
        """Kafka's restorePartitionReplicaAssignment: write back the partitions that have znodes, with the
        replicas the controller knows, so the topic's deletion is not confused by partitions it never saw."""
        ctx = self.context
        existing = set(await self.run(self.zk.get_topic_partition_ids, topic))
        restored = {p: ctx.replicas((topic, p)) for p in assignment if p in existing}
        log.info("Controller %d: restoring the partition replica assignment of topic %s to %s", self.controller_id,
                 topic, restored)
        await self.run(self.zk.set_topic_assignment, topic, TopicAssignment(restored, ctx.topic_ids.get(topic)),
                       -1, ctx.epoch_zk_version)
