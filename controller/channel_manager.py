"""ControllerChannelManager and ControllerBrokerRequestBatch: how the controller talks to brokers.

One connection, one send queue and one sender task per live broker (Kafka's RequestSendThread): the
sender takes the next requests (up to PIPELINED_REQUESTS of those queued), connects if needed (with
backoff), writes them at the highest version both sides speak, and hands each response to its request's
callback in order. Kafka's thread waits for each response before the next request; the broker applies
them in the same order either way (see ``_send_until_done``). A request whose connection fails is retried
on a new connection until it gets through or the broker is removed, as Kafka does; requests to one broker
therefore arrive in the order they were queued.

The batch collects, for one controller decision, at most one LeaderAndIsr, one UpdateMetadata and
one StopReplica per broker (two StopReplicas below v3, which cannot mix deleted and kept
partitions), built from the ControllerContext when sent.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable

from ..clients.connection import BrokerConnection
from ..protocol.api_keys import ApiKey
from ..protocol.messages import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from .controller_context import ControllerContext, TopicPartition
from .leader_election import EPOCH_DURING_DELETE, LEADER_DURING_DELETE, NO_EPOCH
from .state_change_log import log_items, prefix, state_change_log
from .zk_data import BrokerInfo

log = logging.getLogger(__name__)

# SecurityProtocol ids on the wire (UpdateMetadata endpoints)
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

RequestBuilder = Callable[[int], Any]                 # version -> request body (or a list of them)
ResponseCallback = Callable[[int, int, Any], None]    # (broker id, api key, response body)
Connector = Callable[..., Awaitable[BrokerConnection]]

PIPELINED_REQUESTS = 4  # requests to one broker written before the first is answered (see _send_until_done)


@dataclass
class _QueuedRequest:
    api_key: int
    build: RequestBuilder
    callback: ResponseCallback | None


class _BrokerSender:
    """The send queue and sender task of one broker (Kafka's RequestSendThread)."""

    def __init__(self, manager: "ControllerChannelManager", broker_id: int, host: str, port: int) -> None:
        self.manager = manager
        self.broker_id = broker_id
        self.host, self.port = host, port
        self.queue: asyncio.Queue[_QueuedRequest] = asyncio.Queue()
        self.conn: BrokerConnection | None = None
        self.task = asyncio.get_running_loop().create_task(
            self._run(), name=f"controller-{manager.controller_id}-to-broker-{broker_id}-send-thread")

    async def _run(self) -> None:
        try:
            while True:
                requests = [await self.queue.get()]
                while len(requests) < PIPELINED_REQUESTS and not self.queue.empty():
                    requests.append(self.queue.get_nowait())
                await self._send_until_done(requests)
        finally:
            await self._close()

    async def _send_until_done(self, requests: list[_QueuedRequest]) -> None:
        """Send ``requests`` (those queued together) one after another without waiting for each answer, and
        hand each one's responses (one per body it builds) to its callback, in order, retrying the unanswered
        ones on a new connection after a connection failure.

        Kafka's RequestSendThread waits for each answer before it sends the next. Writing the next at once
        keeps the order the broker applies them in (a broker reads a connection's next request only after
        answering the current one, Kafka's muted channel and ours), and the UpdateMetadata after a
        LeaderAndIsr no longer waits for the controller's own event loop to take in the LeaderAndIsr's answer
        (up to a second late in a controlled shutdown of 10,000 partitions, the loop busy with the ISR shrinks)."""
        backoff = self.manager.backoff_s
        answered: list[list[Any]] = [[] for _ in requests]
        first = 0  # the first request not wholly answered (and called back)
        while first < len(requests):
            sends: dict[int, list[asyncio.Task]] = {}  # request index -> its bodies' sends, in order
            try:
                conn = await self._connection()
                timings: dict[int, tuple[float, float]] = {}
                for index in range(first, len(requests)):
                    request = requests[index]
                    version = conn.version_for(request.api_key)
                    began = time.monotonic()
                    try:
                        bodies = request.build(version)
                    except Exception:  # cannot be built: retrying would not help
                        log.exception("Controller %d dropped api key %d to broker %d", self.manager.controller_id,
                                      request.api_key, self.broker_id)
                        continue
                    timings[index] = (began, time.monotonic())
                    # several requests for one item (StopReplica below v3): after a retry, only the unanswered
                    # (tasks start in the order they are made: each writes its request in its first step)
                    unanswered = (bodies if isinstance(bodies, list) else [bodies])[len(answered[index]):]
                    timeout = self.manager.timeout_s
                    sends[index] = [asyncio.ensure_future(conn.send(body, version=version, timeout=timeout))
                                    for body in unanswered]
                for index in range(first, len(requests)):
                    if index in timings:
                        for position, task in enumerate(sends[index]):
                            try:
                                answered[index].append(await task)
                            except (ConnectionError, TimeoutError, OSError):
                                raise
                            except Exception:  # cannot be encoded or decoded: retrying would not help
                                log.exception("Controller %d dropped api key %d to broker %d",
                                              self.manager.controller_id, requests[index].api_key, self.broker_id)
                                # its other bodies are written already: their answers go with it, their
                                # errors are taken (a failed connection shows again in the next await)
                                await asyncio.gather(*sends[index][position + 1:], return_exceptions=True)
                                break
                        self._answered(requests[index], answered[index], *timings[index])
                    first = index + 1
            except (ConnectionError, TimeoutError, OSError) as e:
                _discard(sends)
                log.warning("Controller %d's connection to broker %d (%s:%d) failed, retrying in %.2fs: %s",
                            self.manager.controller_id, self.broker_id, self.host, self.port, backoff, e)
                await self._close()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.manager.max_backoff_s)
            except BaseException:
                _discard(sends)
                raise

    def _answered(self, request: _QueuedRequest, responses: list[Any], began: float, built: float) -> None:
        if log.isEnabledFor(logging.DEBUG):  # the controlled-shutdown benchmark's breakdown
            log.debug("Controller %d: api key %d to broker %d built in %.0f ms, answered %.0f ms later",
                      self.manager.controller_id, request.api_key, self.broker_id, (built - began) * 1000,
                      (time.monotonic() - built) * 1000)
        if request.callback is not None:
            for response in responses:
                try:
                    request.callback(self.broker_id, request.api_key, response)
                except Exception:
                    log.exception("callback of api key %d from broker %d failed", request.api_key, self.broker_id)

    async def _connection(self) -> BrokerConnection:
        if self.conn is None or self.conn.closed:
            self.conn = await self.manager.connect(self.host, self.port, client_id=self.manager.client_id,
                                                   timeout=self.manager.timeout_s)
        return self.conn

    async def _close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                async with asyncio.timeout(1.0):  # not wait_for: DESIGN.md, "Deadlines" (it hung a shutdown)
                    await conn.close()
            except Exception:
                log.debug("closing the connection to broker %d", self.broker_id, exc_info=True)


