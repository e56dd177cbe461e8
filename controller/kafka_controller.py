"""KafkaController: the ZooKeeper-mode controller that every broker runs (Kafka 2.8's KafkaController, minimal).

Every broker watches /controller; when it is absent, each tries to create it (with /controller_epoch
bumped in the same transaction) and the winner is the controller until its session ends. The
controller watches /brokers/ids, /brokers/topics and /admin/delete_topics, keeps a ControllerContext,
elects partition leaders, writes them to the partition state znodes (conditionally on the znode
version and on /controller_epoch's version, so a deposed controller's writes fail) and tells the
brokers with LeaderAndIsr, UpdateMetadata and StopReplica.

Everything happens as events on one queue processed by one task (ControllerEventManager); ZooKeeper
watch callbacks only enqueue. ZooKeeper calls block, so they run on one dedicated executor thread
and the event task awaits them. This issue's controller has no replica/partition state machines,
controlled shutdown, reassignment or preferred election yet (issue 4); it is laid out so they slot in.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable

from ..protocol.api_keys import ApiKey
from .channel_manager import ControllerBrokerRequestBatch, ControllerChannelManager, state_change_log
from .controller_context import ControllerContext, TopicPartition
from .event_manager import (BrokerChange, ControllerChange, ControllerEvent, ControllerEventManager, Reelect,
                            Startup, StopReplicaResponseReceived, TopicChange, TopicDeletion)
from .leader_election import initial_state, state_after_broker_failure
from .zk_client import ControllerMovedError, KafkaZkClient, ZkConnectionError, ZkError
from .zk_data import (BrokerIdsZNode, DeleteTopicsZNode, LeaderIsrAndControllerEpoch, TopicAssignment,
                      TopicsZNode)

log = logging.getLogger(__name__)

ZK_RETRY_BACKOFF_S = 1.0
MAX_STATE_WRITE_ATTEMPTS = 10  # re-reads after a version conflict before a partition is left for later

# replica deletion progress of a topic being deleted (Kafka's ReplicaDeletion* replica states)
DELETION_PENDING, DELETION_STARTED, DELETION_FAILED, DELETION_DONE = "pending", "started", "failed", "done"

StateChange = Callable[[TopicPartition, LeaderIsrAndControllerEpoch], "LeaderIsrAndControllerEpoch | None"]


class KafkaController:
    def __init__(self, config: Any, zk: KafkaZkClient, broker_id: int,
                 broker_epoch_provider: Callable[[], int] | None = None) -> None:
        self.config = config
        self.zk = zk
        self.broker_id = broker_id
        # Our own broker epoch (the broker re-registers after a session expiry); kept for issue 4's
        # controlled shutdown. The context's epochs of every broker come from ZooKeeper.
        self.broker_epoch_provider = broker_epoch_provider
        self.listener_name: str = config.inter_broker_listener_name
        self.unclean_leader_election: bool = config.get("unclean.leader.election.enable")
        self.delete_topic_enable: bool = config.get("delete.topic.enable")
        self.socket_timeout_ms: int = config.get("controller.socket.timeout.ms")
        self.context = ControllerContext()
        self.event_manager = ControllerEventManager(self._process, name=f"controller-{broker_id}-event-thread")
        self.active_controller_id = -1
        self.channel: ControllerChannelManager | None = None
        self._watches: list[Callable[[], None]] = []   # unwatch functions of this controller tenure
        self._unwatch_controller: Callable[[], None] | None = None
        self._deletions: dict[str, dict[tuple[TopicPartition, int], str]] = {}  # topic -> (tp, replica) -> state
        self._zk_executor = ThreadPoolExecutor(1, thread_name_prefix=f"controller-{broker_id}-zk")
        self._active = False
        self._controller_session: int | None = None  # the ZooKeeper session that won the election
        self._shut_down = False

    # --- the broker's interface ------------------------------------------------------------------------
    async def startup(self) -> None:
        """Start the event task and run for controller (call after the broker registered in ZooKeeper)."""
        self.event_manager.start()
        self.event_manager.put(Startup())

    async def shutdown(self) -> None:
        """Stop processing events, resign, and give up /controller if we hold it."""
        if self._shut_down:
            return
        self._shut_down = True
        await self.event_manager.close()
        if self._unwatch_controller is not None:
            self._unwatch_controller()
        was_active, epoch_zk_version = self._active, self.context.epoch_zk_version
        await self._on_controller_resignation()
        self.active_controller_id = -1
        if was_active:  # let another broker take over now rather than when our session ends
            try:
                await self._zk(self.zk.delete_controller, epoch_zk_version)
            except ZkError as e:
                log.info("Controller %d: not deleting /controller on shutdown: %s", self.broker_id, e)
        self._zk_executor.shutdown(wait=False)

    @property
    def is_active(self) -> bool:
        """True between winning an election and resigning (``active_controller_id`` is what ZooKeeper says)."""
        return self._active

    @property
    def epoch(self) -> int:
        return self.context.epoch

    # --- plumbing --------------------------------------------------------------------------------------
    async def _zk(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a blocking ZooKeeper call on the controller's ZooKeeper thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._zk_executor, functools.partial(method, *args, **kwargs))

    def _enqueue_from_watch(self, event: ControllerEvent) -> Callable[..., None]:
        """A watch callback (kazoo's thread) that only hands ``event`` to the event loop."""
        return lambda *_: self.event_manager.put_threadsafe(event)

    def _on_controller_znode(self, controller_id: int | None) -> None:
        # kazoo's thread: /controller created or changed -> ControllerChange, deleted -> Reelect
        self.event_manager.put_threadsafe(Reelect() if controller_id is None else ControllerChange(controller_id))

    def _new_batch(self) -> ControllerBrokerRequestBatch:
        assert self.channel is not None
        return ControllerBrokerRequestBatch(self.context, self.channel, self.broker_id, self._on_broker_response)

    async def _process(self, event: ControllerEvent) -> None:
        try:
            if isinstance(event, Startup):
                if self._unwatch_controller is None:
                    self._unwatch_controller = await self._zk(self.zk.watch_controller, self._on_controller_znode)
                await self._elect()
            elif isinstance(event, ControllerChange):
                await self._maybe_resign()
            elif isinstance(event, Reelect):
                await self._maybe_resign()
                await self._elect()
            elif not self.is_active:
                return  # a watch or response of an earlier tenure: only the active controller acts
            elif self.zk.session_id != self._controller_session:
                # Our session expired since we won: /controller (ephemeral) is gone, we are a zombie.
                # Kafka resigns on its Expire event; the session id tells us without that event.
                log.info("Controller %d: the ZooKeeper session that won the election ended", self.broker_id)
                await self._on_controller_resignation()
                await self._maybe_resign()
            elif isinstance(event, BrokerChange):
                await self._process_broker_change()
            elif isinstance(event, TopicChange):
                await self._process_topic_change()
            elif isinstance(event, TopicDeletion):
                await self._process_topic_deletion()
            elif isinstance(event, StopReplicaResponseReceived):
                await self._process_stop_replica_response(event)
        except ControllerMovedError as e:
            log.info("Controller %d: controller moved to another broker while processing %r (%s); resigning",
                     self.broker_id, event, e)
            await self._maybe_resign()
        except ZkConnectionError as e:
            log.warning("Controller %d: ZooKeeper unavailable while processing %r (%s); retrying", self.broker_id,
                        event, e)
            await self._retry_later(event)

    async def _retry_later(self, event: ControllerEvent) -> None:
        """Kafka's ZooKeeper client blocks until it reconnects; so does our event task, then the event goes
        back on the queue. Every event re-reads what it needs from ZooKeeper, so running it again is safe."""
        await asyncio.sleep(ZK_RETRY_BACKOFF_S)
        if not self._shut_down:
            self.event_manager.put(event)

    # --- election and resignation ----------------------------------------------------------------------
    async def _read_active_controller(self) -> None:
        controller_id = await self._zk(self.zk.get_controller_id)
        self.active_controller_id = -1 if controller_id is None else controller_id

    async def _maybe_resign(self) -> None:
        await self._read_active_controller()
        if self._active and self.active_controller_id != self.broker_id:
            log.info("Controller %d: resigning, the controller is now %d", self.broker_id, self.active_controller_id)
            await self._on_controller_resignation()
        elif not self._active and self.active_controller_id == self.broker_id:
            # /controller names us but we do not act as controller (a failed failover whose /controller
            # could not be deleted then): delete it, so that every broker runs for election again.
            log.warning("Controller %d: /controller names this broker, which is not controller; deleting it",
                        self.broker_id)
            await self._zk(self.zk.delete_controller)
            self.active_controller_id = -1

    async def _elect(self) -> None:
        await self._maybe_resign()
        if self.active_controller_id != -1:
            log.debug("Controller %d: broker %d is controller", self.broker_id, self.active_controller_id)
            return
        try:
            epoch, epoch_zk_version = await self._zk(self.zk.register_controller_and_increment_epoch, self.broker_id)
        except ControllerMovedError as e:
            log.info("Controller %d: lost the election: %s", self.broker_id, e)
            await self._maybe_resign()
            return
        self.context.epoch, self.context.epoch_zk_version = epoch, epoch_zk_version
        self.active_controller_id = self.broker_id
        self._active = True
        self._controller_session = self.zk.session_id
        log.info("Controller %d: elected as controller with epoch %d", self.broker_id, epoch)
        try:
            await self._on_controller_failover()
        except ControllerMovedError:
            raise
        except Exception:
            # Kafka's triggerControllerMove: give the role up so that a healthier broker can take it.
            log.exception("Controller %d: failover failed; resigning and deleting /controller", self.broker_id)
            version = self.context.epoch_zk_version
            await self._on_controller_resignation()
            self.active_controller_id = -1
            try:
                await self._zk(self.zk.delete_controller, version)
            except ZkConnectionError:
                log.warning("Controller %d: could not delete /controller yet", self.broker_id, exc_info=True)
                await self._retry_later(Reelect())  # which deletes it once ZooKeeper answers
            except ZkError:
                log.warning("Controller %d: could not delete /controller", self.broker_id, exc_info=True)

    async def _on_controller_failover(self) -> None:
        ctx = self.context
        # Watches first: a change made while we read below still produces an event afterwards.
        for path, event in ((BrokerIdsZNode.path, BrokerChange()), (TopicsZNode.path, TopicChange()),
                            (DeleteTopicsZNode.path, TopicDeletion())):
            self._watches.append(await self._zk(self.zk.watch_children, path, self._enqueue_from_watch(event)))
        for broker_id, (info, broker_epoch) in (await self._zk(self.zk.get_all_brokers_with_epochs)).items():
            ctx.add_live_broker(info, broker_epoch)
        await self._add_topics(await self._zk(self.zk.get_topic_assignments_with_versions))
        states = await self._zk(self.zk.get_partition_states, ctx.all_partitions())
        for tp, (state, zk_version) in states.items():
            ctx.put_leadership(tp, state, zk_version)
        self.channel = ControllerChannelManager(self.broker_id, self.listener_name, self.socket_timeout_ms)
        for info in ctx.live_brokers.values():
            self.channel.add_broker(info)
        log.info("Controller %d: %d live brokers %s, %d topics, %d partitions", self.broker_id,
                 len(ctx.live_brokers), sorted(ctx.live_brokers), len(ctx.assignments), len(ctx.all_partitions()))
        await self._initialize_topic_deletion()
        # Elect what has no live leader (and drop dead brokers from ISRs), then tell every live broker everything.
        batch = self._new_batch()
        in_isr = {r for leadership in ctx.leaderships.values() for r in leadership.state.isr}
        await self._elect_partitions(self._partitions_to_elect(in_isr - ctx.live_broker_ids), batch)
        for tp in ctx.partitions_with_leaders():
            if not ctx.is_topic_queued_for_deletion(tp[0]):
                batch.add_leader_and_isr(self._live_replicas(tp), tp)
        batch.add_update_metadata(ctx.live_broker_ids, ctx.partitions_with_leaders())
        batch.send(ctx.epoch)
        await self._resume_topic_deletions(retry_failed=True)

    async def _on_controller_resignation(self) -> None:
        self._active = False
        for unwatch in self._watches:
            unwatch()
        self._watches.clear()
        if self.channel is not None:
            channel, self.channel = self.channel, None
            await channel.shutdown()
        self._deletions.clear()
        self.context.reset()

    # --- brokers ---------------------------------------------------------------------------------------
    async def _process_broker_change(self) -> None:
        ctx = self.context
        assert self.channel is not None
        current = await self._zk(self.zk.get_all_brokers_with_epochs)
        known = ctx.live_broker_ids
        new = sorted(set(current) - known)
        dead = sorted(known - set(current))
        bounced = sorted(b for b in set(current) & known if current[b][1] > ctx.broker_epoch(b))
        log.info("Controller %d: broker change: new %s, dead %s, bounced %s", self.broker_id, new, dead, bounced)
        for broker_id in bounced + dead:
            self.channel.remove_broker(broker_id)
        for broker_id in new + bounced:
            self.channel.add_broker(current[broker_id][0])
        if new:
            for broker_id in new:
                ctx.add_live_broker(*current[broker_id])
            await self._on_broker_startup(new)
        if bounced:
            ctx.remove_live_brokers(bounced)
            await self._on_broker_failure(bounced)
            for broker_id in bounced:
                ctx.add_live_broker(*current[broker_id])
            await self._on_broker_startup(bounced)
        if dead:
            ctx.remove_live_brokers(dead)
            await self._on_broker_failure(dead)

    async def _on_broker_startup(self, new_brokers: list[int]) -> None:
        ctx = self.context
        existing = ctx.live_broker_ids - set(new_brokers)
        # the others learn about the new brokers; the new ones get every partition's state
        batch = self._new_batch()
        batch.add_update_metadata(existing)
        batch.send(ctx.epoch)
        batch.add_update_metadata(new_brokers, ctx.partitions_with_leaders())
        batch.send(ctx.epoch)
        # their replicas come online (LeaderAndIsr to them), then whatever lacks a leader is elected
        for tp in ctx.partitions_on_brokers(new_brokers):
            if not ctx.is_topic_queued_for_deletion(tp[0]):
                batch.add_leader_and_isr([b for b in ctx.replicas(tp) if b in new_brokers], tp)
        await self._elect_partitions(self._partitions_to_elect(()), batch)
        batch.send(ctx.epoch)
        await self._resume_topic_deletions(retry_failed=True)

    async def _on_broker_failure(self, dead_brokers: list[int]) -> None:
        ctx = self.context
        batch = self._new_batch()
        await self._elect_partitions(self._partitions_to_elect(dead_brokers), batch)
        batch.add_update_metadata(ctx.live_broker_ids)  # at least the new list of live brokers
        batch.send(ctx.epoch)
        for replicas in self._deletions.values():  # their StopReplica will never be answered: send again later
            for key, state in replicas.items():
                if key[1] in dead_brokers and state == DELETION_STARTED:
                    replicas[key] = DELETION_PENDING

    def _partitions_to_elect(self, dead_brokers: Iterable[int]) -> list[TopicPartition]:
        """New partitions, partitions without a live leader, and those with a dead broker in their ISR
        (Kafka's triggerOnlinePartitionStateChange plus the OfflineReplica transitions); never those
        of topics being deleted."""
        ctx = self.context
        partitions = set(ctx.partitions_needing_election())
        partitions.update(tp for tp in ctx.partitions_with_replicas_in_isr_of(dead_brokers)
                          if not ctx.is_topic_queued_for_deletion(tp[0]))
        return sorted(partitions)

    def _live_replicas(self, tp: TopicPartition) -> list[int]:
        return [r for r in self.context.replicas(tp) if self.context.is_replica_online(r, tp)]

    # --- partition leadership --------------------------------------------------------------------------
    async def _elect_partitions(self, partitions: Iterable[TopicPartition],
                                batch: ControllerBrokerRequestBatch) -> None:
        """Bring new partitions (no state znode yet) and offline ones (leader not live) online where a
        replica can lead, and drop dead brokers from ISRs (``state_after_broker_failure``: leader -1
        when nobody is eligible); LeaderAndIsr for the ones that changed goes into ``batch``."""
        ctx = self.context
        new: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        existing = []
        for tp in partitions:
            if ctx.leadership(tp) is not None:
                existing.append(tp)
                continue
            state = initial_state(ctx.replicas(tp), ctx.live_broker_ids, ctx.epoch)
            if state is None:
                log.warning("Controller %d: cannot bring %s-%d online: all its replicas %s are dead",
                            self.broker_id, *tp, ctx.replicas(tp))
            else:
                new[tp] = state
        for tp in await self._update_states(existing, self._state_after_failure):
            batch.add_leader_and_isr(self._live_replicas(tp), tp)
        offline = [tp for tp in existing if not ctx.is_replica_online(ctx.leadership(tp).state.leader, tp)]
        if offline:
            log.warning("Controller %d: %d partitions stay offline, no eligible leader (live brokers %s): %s",
                        self.broker_id, len(offline), sorted(ctx.live_broker_ids), offline[:20])
        if new:
            await self._create_states(new, batch)

    def _state_after_failure(self, tp: TopicPartition,
                             state: LeaderIsrAndControllerEpoch) -> LeaderIsrAndControllerEpoch | None:
        return state_after_broker_failure(state, self.context.replicas(tp), self.context.live_broker_ids,
                                          self.unclean_leader_election, self.context.epoch)

    async def _create_states(self, states: dict[TopicPartition, LeaderIsrAndControllerEpoch],
                             batch: ControllerBrokerRequestBatch) -> None:
        ctx = self.context
        created = await self._zk(self.zk.create_partition_states, states, ctx.epoch_zk_version)
        existing = [tp for tp, ok in created.items() if not ok]
        for tp, ok in created.items():
            if ok:
                ctx.put_leadership(tp, states[tp], 0)
                batch.add_leader_and_isr(self._live_replicas(tp), tp, is_new=True)
        if existing:  # written meanwhile by someone else: take what is there
            log.warning("Controller %d: partition states already existed for %s", self.broker_id, existing)
            for tp, (state, zk_version) in (await self._zk(self.zk.get_partition_states, existing)).items():
                ctx.put_leadership(tp, state, zk_version)
                batch.add_leader_and_isr(self._live_replicas(tp), tp)

    async def _update_states(self, partitions: Iterable[TopicPartition], change: StateChange) -> list[TopicPartition]:
        """Write ``change(tp, current state)`` for each partition, conditionally on the znode versions and in
        one pipelined round (Kafka's updateLeaderAndIsr); partitions whose znode moved meanwhile are re-read
        and changed again. Returns the partitions written. ControllerMovedError when /controller_epoch
        moved or a znode was written by a newer controller."""
        ctx = self.context
        remaining, written = list(partitions), []
        for _ in range(MAX_STATE_WRITE_ATTEMPTS):
            updates = {}
            for tp in remaining:
                leadership = ctx.leadership(tp)
                new_state = None if leadership is None else change(tp, leadership.state)
                if new_state is not None:
                    updates[tp] = (new_state, leadership.zk_version)
            if not updates:
                return written
            versions = await self._zk(self.zk.update_partition_states, updates, ctx.epoch_zk_version)
            conflicts = []
            for tp, zk_version in versions.items():
                if zk_version is None:
                    conflicts.append(tp)
                    continue
                state = updates[tp][0]
                ctx.put_leadership(tp, state, zk_version)
                written.append(tp)
                state_change_log.info("Controller %d epoch %d changed %s-%d to leader %d, leader epoch %d, isr %s",
                                      self.broker_id, ctx.epoch, *tp, state.leader, state.leader_epoch, state.isr)
            if not conflicts:
                return written
            found = await self._zk(self.zk.get_partition_states, conflicts)
            remaining = []
            for tp in conflicts:
                if tp not in found:
                    continue  # the topic is gone
                state, zk_version = found[tp]
                if state.controller_epoch > ctx.epoch:
                    raise ControllerMovedError(f"{tp[0]}-{tp[1]} was written by controller epoch "
                                               f"{state.controller_epoch}")
                ctx.put_leadership(tp, state, zk_version)
                remaining.append(tp)
        log.error("Controller %d: gave up writing the states of %s after %d version conflicts",
                  self.broker_id, remaining, MAX_STATE_WRITE_ATTEMPTS)
        return written

    # --- topics ----------------------------------------------------------------------------------------
    async def _add_topics(self, assignments: dict[str, tuple[TopicAssignment, int]]) -> None:
        """Put topics in the context, giving a topic id to topics created without one (Kafka 2.8 does)."""
        for topic, (assignment, zk_version) in sorted(assignments.items()):
            if assignment.topic_id is None:
                with_id = TopicAssignment(assignment.partitions, uuid.uuid4(), assignment.adding_replicas,
                                          assignment.removing_replicas)
                if await self._zk(self.zk.set_topic_assignment, topic, with_id, zk_version,
                                  self.context.epoch_zk_version) is not None:
                    assignment = with_id
            self.context.add_topic(topic, assignment)

    async def _process_topic_change(self) -> None:
        ctx = self.context
        topics = set(await self._zk(self.zk.get_all_topics))
        new, gone = topics - ctx.all_topics, ctx.all_topics - topics
        for topic in gone:
            ctx.remove_topic(topic)
            self._deletions.pop(topic, None)
        if not new:
            return
        await self._add_topics(await self._zk(self.zk.get_topic_assignments_with_versions, sorted(new)))
        partitions = [tp for topic in sorted(new) for tp in ctx.partitions_for_topic(topic)]
        log.info("Controller %d: new topics %s, %d partitions", self.broker_id, sorted(new), len(partitions))
        batch = self._new_batch()
        await self._elect_partitions(partitions, batch)
        batch.send(ctx.epoch)

    # --- topic deletion --------------------------------------------------------------------------------
    async def _initialize_topic_deletion(self) -> None:
        marked = set(await self._zk(self.zk.get_topics_marked_for_deletion))
        await self._queue_deletions(marked)

    async def _process_topic_deletion(self) -> None:
        marked = set(await self._zk(self.zk.get_topics_marked_for_deletion))
        if await self._queue_deletions(marked):
            await self._resume_topic_deletions(retry_failed=True)

    async def _queue_deletions(self, marked: set[str]) -> bool:
        """Queue marked topics for deletion (or drop the markers); True if some topic is queued."""
        ctx = self.context
        unknown = marked - ctx.all_topics
        if unknown or (marked and not self.delete_topic_enable):
            drop = marked if not self.delete_topic_enable else unknown
            log.info("Controller %d: removing deletion markers of %s (%s)", self.broker_id, sorted(drop),
                     "topic deletion is disabled" if not self.delete_topic_enable else "no such topic")
            await self._zk(self.zk.delete_topic_deletion_markers, sorted(drop), ctx.epoch_zk_version)
            if not self.delete_topic_enable:
                return False
        fresh = sorted((marked & ctx.all_topics) - ctx.topics_to_be_deleted)
        if fresh:
            log.info("Controller %d: deleting topics %s", self.broker_id, fresh)
            ctx.queue_topic_deletion(fresh)
            batch = self._new_batch()
            for topic in fresh:
                self._deletions[topic] = {(tp, r): DELETION_PENDING for tp in ctx.partitions_for_topic(topic)
                                          for r in ctx.replicas(tp)}
                # every broker drops the topic from its metadata (leader -2) before replicas are deleted
                batch.add_update_metadata(ctx.live_broker_ids, ctx.partitions_for_topic(topic))
            batch.send(ctx.epoch)
        return bool(ctx.topics_to_be_deleted)

    async def _resume_topic_deletions(self, retry_failed: bool) -> None:
        """StopReplica(delete) to the live replicas still to delete; finish topics whose replicas are all gone."""
        ctx = self.context
        batch = self._new_batch()
        for topic in sorted(ctx.topics_to_be_deleted):
            replicas = self._deletions.setdefault(topic, {})
            if all(state == DELETION_DONE for state in replicas.values()):
                await self._complete_topic_deletion(topic)
                continue
            retry = (DELETION_PENDING, DELETION_FAILED) if retry_failed else (DELETION_PENDING,)
            for (tp, replica), state in sorted(replicas.items()):
                if state in retry and ctx.is_replica_online(replica, tp):
                    batch.add_stop_replica([replica], tp, delete=True)
                    replicas[(tp, replica)] = DELETION_STARTED
        batch.send(ctx.epoch)

    async def _process_stop_replica_response(self, event: StopReplicaResponseReceived) -> None:
        for topic, partition, code in event.partition_errors:
            replicas = self._deletions.get(topic)
            key = ((topic, partition), event.broker_id)
            if replicas is None or replicas.get(key) != DELETION_STARTED:
                continue
            failed = code != 0 or event.error_code != 0
            replicas[key] = DELETION_FAILED if failed else DELETION_DONE
            if failed:
                log.warning("Controller %d: broker %d failed to delete %s-%d (error %d/%d); retried later",
                            self.broker_id, event.broker_id, topic, partition, event.error_code, code)
        if event.error_code != 0 and not event.partition_errors:
            for replicas in self._deletions.values():
                for key, state in replicas.items():
                    if key[1] == event.broker_id and state == DELETION_STARTED:
                        replicas[key] = DELETION_FAILED
        await self._resume_topic_deletions(retry_failed=False)

    async def _complete_topic_deletion(self, topic: str) -> None:
        await self._zk(self.zk.delete_topic_znodes, topic, self.context.epoch_zk_version)
        self.context.remove_topic(topic)
        self._deletions.pop(topic, None)
        log.info("Controller %d: deletion of topic %s completed", self.broker_id, topic)

    # --- responses -------------------------------------------------------------------------------------
    def _on_broker_response(self, broker_id: int, api_key: int, response: Any) -> None:
        """Called on the event loop by a broker's sender: StopReplica becomes an event, errors are logged."""
        if api_key == ApiKey.STOP_REPLICA:
            errors = tuple((e.topic_name, e.partition_index, e.error_code) for e in response.partition_errors)
            self.event_manager.put(StopReplicaResponseReceived(broker_id, errors, response.error_code))
            return
        errors = [(None, None, response.error_code)] if response.error_code else []
        if api_key == ApiKey.LEADER_AND_ISR:
            partition_errors = list(response.partition_errors or [])
            partition_errors += [e for t in (response.topics or []) for e in t.partition_errors]
            errors += [(e.topic_name, e.partition_index, e.error_code) for e in partition_errors if e.error_code]
        if errors:  # full handling (offline log dirs, stale epochs) comes with issue 4
            log.warning("Controller %d: broker %d answered api key %d with errors %s", self.broker_id, broker_id,
                        api_key, errors)
