"""KafkaController: the ZooKeeper-mode controller that every broker runs (Kafka 2.8's KafkaController, minimal).

Every broker watches /controller; when it is absent, each tries to create it (with /controller_epoch
bumped in the same transaction) and the winner is the controller until its session ends. The
controller watches /brokers/ids, /brokers/topics (and each topic's assignment, for new partitions),
/admin/delete_topics, /admin/preferred_replica_election, /admin/reassign_partitions and
/isr_change_notification, keeps a ControllerContext, and moves replicas and partitions through Kafka's replica and partition
state machines: they elect leaders, write the partition state znodes (conditionally on the znode
version and on /controller_epoch's version, so a deposed controller's writes fail) and tell the
brokers with LeaderAndIsr, UpdateMetadata and StopReplica. It also answers ControlledShutdown and
AlterIsr (``alter_isr``).

Everything happens as events on one queue processed by one task (ControllerEventManager); ZooKeeper
watch callbacks only enqueue. ZooKeeper calls block, so they run on one dedicated executor thread
and the event task awaits them. Partition reassignment (``reassignment``), ElectLeaders
(``election_requests``) and the automatic leader rebalance (``auto_rebalance``) live in their own
modules; admin APIs reach them through ``ApiCall`` events.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ..protocol.api_keys import ApiKey
from ..protocol.errors import (BrokerNotAvailableError, KafkaError, KafkaStorageError,  # type: ignore[attr-defined]
                               NotControllerError, StaleBrokerEpochError, StaleControllerEpochError)
from .channel_manager import ControllerBrokerRequestBatch, ControllerChannelManager, inter_broker_connect
from .controller_context import ControllerContext, ReplicaAssignment, TopicPartition
from .alter_isr import IsrAlterations, IsrRequest, IsrResult
from .auto_rebalance import AutoLeaderRebalancer
from .election_requests import LeaderElectionRequests
from .event_manager import (ApiCall, AutoPreferredReplicaLeaderElection, BrokerChange, ControlledShutdown,
                            ControllerChange, ControllerEvent, ControllerEventManager, IsrChangeNotification,
                            LeaderAndIsrResponseReceived, LogDirEventNotification,
                            PartitionModifications, PartitionReassignment, PartitionReassignmentIsrChange,
                            PreferredReplicaElection, Reelect, Startup, StopReplicaResponseReceived, TopicChange,
                            TopicDeletion)
from .leader_and_isr_writer import LeaderAndIsrWriter
from .partition_modifications import PartitionModificationsWatcher
from .partition_state_machine import CONTROLLED_SHUTDOWN_ELECTION, PartitionState, PartitionStateMachine
from .preferred_election import ElectionResult, PreferredReplicaElector
from .reassignment import PartitionReassigner, Targets
from .replica_state_machine import ReplicaState, ReplicaStateMachine
from .state_change_log import prefix, state_change_log
from .topic_deletion_manager import TopicDeletionManager
from .zk_client import ControllerMovedError, KafkaZkClient, ZkConnectionError, ZkError
from .zk_data import (BrokerIdsZNode, DeleteTopicsZNode, IsrChangeNotificationZNode, LogDirEventNotificationZNode,
                      PreferredReplicaElectionZNode, ReassignPartitionsZNode, TopicAssignment, TopicsZNode)

log = logging.getLogger(__name__)

ZK_RETRY_BACKOFF_S = 1.0


class KafkaController:
    def __init__(self, config: Any, zk: KafkaZkClient, broker_id: int,
                 broker_epoch_provider: Callable[[], int] | None = None) -> None:
        self.config = config
        self.zk = zk
        self.broker_id = broker_id
        # Our own broker epoch (the broker re-registers after a session expiry). The context's epochs of
        # every broker come from ZooKeeper.
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
        self.writer = LeaderAndIsrWriter(self.context, zk, self._zk, broker_id)
        self.replica_state_machine = ReplicaStateMachine(self.context, self.writer, broker_id)
        self.partition_state_machine = PartitionStateMachine(self.context, self.writer, broker_id,
                                                             self.unclean_leader_election)
        self.topic_deletion = TopicDeletionManager(self.context, self.replica_state_machine,
                                                   self.partition_state_machine, zk, self._zk, broker_id,
                                                   self.delete_topic_enable, self._new_batch)
        self.partition_modifications = PartitionModificationsWatcher(self.context, zk, self._zk, broker_id,
                                                                     self.event_manager.put_threadsafe,
                                                                     self._on_new_partitions)
        self.preferred_election = PreferredReplicaElector(self.context, self.partition_state_machine, zk, self._zk,
                                                          broker_id, self._new_batch)
        self.reassignment = PartitionReassigner(self.context, self.replica_state_machine, self.partition_state_machine,
                                                self.writer, zk, self._zk, broker_id, self._new_batch,
                                                self.event_manager.put_threadsafe)
        self.election_requests = LeaderElectionRequests(self.context, self.partition_state_machine,
                                                        self.preferred_election, broker_id, self._new_batch)
        self.isr_alterations = IsrAlterations(self.context, zk, self._zk, broker_id, self._new_batch,
                                              lambda tp: self.event_manager.put(PartitionReassignmentIsrChange(*tp)))
        self.auto_rebalance = AutoLeaderRebalancer(config, self.context, self.preferred_election, broker_id,
                                                   self.event_manager.put)
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

    # --- admin APIs (the broker's handlers call these on the controller broker) ---------------------------
    async def elect_leaders(self, election_type: int, partitions: list[TopicPartition] | None
                            ) -> dict[TopicPartition, ElectionResult]:
        """ElectLeaders: per partition the new leader or the error (None: every partition)."""
        return await self._api_call("ElectLeaders", lambda: self.election_requests.elect(election_type, partitions))

    async def alter_partition_reassignments(self, targets: Targets) -> dict[TopicPartition, Any]:
        """AlterPartitionReassignments: partition -> target replicas (None cancels); per partition None or error."""
        return await self._api_call("AlterPartitionReassignments", lambda: self.reassignment.alter(targets))

    async def list_partition_reassignments(self, partitions: list[TopicPartition] | None
                                           ) -> dict[TopicPartition, ReplicaAssignment]:
        async def listing() -> dict[TopicPartition, ReplicaAssignment]:
            return self.reassignment.list(partitions)
        return await self._api_call("ListPartitionReassignments", listing)

    async def alter_isr(self, broker_id: int, broker_epoch: int, requests: dict[TopicPartition, IsrRequest]
                        ) -> dict[TopicPartition, IsrResult]:
        """AlterIsr (KIP-497): a leader's new ISRs written to ZooKeeper (``alter_isr.py``)."""
        return await self._api_call("AlterIsr", lambda: self.isr_alterations.alter(broker_id, broker_epoch, requests))

    async def _api_call(self, name: str, action: Callable[[], Any]) -> Any:
        """Run ``action`` on the event task; NotControllerError unless (and until) this broker is controller."""
        if not self.is_active:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        result: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.event_manager.put(ApiCall(name, action, result))
        return await result

    # --- plumbing --------------------------------------------------------------------------------------
    async def _zk(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a blocking ZooKeeper call on the controller's ZooKeeper thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._zk_executor, functools.partial(method, *args, **kwargs))

    def _enqueue_from_watch(self, event: ControllerEvent) -> Callable[..., None]:
        """A watch callback (kazoo's thread) that only hands ``event`` to the event loop."""
        return lambda *_: self.event_manager.put_threadsafe(event)

    def _enqueue_if_present(self, event: ControllerEvent) -> Callable[[bytes | None, int | None], None]:
        """A data watch callback (kazoo's thread) that hands ``event`` over when the znode exists: the
        controller's own deletion of an admin request is no event."""
        def fire(data: bytes | None, version: int | None) -> None:
            if version is not None:
                self.event_manager.put_threadsafe(event)
        return fire

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
            elif isinstance(event, (ControlledShutdown, ApiCall)) and not self.is_active:
                _fail(event.result, NotControllerError(f"broker {self.broker_id} is not the controller"))
            elif isinstance(event, ControllerChange):
                await self._maybe_resign()
            elif isinstance(event, Reelect):
                await self._maybe_resign()
                await self._elect()
            elif not self.is_active:
                return  # a watch or response of an earlier tenure: only the active controller acts
            elif self.zk.session_id != self._controller_session:
                if isinstance(event, (ControlledShutdown, ApiCall)):
                    _fail(event.result, NotControllerError("the controller's ZooKeeper session ended"))
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
                await self.topic_deletion.on_stop_replica_response(event.broker_id, event.partition_errors,
                                                                   event.error_code)
            elif isinstance(event, IsrChangeNotification):
                await self._process_isr_change_notification()
            elif isinstance(event, LogDirEventNotification):
                await self._process_log_dir_event_notification()
            elif isinstance(event, LeaderAndIsrResponseReceived):
                await self._process_leader_and_isr_response(event)
            elif isinstance(event, ControlledShutdown):
                await self._process_controlled_shutdown(event)
            elif isinstance(event, PartitionModifications):
                await self.partition_modifications.process(event.topic)
            elif isinstance(event, PreferredReplicaElection):
                await self.preferred_election.process_znode()
            elif isinstance(event, PartitionReassignment):
                await self.reassignment.process_zk_request()
            elif isinstance(event, PartitionReassignmentIsrChange):
                await self.reassignment.maybe_complete((event.topic, event.partition))
            elif isinstance(event, AutoPreferredReplicaLeaderElection):
                await self.auto_rebalance.check_and_trigger()
            elif isinstance(event, ApiCall):
                await self._process_api_call(event)
        except ControllerMovedError as e:
            log.info("Controller %d: controller moved to another broker while processing %r (%s); resigning",
                     self.broker_id, event, e)
            if isinstance(event, (ControlledShutdown, ApiCall)):
                _fail(event.result, NotControllerError(str(e)))
            await self._maybe_resign()
        except ZkConnectionError as e:
            log.warning("Controller %d: ZooKeeper unavailable while processing %r (%s); retrying", self.broker_id,
                        event, e)
            await self._retry_later(event)

    async def _process_api_call(self, event: ApiCall) -> None:
        try:
            value = await event.action()
        except (ControllerMovedError, ZkConnectionError):
            raise  # NOT_CONTROLLER after resigning, or the call runs again once ZooKeeper answers
        except KafkaError as e:  # the caller's error code (bad input, a topic that is gone, ...)
            log.info("Controller %d: %s failed: %s", self.broker_id, event.name, e)
            _fail(event.result, e)
            return
        except Exception as e:
            log.exception("Controller %d: %s failed", self.broker_id, event.name)
            _fail(event.result, e)
            return
        if not event.result.done():
            event.result.set_result(value)

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
                            (DeleteTopicsZNode.path, TopicDeletion()),
                            (IsrChangeNotificationZNode.path, IsrChangeNotification()),
                            (LogDirEventNotificationZNode.path, LogDirEventNotification())):
            self._watches.append(await self._zk(self.zk.watch_children, path, self._enqueue_from_watch(event)))
        for path, event in ((PreferredReplicaElectionZNode.path, PreferredReplicaElection()),
                            (ReassignPartitionsZNode.path, PartitionReassignment())):
            self._watches.append(await self._zk(self.zk.watch_data, path, self._enqueue_if_present(event)))
        for broker_id, (info, broker_epoch) in (await self._zk(self.zk.get_all_brokers_with_epochs)).items():
            ctx.add_live_broker(info, broker_epoch)
        assignments = await self._zk(self.zk.get_topic_assignments_with_versions)
        await self._add_topics(assignments)
        await self.partition_modifications.watch({t: version for t, (_, version) in assignments.items()})
        states = await self._zk(self.zk.get_partition_states, ctx.all_partitions())
        for tp, (state, zk_version) in states.items():
            ctx.put_leadership(tp, state, zk_version)
        self.channel = ControllerChannelManager(self.broker_id, self.listener_name, self.socket_timeout_ms,
                                                connect=inter_broker_connect(self.config))
        for info in ctx.live_brokers.values():
            self.channel.add_broker(info)
        log.info("Controller %d: %d live brokers %s, %d topics, %d partitions", self.broker_id,
                 len(ctx.live_brokers), sorted(ctx.live_brokers), len(ctx.assignments), len(ctx.all_partitions()))
        await self.topic_deletion.process_markers(set(await self._zk(self.zk.get_topics_marked_for_deletion)))
        # ISR changes noted before we became controller are in the states read above: drop the notifications
        await self._zk(self.zk.delete_isr_change_notifications)
        # offline log dirs show in the brokers' answers to the LeaderAndIsr sent below (as Kafka's failover)
        await self._zk(self.zk.delete_log_dir_event_notifications)
        self.replica_state_machine.initialize()
        self.partition_state_machine.initialize()
        # Every live broker learns the live brokers, then every live replica its partition's state
        # (Kafka's replicaStateMachine.startup); offline partitions are elected, and dead replicas leave
        # the ISRs (the election first, so that a dead leader's partition is written once).
        batch = self._new_batch()
        batch.add_update_metadata(ctx.live_broker_ids)
        batch.send(ctx.epoch)
        live_replicas = [r for r in self.replica_state_machine.replicas_in_state(ReplicaState.ONLINE)
                         if not ctx.is_topic_queued_for_deletion(r[0][0])]
        await self.replica_state_machine.handle_state_changes(live_replicas, ReplicaState.ONLINE, batch)
        await self.partition_state_machine.trigger_online_partition_state_change(batch)
        dead_replicas = [r for r in self.replica_state_machine.replicas_in_state(ReplicaState.DELETION_INELIGIBLE)
                         if not ctx.is_topic_queued_for_deletion(r[0][0])]
        await self.replica_state_machine.handle_state_changes(dead_replicas, ReplicaState.OFFLINE, batch)
        batch.add_update_metadata(ctx.live_broker_ids, ctx.partitions_with_leaders())
        batch.send(ctx.epoch)
        await self.topic_deletion.resume(retry_failed=True)
        # reassignments in progress or asked meanwhile (Kafka's initializePartitionReassignments)
        await self.reassignment.resume_at_failover()
        # a preferred replica election asked before this failover (Kafka's fetchPendingPreferredReplicaElections)
        await self.preferred_election.process_znode(trigger="ZkTriggered on failover")
        self.auto_rebalance.start()

    async def _on_controller_resignation(self) -> None:
        self._active = False
        for unwatch in self._watches:
            unwatch()
        self._watches.clear()
        self.partition_modifications.unwatch_all()
        self.reassignment.unwatch_all()
        self.auto_rebalance.stop()
        if self.channel is not None:
            channel, self.channel = self.channel, None
            await channel.shutdown()
        self.context.reset()
        self.replica_state_machine.states.clear()
        self.partition_state_machine.states.clear()

    # --- brokers ---------------------------------------------------------------------------------------
    async def _process_broker_change(self) -> None:
        ctx = self.context
        assert self.channel is not None
        current = await self._zk(self.zk.get_all_brokers_with_epochs)
        known = ctx.live_broker_ids
        new = sorted(set(current) - known)
        dead = sorted(known - set(current))
        # a broker registered again with a new broker epoch (its session expired): it restarted, in Kafka's
        # words "bounced", and goes through failure then startup
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
        """Kafka's onBrokerStartup: UpdateMetadata to everyone, the new brokers' replicas OnlineReplica (they
        get LeaderAndIsr), then every New or Offline partition is elected and deletions resume."""
        ctx = self.context
        existing = ctx.live_broker_ids - set(new_brokers)
        batch = self._new_batch()
        batch.add_update_metadata(existing)
        batch.send(ctx.epoch)
        batch.add_update_metadata(new_brokers, ctx.partitions_with_leaders())
        batch.send(ctx.epoch)
        replicas = [(tp, b) for tp in ctx.partitions_on_brokers(new_brokers) for b in ctx.replicas(tp)
                    if b in new_brokers and not ctx.is_topic_queued_for_deletion(tp[0])]
        await self.replica_state_machine.handle_state_changes(replicas, ReplicaState.ONLINE, batch)
        await self.partition_state_machine.trigger_online_partition_state_change(batch)
        batch.send(ctx.epoch)
        await self.reassignment.on_broker_startup(new_brokers)
        await self.topic_deletion.resume(retry_failed=True)

    async def _on_broker_failure(self, dead_brokers: list[int]) -> None:
        """Kafka's onReplicasBecomeOffline: partitions led by the dead brokers go offline and are elected
        again, then the dead replicas go OfflineReplica (leaving the ISRs); deletions of their replicas wait."""
        ctx = self.context
        dead = set(dead_brokers)
        batch = self._new_batch()
        replicas = [(tp, b) for tp in ctx.partitions_on_brokers(dead) for b in ctx.replicas(tp) if b in dead]
        await self._replicas_go_offline(replicas, batch)
        self.topic_deletion.fail_replicas_of_dead_brokers(dead_brokers)
        offline = self.partition_state_machine.partitions_in_state(PartitionState.OFFLINE)
        if offline:
            log.warning("Controller %d: %d partitions stay offline, no eligible leader (live brokers %s): %s",
                        self.broker_id, len(offline), sorted(ctx.live_broker_ids), offline[:20])
        batch.add_update_metadata(ctx.live_broker_ids)  # at least the new list of live brokers
        batch.send(ctx.epoch)

    async def _replicas_go_offline(self, replicas: list[tuple[TopicPartition, int]],
                                   batch: ControllerBrokerRequestBatch) -> None:
        """The heart of Kafka's onReplicasBecomeOffline: partitions these replicas lead go offline and are
        elected again, then the replicas go OfflineReplica (leaving the ISRs). Topics being deleted wait."""
        ctx = self.context
        replicas = [(tp, b) for tp, b in replicas if not ctx.is_topic_queued_for_deletion(tp[0])]
        led = sorted({tp for tp, b in replicas if (leadership := ctx.leadership(tp)) is not None
                      and leadership.state.leader == b})
        await self.partition_state_machine.handle_state_changes(led, PartitionState.OFFLINE, batch)
        await self.partition_state_machine.trigger_online_partition_state_change(batch)
        await self.replica_state_machine.handle_state_changes(replicas, ReplicaState.OFFLINE, batch)

    # --- log directory failures (KIP-112) --------------------------------------------------------------
    async def _process_log_dir_event_notification(self) -> None:
        """Kafka's LogDirEventNotification: every replica of the brokers named goes OnlineReplica again, which
        sends them LeaderAndIsr; the replicas they answer KAFKA_STORAGE_ERROR for go offline (below). The
        notifications are deleted whatever happens (a Kafka 2.8 broker writes the same znodes)."""
        ctx = self.context
        notifications = await self._zk(self.zk.get_log_dir_event_notifications)
        if not notifications:
            return
        try:
            brokers = sorted({b for b in notifications.values() if b is not None and b in ctx.live_broker_ids})
            state_change_log.info("%s log dir event notifications %s: brokers %s", self._prefix(),
                                  sorted(notifications), brokers)
            if brokers:
                replicas = [(tp, b) for tp in ctx.partitions_on_brokers(brokers) for b in ctx.replicas(tp)
                            if b in brokers and not ctx.is_topic_queued_for_deletion(tp[0])]
                batch = self._new_batch()
                await self.replica_state_machine.handle_state_changes(replicas, ReplicaState.ONLINE, batch)
                batch.send(ctx.epoch)
        finally:
            await self._zk(self.zk.delete_log_dir_event_notifications, sorted(notifications))

    async def _process_leader_and_isr_response(self, event: LeaderAndIsrResponseReceived) -> None:
        """Kafka's LeaderAndIsrResponseReceived: the broker's replicas on offline dirs are what it answered
        KAFKA_STORAGE_ERROR for; those newly offline go through onReplicasBecomeOffline."""
        ctx = self.context
        broker_id = event.broker_id
        if broker_id not in ctx.live_broker_ids:
            return
        offline = {(t, p) for t, p, code in event.partition_errors if code == KafkaStorageError.code}
        online = {(t, p) for t, p, code in event.partition_errors if code == 0}
        previous = ctx.replicas_on_offline_dirs.get(broker_id, set())
        current = (previous - online) | offline
        if current:
            ctx.replicas_on_offline_dirs[broker_id] = current
        else:
            ctx.replicas_on_offline_dirs.pop(broker_id, None)
        new_offline = sorted(current - previous)
        if not new_offline:
            return
        state_change_log.info("%s Mark replicas %s on broker %d as offline", self._prefix(),
                              ",".join(f"{t}-{p}" for t, p in new_offline[:50]), broker_id)
        batch = self._new_batch()
        await self._replicas_go_offline([(tp, broker_id) for tp in new_offline if tp[0] in ctx.assignments], batch)
        batch.add_update_metadata(ctx.live_broker_ids)
        batch.send(ctx.epoch)

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
        self.partition_modifications.unwatch(gone)
        for topic in gone:
            ctx.remove_topic(topic)
            self.replica_state_machine.forget_topic(topic)
            self.partition_state_machine.forget_topic(topic)
        if not new:
            return
        assignments = await self._zk(self.zk.get_topic_assignments_with_versions, sorted(new))
        await self._add_topics(assignments)
        await self.partition_modifications.watch({t: version for t, (_, version) in assignments.items()})
        partitions = [tp for topic in sorted(new) for tp in ctx.partitions_for_topic(topic)]
        log.info("Controller %d: new topics %s, %d partitions", self.broker_id, sorted(new), len(partitions))
        await self._on_new_partitions(partitions)

    async def _on_new_partitions(self, partitions: list[TopicPartition]) -> None:
        """Kafka's onNewPartitionCreation: New partitions and replicas, then the first election, then online."""
        ctx = self.context
        replicas = [(tp, b) for tp in partitions for b in ctx.replicas(tp)]
        batch = self._new_batch()
        await self.partition_state_machine.handle_state_changes(partitions, PartitionState.NEW, batch)
        await self.replica_state_machine.handle_state_changes(replicas, ReplicaState.NEW, batch)
        await self.partition_state_machine.handle_state_changes(partitions, PartitionState.ONLINE, batch)
        await self.replica_state_machine.handle_state_changes(replicas, ReplicaState.ONLINE, batch)
        batch.send(ctx.epoch)

    async def _process_topic_deletion(self) -> None:
        marked = set(await self._zk(self.zk.get_topics_marked_for_deletion))
        if await self.topic_deletion.process_markers(marked):
            await self.topic_deletion.resume(retry_failed=True)

    # --- ISR change notifications ----------------------------------------------------------------------
    async def _process_isr_change_notification(self) -> None:
        """Leaders changed ISRs in ZooKeeper: read the partitions' states, tell every live broker, then
        delete the notifications read (Kafka's IsrChangeNotification, whatever happens in between)."""
        ctx = self.context
        notifications = await self._zk(self.zk.get_isr_change_notifications)
        if not notifications:
            return
        try:
            partitions = sorted({tp for tps in notifications.values() for tp in tps if tp[0] in ctx.assignments})
            if not partitions:
                return
            changed = []
            for tp, (state, zk_version) in (await self._zk(self.zk.get_partition_states, partitions)).items():
                leadership = ctx.leadership(tp)
                if leadership is None or zk_version >= leadership.zk_version:
                    ctx.put_leadership(tp, state, zk_version)
                    changed.append(tp)
            state_change_log.info("%s ISR change notifications %s: %d partitions, %s", self._prefix(),
                                  sorted(notifications), len(changed), changed[:20])
            batch = self._new_batch()
            batch.add_update_metadata(ctx.live_broker_ids, changed)
            batch.send(ctx.epoch)
            for tp in changed:  # Kafka 2.8 completes reassignments from these notifications too
                if tp in ctx.reassigning:
                    await self.reassignment.maybe_complete(tp)
        finally:
            await self._zk(self.zk.delete_isr_change_notifications, sorted(notifications))

    # --- controlled shutdown ---------------------------------------------------------------------------
    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> set[TopicPartition]:
        """What a ControlledShutdown request asks (on the event queue): the partitions ``broker_id`` still
        leads afterwards. NotControllerError, StaleBrokerEpochError, BrokerNotAvailableError otherwise."""
        if not self.is_active:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        result: asyncio.Future[set[TopicPartition]] = asyncio.get_running_loop().create_future()
        self.event_manager.put(ControlledShutdown(broker_id, broker_epoch, result))
        return await result

    async def _process_controlled_shutdown(self, event: ControlledShutdown) -> None:
        try:
            remaining = await self._do_controlled_shutdown(event.broker_id, event.broker_epoch)
        except Exception as e:
            _fail(event.result, e)
            if not isinstance(e, (StaleBrokerEpochError, BrokerNotAvailableError)):
                raise
            return
        if not event.result.done():
            event.result.set_result(remaining)

    async def _do_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> set[TopicPartition]:
        """Kafka's doControlledShutdown: leadership of its replicated partitions moves to another live ISR
        member (LeaderAndIsr to the replicas), its follower replicas go OfflineReplica (StopReplica
        without delete, out of the ISR); the answer is what it still leads."""
        ctx = self.context
        if broker_epoch != -1 and broker_epoch < ctx.broker_epoch(broker_id):
            raise StaleBrokerEpochError(f"broker {broker_id} asked with broker epoch {broker_epoch}, the current "
                                        f"one is {ctx.broker_epoch(broker_id)}")
        if broker_id not in ctx.live_broker_ids:
            raise BrokerNotAvailableError(f"broker {broker_id} is not live")
        ctx.shutting_down_broker_ids.add(broker_id)
        log.info("Controller %d: controlled shutdown of broker %d (shutting down: %s)", self.broker_id, broker_id,
                 sorted(ctx.shutting_down_broker_ids))
        to_act_on = [tp for tp in ctx.partitions_on_brokers([broker_id])
                     if len(ctx.replicas(tp)) > 1 and ctx.leadership(tp) is not None
                     and not ctx.is_topic_queued_for_deletion(tp[0])]
        led = [tp for tp in to_act_on if ctx.leadership(tp).state.leader == broker_id]
        followed = [tp for tp in to_act_on if ctx.leadership(tp).state.leader != broker_id]
        began = time.monotonic()
        batch = self._new_batch()
        await self.partition_state_machine.handle_state_changes(led, PartitionState.ONLINE, batch,
                                                                CONTROLLED_SHUTDOWN_ELECTION)
        # the new leaders go out before the ISR shrinks are written, as Kafka's partition state machine sends
        # its batch at the end of handleStateChanges: leadership moves in the time of the elections alone
        batch.send(ctx.epoch)
        await asyncio.sleep(0)  # the senders write those requests now, not after the ISR work below has run
        elected = time.monotonic()
        await self.replica_state_machine.handle_state_changes([(tp, broker_id) for tp in followed],
                                                              ReplicaState.OFFLINE, batch)
        offline = time.monotonic()
        batch.send(ctx.epoch)
        remaining = {tp for tp in ctx.partitions_led_by(broker_id)
                     if len(ctx.replicas(tp)) > 1 and not ctx.is_topic_queued_for_deletion(tp[0])}
        log.info("Controller %d: broker %d still leads %d partitions after its controlled shutdown: %s",
                 self.broker_id, broker_id, len(remaining), sorted(remaining)[:20])
        # where a controlled shutdown's time goes (the requests are built and sent by the brokers' senders after)
        log.info("Controller %d: controlled shutdown of broker %d took %.0f ms: %d leaders elected in %.0f ms, %d "
                 "follower replicas taken offline in %.0f ms, requests queued in %.0f ms", self.broker_id, broker_id,
                 (time.monotonic() - began) * 1000, len(led), (elected - began) * 1000, len(followed),
                 (offline - elected) * 1000, (time.monotonic() - offline) * 1000)
        return remaining

    # --- responses -------------------------------------------------------------------------------------
    def _on_broker_response(self, broker_id: int, api_key: int, response: Any) -> None:
        """Called on the event loop by a broker's sender: StopReplica becomes an event, errors are logged."""
        if api_key == ApiKey.STOP_REPLICA:
            errors = tuple((e.topic_name, e.partition_index, e.error_code) for e in response.partition_errors)
            self.event_manager.put(StopReplicaResponseReceived(broker_id, errors, response.error_code))
            return
        errors = [(None, None, response.error_code)] if response.error_code else []
        if api_key == ApiKey.LEADER_AND_ISR:
            answered = [(e.topic_name, e.partition_index, e.error_code) for e in response.partition_errors or []]
            for topic in response.topics or []:  # v5 names topics by id
                name = self.context.topic_name(topic.topic_id)
                answered += [(name, e.partition_index, e.error_code) for e in topic.partition_errors if name]
            # a partition whose leader epoch the broker already has answers STALE_CONTROLLER_EPOCH (a new
            # controller resends every state): normal, so not worth a warning (Kafka 2.8 does not log them)
            errors += [e for e in answered if e[2] and e[2] != StaleControllerEpochError.code]
            if not response.error_code and (any(e[2] == KafkaStorageError.code for e in answered)
                                            or broker_id in self.context.replicas_on_offline_dirs):
                self.event_manager.put(LeaderAndIsrResponseReceived(broker_id, tuple(answered)))
        if errors:  # other errors are only logged, as by Kafka
            log.warning("Controller %d: broker %d answered api key %d with errors %s", self.broker_id, broker_id,
                        api_key, errors)

    def _prefix(self) -> str:
        return prefix(self.broker_id, self.context.epoch)


def _fail(result: "asyncio.Future[Any]", error: BaseException) -> None:
    if not result.done():
        result.set_exception(error)