def _discard(sends: dict[int, list[asyncio.Task]]) -> None:
    """Cancel the sends still waiting and take the errors of those that failed (their requests go again)."""
    for task in (task for tasks in sends.values() for task in tasks):
        if not task.done():
            task.cancel()
        elif not task.cancelled():
            task.exception()


def inter_broker_connect(config: Any) -> Connector:
    """``BrokerConnection.connect`` with the broker's inter-broker security (TLS, SASL with its own
    credentials), for every broker-to-broker client."""
    security_of = getattr(config, "inter_broker_client_security", None)
    security = security_of() if security_of is not None else None
    return functools.partial(BrokerConnection.connect, security=security) if security else BrokerConnection.connect


class ControllerChannelManager:
    """Connections from the controller to every live broker, through their inter-broker listener."""

    def __init__(self, controller_id: int, listener_name: str, socket_timeout_ms: int = 30000,
                 backoff_ms: int = 50, max_backoff_ms: int = 1000,
                 connect: Connector = BrokerConnection.connect) -> None:
        self.controller_id = controller_id
        self.listener_name = listener_name
        self.client_id = f"controller-{controller_id}"
        self.timeout_s = socket_timeout_ms / 1000
        self.backoff_s = backoff_ms / 1000
        self.max_backoff_s = max_backoff_ms / 1000
        self.connect = connect
        self._senders: dict[int, _BrokerSender] = {}

    def add_broker(self, info: BrokerInfo) -> None:
        """Start a sender for a broker (on the event loop); a broker without our listener is logged and skipped."""
        if info.broker_id in self._senders:
            return
        endpoint = info.endpoint(self.listener_name)
        if endpoint is None:
            log.error("Broker %d has no endpoint for listener %s: the controller cannot reach it",
                      info.broker_id, self.listener_name)
            return
        host, port = endpoint
        self._senders[info.broker_id] = _BrokerSender(self, info.broker_id, host or "localhost", port)

    def remove_broker(self, broker_id: int) -> asyncio.Task | None:
        """Stop a broker's sender: its queued requests are dropped. Returns the task being cancelled."""
        sender = self._senders.pop(broker_id, None)
        if sender is None:
            return None
        sender.task.cancel()
        return sender.task

    @property
    def broker_ids(self) -> set[int]:
        return set(self._senders)

    def queue_size(self, broker_id: int) -> int:
        sender = self._senders.get(broker_id)
        return 0 if sender is None else sender.queue.qsize()

    def send(self, broker_id: int, api_key: int, build: RequestBuilder,
             callback: ResponseCallback | None = None) -> bool:
        """Queue a request for a broker; False (and dropped) when the broker has no sender."""
        sender = self._senders.get(broker_id)
        if sender is None:
            log.warning("Not sending api key %d to broker %d: it is not live", api_key, broker_id)
            return False
        sender.queue.put_nowait(_QueuedRequest(api_key, build, callback))
        return True

    async def shutdown(self) -> None:
        tasks = [t for t in (self.remove_broker(b) for b in list(self._senders)) if t is not None]
        await asyncio.gather(*tasks, return_exceptions=True)


class ControllerBrokerRequestBatch:
    """Kafka's ControllerBrokerRequestBatch: collect per broker, then send one request of each kind."""

    def __init__(self, context: ControllerContext, channel: ControllerChannelManager, controller_id: int,
                 on_response: ResponseCallback | None = None) -> None:
        self.context = context
        self.channel = channel
        self.controller_id = controller_id
        self.on_response = on_response
        self.leader_and_isr: dict[int, dict[TopicPartition, LeaderAndIsrRequest.LeaderAndIsrPartitionState]] = {}
        self.update_metadata_brokers: set[int] = set()
        # partitions whose state goes in the UpdateMetadata, as the context has it when the batch is sent
        self.update_metadata_partitions: dict[TopicPartition, None] = {}
        self.stop_replica: dict[int, dict[TopicPartition, tuple[int, bool]]] = {}  # -> (leader epoch, delete)

    def is_empty(self) -> bool:
        return not (self.leader_and_isr or self.update_metadata_brokers or self.stop_replica)

    def clear(self) -> None:
        self.leader_and_isr.clear()
        self.update_metadata_brokers.clear()
        self.update_metadata_partitions.clear()
        self.stop_replica.clear()

    # --- collecting -----------------------------------------------------------------------------------
    def add_leader_and_isr(self, broker_ids: Iterable[int], partition: TopicPartition, is_new: bool = False) -> None:
        """LeaderAndIsr for ``partition`` (its state in the context) to the brokers, and UpdateMetadata for it
        to every live broker (Kafka pairs them the same way)."""
        leadership = self.context.leadership(partition)
        if leadership is None:
            return
        state = leadership.state
        adding, removing = self.context.reassigning.get(partition, ((), ()))  # a reassignment's AR and RR
        replicas = self.context.replicas(partition)

        def partition_state(new: bool) -> LeaderAndIsrRequest.LeaderAndIsrPartitionState:
            return LeaderAndIsrRequest.LeaderAndIsrPartitionState(
                topic_name=partition[0], partition_index=partition[1], controller_epoch=state.controller_epoch,
                leader=state.leader, leader_epoch=state.leader_epoch, isr=list(state.isr),
                partition_epoch=leadership.zk_version, replicas=list(replicas),
                adding_replicas=list(adding), removing_replicas=list(removing), is_new=new)

        shared = partition_state(is_new)  # one object for every recipient: they only read it
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            states = self.leader_and_isr.setdefault(broker_id, {})
            already_new = not is_new and partition in states and states[partition].is_new
            states[partition] = partition_state(True) if already_new else shared
        self.update_metadata_brokers.update(self.context.live_brokers)
        self.update_metadata_partitions[partition] = None

    def add_update_metadata(self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] = ()) -> None:
        """UpdateMetadata to the brokers: every live broker, plus these partitions' states (leader -2 for
        topics being deleted, so brokers drop them), taken from the context when the batch is sent."""
        self.update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        self.update_metadata_partitions.update(dict.fromkeys(partitions))

    def _update_metadata_state(self, tp: TopicPartition) -> UpdateMetadataRequest.UpdateMetadataPartitionState | None:
        leadership = self.context.leadership(tp)
        if leadership is None:
            return None  # no leader yet: nothing to tell (Kafka skips it too)
        state, zk_version = leadership.state, leadership.zk_version
        leader, leader_epoch = state.leader, state.leader_epoch
        if self.context.is_topic_queued_for_deletion(tp[0]):
            leader, leader_epoch, zk_version = LEADER_DURING_DELETE, 0, 0  # LeaderAndIsr.duringDelete
        replicas = self.context.replicas(tp)
        return UpdateMetadataRequest.UpdateMetadataPartitionState(
            topic_name=tp[0], partition_index=tp[1], controller_epoch=state.controller_epoch, leader=leader,
            leader_epoch=leader_epoch, isr=list(state.isr), zk_version=zk_version, replicas=list(replicas),
            offline_replicas=[r for r in replicas if not self.context.is_replica_online(r, tp)])

    def add_stop_replica(self, broker_ids: Iterable[int], partition: TopicPartition, delete: bool) -> None:
        if self.context.is_topic_queued_for_deletion(partition[0]):
            leader_epoch = EPOCH_DURING_DELETE
        else:
            leadership = self.context.leadership(partition)
            leader_epoch = leadership.state.leader_epoch if leadership else NO_EPOCH
        for broker_id in (b for b in broker_ids if b >= 0):
            requests = self.stop_replica.setdefault(broker_id, {})
            already_delete = partition in requests and requests[partition][1]
            requests[partition] = (leader_epoch, delete or already_delete)

    # --- sending --------------------------------------------------------------------------------------
    def send(self, controller_epoch: int) -> None:
        """Queue everything collected (LeaderAndIsr, then UpdateMetadata, then StopReplica), then clear."""
        try:
            live = self.context.live_broker_ids
            for broker_id, states in self.leader_and_isr.items():
                if broker_id in live:
                    self._send_leader_and_isr(broker_id, controller_epoch, list(states.values()))
            partitions = [s for s in map(self._update_metadata_state, self.update_metadata_partitions) if s is not None]
            for broker_id in sorted(self.update_metadata_brokers & live):
                self._send_update_metadata(broker_id, controller_epoch, partitions)
            for broker_id, requests in self.stop_replica.items():
                if broker_id in live:
                    self._send_stop_replica(broker_id, controller_epoch, requests)
        finally:
            self.clear()

    def _send_leader_and_isr(self, broker_id: int, controller_epoch: int,
                             states: list[LeaderAndIsrRequest.LeaderAndIsrPartitionState]) -> None:
        leader_ids = {s.leader for s in states}
        live_leaders = []
        for leader_id in sorted(leader_ids):
            info = self.context.live_brokers.get(leader_id)
            endpoint = info.endpoint(self.channel.listener_name) if info else None
            if endpoint is not None:
                live_leaders.append(LeaderAndIsrRequest.LeaderAndIsrLiveLeader(
                    broker_id=leader_id, host_name=endpoint[0], port=endpoint[1]))
        broker_epoch = self.context.broker_epoch(broker_id)
        topic_ids = dict(self.context.topic_ids)
        prefix_ = prefix(self.controller_id, controller_epoch)
        leaders = sum(1 for s in states if s.leader == broker_id)
        log_items(states, lambda s: f"{prefix_} Sending LeaderAndIsr request {_describe(s)} to broker {broker_id} for "
                  f"partition {s.topic_name}-{s.partition_index}", lambda s: f"{s.topic_name}-{s.partition_index}",
                  f"{prefix_} Sending LeaderAndIsr request to broker {broker_id} with {leaders} become-leader and "
                  f"{len(states) - leaders} become-follower partitions ({{count}}): {{first}}")

        def build(version: int) -> LeaderAndIsrRequest:
            request = LeaderAndIsrRequest(controller_id=self.controller_id, controller_epoch=controller_epoch,
                                          broker_epoch=broker_epoch, live_leaders=live_leaders)
            if version < 2:
                request.ungrouped_partition_states = states
            else:
                request.topic_states = [LeaderAndIsrRequest.LeaderAndIsrTopicState(
                    topic_name=topic, topic_id=topic_ids.get(topic, _ZERO_UUID) if version >= 5 else _ZERO_UUID,
                    partition_states=group) for topic, group in _by_topic(states)]
            return request

        self.channel.send(broker_id, ApiKey.LEADER_AND_ISR, build, self.on_response)

    def _send_update_metadata(self, broker_id: int, controller_epoch: int,
                              partitions: list[UpdateMetadataRequest.UpdateMetadataPartitionState]) -> None:
        brokers = [self.context.live_brokers[b] for b in sorted(self.context.live_broker_ids)]
        broker_epoch = self.context.broker_epoch(broker_id)
        topic_ids = dict(self.context.topic_ids)
        if state_change_log.isEnabledFor(logging.INFO):
            state_change_log.info("%s Sending UpdateMetadata request to broker %d for %d partitions (live brokers %s)",
                                  prefix(self.controller_id, controller_epoch), broker_id, len(partitions),
                                  [b.broker_id for b in brokers])

        def build(version: int) -> UpdateMetadataRequest:
            request = UpdateMetadataRequest(controller_id=self.controller_id, controller_epoch=controller_epoch,
                                            broker_epoch=broker_epoch,
                                            live_brokers=[_metadata_broker(b, version) for b in brokers])
            if version < 5:
                request.ungrouped_partition_states = partitions
            else:
                request.topic_states = [UpdateMetadataRequest.UpdateMetadataTopicState(
                    topic_name=topic, topic_id=topic_ids.get(topic, _ZERO_UUID) if version >= 7 else _ZERO_UUID,
                    partition_states=group) for topic, group in _by_topic(partitions)]
            return request

        self.channel.send(broker_id, ApiKey.UPDATE_METADATA, build, self.on_response)

    def _send_stop_replica(self, broker_id: int, controller_epoch: int,
                           requests: dict[TopicPartition, tuple[int, bool]]) -> None:
        broker_epoch = self.context.broker_epoch(broker_id)
        prefix_ = prefix(self.controller_id, controller_epoch)
        log_items(list(requests.items()), lambda r: f"{prefix_} Sending StopReplica request to broker {broker_id} for "
                  f"partitions {r[0][0]}-{r[0][1]}(leader_epoch={r[1][0]}, delete={r[1][1]})",
                  lambda r: f"{r[0][0]}-{r[0][1]}(delete={r[1][1]})",
                  f"{prefix_} Sending StopReplica request to broker {broker_id} for {{count}} partitions: {{first}}")
        base = dict(controller_id=self.controller_id, controller_epoch=controller_epoch, broker_epoch=broker_epoch)
        ordered = sorted(requests.items())

        def build(version: int) -> StopReplicaRequest | list[StopReplicaRequest]:
            if version >= 3:  # one request, a delete flag and leader epoch per partition
                by_topic: dict[str, list[StopReplicaRequest.StopReplicaPartitionState]] = {}
                for (topic, partition), (epoch, delete) in ordered:
                    by_topic.setdefault(topic, []).append(StopReplicaRequest.StopReplicaPartitionState(
                        partition_index=partition, leader_epoch=epoch, delete_partition=delete))
                return StopReplicaRequest(**base, topic_states=[StopReplicaRequest.StopReplicaTopicState(
                    topic_name=t, partition_states=p) for t, p in by_topic.items()])
            # older versions have one delete flag per request: deleted partitions first, then the others
            bodies = []
            for delete in (True, False):
                chosen = [tp for tp, (_, d) in ordered if d == delete]
                if not chosen:
                    continue
                if version == 0:
                    bodies.append(StopReplicaRequest(**base, delete_partitions=delete, ungrouped_partitions=[
                        StopReplicaRequest.StopReplicaPartitionV0(topic_name=t, partition_index=p) for t, p in chosen]))
                else:
                    bodies.append(StopReplicaRequest(**base, delete_partitions=delete, topics=[
                        StopReplicaRequest.StopReplicaTopicV1(name=t, partition_indexes=[p for _, p in group])
                        for t, group in _by_topic(chosen)]))
            return bodies

        self.channel.send(broker_id, ApiKey.STOP_REPLICA, build, self.on_response)


_ZERO_UUID = uuid.UUID(int=0)


def _by_topic(items: Iterable[Any]) -> list[tuple[str, list[Any]]]:
    """Group partition states (or (topic, partition) pairs) by topic, keeping first-seen order."""
    groups: dict[str, list[Any]] = {}
    for item in items:
        topic = item[0] if isinstance(item, tuple) else item.topic_name
        groups.setdefault(topic, []).append(item)
    return list(groups.items())


def _metadata_broker(info: BrokerInfo, version: int) -> UpdateMetadataRequest.UpdateMetadataBroker:
    """A live broker with all its endpoints (v0 carries only the PLAINTEXT host and port)."""
    protocols = info.security_protocol_map
    broker = UpdateMetadataRequest.UpdateMetadataBroker(id=info.broker_id, rack=info.rack if version >= 2 else None)
    if version == 0:
        plaintext = next(((h, p) for n, h, p in info.endpoints if protocols.get(n, n) == "PLAINTEXT"), ("", -1))
        broker.v0_host, broker.v0_port = plaintext
    else:
        broker.endpoints = [UpdateMetadataRequest.UpdateMetadataEndpoint(
            port=port, host=host, listener=name if version >= 3 else "",
            security_protocol=SECURITY_PROTOCOL_IDS.get(protocols.get(name, name), 0))
            for name, host, port in info.endpoints]
    return broker


def _describe(state: Any) -> str:
    return (f"{state.topic_name}-{state.partition_index}(leader={state.leader}, leader_epoch={state.leader_epoch}, "
            f"isr={state.isr}, partition_epoch={state.partition_epoch}, replicas={state.replicas}, "
            f"is_new={state.is_new})")
