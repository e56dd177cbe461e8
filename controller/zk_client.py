"""Kafka's ZooKeeper reads and writes (KafkaZkClient in Kafka 2.8), over kazoo.

This module and its bulk helper ``zk_bulk`` are the only ones that import kazoo. Methods are synchronous
and block on ZooKeeper round trips: the broker calls them from a thread executor, never on the event
loop. Reads and writes of many znodes (partition states, topic assignments) go in bulk: multiRead and
chunked multis (``zk_bulk``), as Kafka 1.1 sent them asynchronously, many outstanding at once.

Threads: kazoo runs its own threads. Every callback given here (``on_event``, ``watch_*``) is
called on kazoo's thread; it must only hand the event over, e.g. with
``loop.call_soon_threadsafe(queue.put_nowait, event)``, and must not block or call this client.

Errors: kazoo's exceptions never leave this module; they become ``ZkError`` subclasses.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any, Callable, Iterable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (BadVersionError, ConnectionLoss, KazooException, NoNodeError,
                              NodeExistsError, OperationTimeoutError, SessionExpiredError)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from . import zk_bulk
from .zk_data import (PERSISTENT_PATHS, BrokerIdsZNode, BrokerIdZNode, BrokerInfo, BrokerSequenceIdZNode,
                      ClusterIdZNode, ConfigChangeNotificationZNode, ConfigEntityZNode, ConsumerOffsetZNode,
                      ControllerEpochZNode, ControllerZNode, DeleteTopicsZNode, IsrChangeNotificationZNode, LeaderIsrAndControllerEpoch,
                      LogDirEventNotificationZNode,
                      PreferredReplicaElectionZNode, ProducerIdBlock, ProducerIdBlockZNode, ReassignPartitionsZNode,
                      TopicAssignment, TopicPartitionsZNode, TopicPartitionStateZNode, TopicPartitionZNode, TopicsZNode,
                      TopicZNode)

log = logging.getLogger(__name__)

# The epoch a cluster starts from before its first controller (KafkaController.InitialControllerEpoch).
INITIAL_CONTROLLER_EPOCH = 0

TopicPartition = tuple[str, int]


class ZkError(Exception):
    """A ZooKeeper operation failed."""


class ZkConnectionError(ZkError):
    """No connection (or an expired session): the operation's outcome is unknown."""


class ZkNodeExistsError(ZkError):
    """An ephemeral node exists and belongs to another session (e.g. a broker id already registered)."""


class ControllerMovedError(ZkError):
    """Another broker is controller, or the controller epoch changed under us."""


class TopicExistsError(ZkError):
    """The topic already exists."""


def _zk(method):
    """Translate kazoo exceptions into ZkError subclasses."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (ConnectionLoss, SessionExpiredError, OperationTimeoutError, KazooTimeoutError) as e:
            raise ZkConnectionError(f"{method.__name__}: {type(e).__name__} {e}") from e
        except KazooException as e:
            raise ZkError(f"{method.__name__}: {type(e).__name__} {e}") from e
    return wrapper


def split_connect_string(connect: str) -> tuple[str, str]:
    """``host:port,host:port/chroot`` -> (hosts, chroot or '')."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, (slash + chroot).rstrip("/")


class KafkaZkClient:
    """Kafka's znodes over one ZooKeeper session."""

    def __init__(self, connect: str, session_timeout_ms: int = 18000, connection_timeout_ms: int = 18000,
                 on_event: Callable[[str, Any], None] | None = None):
        """``on_event(kind, payload)`` gets ("session", "connected" | "disconnected" | "expired") on kazoo's thread."""
        self.connect = connect
        self.hosts, self.chroot = split_connect_string(connect)
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms
        self.on_event = on_event
        self._closing = False
        self._multi_read: bool | None = None  # does the server speak multiRead (asked once, when first needed)
        self._zk = KazooClient(hosts=connect, timeout=session_timeout_ms / 1000)
        self._zk.add_listener(self._state_changed)

    # --- session ----------------------------------------------------------------------------------
    @_zk
    def start(self) -> None:
        """Connect, creating the chroot path first if it is missing (as Kafka does)."""
        timeout = self.connection_timeout_ms / 1000
        if self.chroot:
            bootstrap = KazooClient(hosts=self.hosts, timeout=self.session_timeout_ms / 1000)
            bootstrap.start(timeout=timeout)
            try:
                bootstrap.ensure_path(self.chroot)
            finally:
                bootstrap.stop()
                bootstrap.close()
        self._zk.start(timeout=timeout)

    def close(self) -> None:
        """Close the session: its ephemeral nodes (broker registration, /controller) disappear."""
        self._closing = True
        try:
            self._zk.stop()
            self._zk.close()
        except KazooException:
            log.debug("closing ZooKeeper session", exc_info=True)

    @property
    def session_id(self) -> int | None:
        return self._zk.client_id[0] if self._zk.client_id else None

    def _state_changed(self, state: str) -> None:
        if self._closing or self.on_event is None:
            return
        kinds = {KazooState.CONNECTED: "connected", KazooState.SUSPENDED: "disconnected", KazooState.LOST: "expired"}
        try:
            self.on_event("session", kinds[state])
        except Exception:
            log.exception("session state callback failed")

    # --- generic helpers --------------------------------------------------------------------------
    def _get(self, path: str) -> tuple[bytes | None, Any]:
        try:
            return self._zk.get(path)
        except NoNodeError:
            return None, None

    def _get_many(self, paths: dict[Any, str]) -> dict[Any, tuple[bytes, Any]]:
        """Reads in bulk (multiRead, else pipelined): key -> (data, stat) for the paths that exist."""
        if len(paths) >= zk_bulk.PIPELINED_BELOW and self._multi_read is None:
            self._multi_read = zk_bulk.supports_multi_read(self._zk)
        return zk_bulk.read_many(self._zk, paths, bool(self._multi_read))

    def _children(self, path: str) -> list[str]:
        try:
            return self._zk.get_children(path)
        except NoNodeError:
            return []

    def _delete(self, path: str, recursive: bool = False) -> None:
        try:
            self._zk.delete(path, recursive=recursive)
        except NoNodeError:
            pass

    def _ephemeral_create(self, path: str, data: bytes) -> Any:
        """Create an ephemeral node; if it exists, it must be ours (a retried create). Returns its stat."""
        try:
            return self._zk.create(path, data, ephemeral=True, makepath=True, include_data=True)[1]
        except NodeExistsError:
            _, stat = self._get(path)
            if stat is not None and stat.ephemeralOwner == self.session_id:
                return stat
            raise ZkNodeExistsError(f"{path} exists and is owned by another session") from None

    def _set_or_create(self, path: str, data: bytes) -> None:
        try:
            self._zk.set(path, data)
        except NoNodeError:
            try:
                self._zk.create(path, data, makepath=True)
            except NodeExistsError:
                self._zk.set(path, data)

    def _conditional_set(self, path: str, data: bytes, version: int, epoch_zk_version: int | None) -> int | None:
        """Set ``path`` at ``version`` (and check /controller_epoch's version): new version, None on BadVersion."""
        if epoch_zk_version is None:
            try:
                return self._zk.set(path, data, version=version).version
            except BadVersionError:
                return None
        tx = self._zk.transaction()
        tx.check(ControllerEpochZNode.path, epoch_zk_version)
        tx.set_data(path, data, version)
        check, result = tx.commit()
        if isinstance(check, BadVersionError):
            raise ControllerMovedError(f"controller epoch znode version is no longer {epoch_zk_version}")
        if isinstance(result, BadVersionError):
            return None
        if isinstance(result, Exception):
            raise result
        return result.version

    # --- cluster ----------------------------------------------------------------------------------
    @_zk
    def create_top_level_paths(self) -> None:
        """Create Kafka's persistent paths (/brokers/ids, /config/changes, ...) if missing."""
        for path in PERSISTENT_PATHS:
            self._zk.ensure_path(path)

    @_zk
    def get_or_create_cluster_id(self) -> str:
        """Read /cluster/id, creating it with a new random id if absent."""
        data, _ = self._get(ClusterIdZNode.path)
        if data is not None:
            return ClusterIdZNode.decode(data)
        cluster_id = ClusterIdZNode.new_cluster_id()
        try:
            self._zk.create(ClusterIdZNode.path, ClusterIdZNode.encode(cluster_id), makepath=True)
            return cluster_id
        except NodeExistsError:
            return ClusterIdZNode.decode(self._zk.get(ClusterIdZNode.path)[0])

    # --- brokers ----------------------------------------------------------------------------------
    @_zk
    def register_broker(self, info: BrokerInfo) -> int:
        """Create the ephemeral /brokers/ids/<id>; returns the broker epoch (the znode's czxid)."""
        stat = self._ephemeral_create(BrokerIdZNode.path(info.broker_id), BrokerIdZNode.encode(info))
        log.info("registered broker %d with broker epoch %d", info.broker_id, stat.czxid)
        return stat.czxid

    @_zk
    def get_all_brokers_with_epochs(self) -> dict[int, tuple[BrokerInfo, int]]:
        """Live brokers: id -> (registration, broker epoch)."""
        ids = [int(name) for name in self._children(BrokerIdsZNode.path) if name.isdigit()]
        found = self._get_many({i: BrokerIdZNode.path(i) for i in sorted(ids)})
        return {i: (BrokerIdZNode.decode(i, data), stat.czxid) for i, (data, stat) in found.items()}

    def get_all_brokers(self) -> dict[int, BrokerInfo]:
        """Live brokers: id -> registration."""
        return {i: info for i, (info, _) in self.get_all_brokers_with_epochs().items()}

    @_zk
    def get_broker(self, broker_id: int) -> BrokerInfo | None:
        """One broker's registration, or None if it is not live."""
        data, _ = self._get(BrokerIdZNode.path(broker_id))
        return None if data is None else BrokerIdZNode.decode(broker_id, data)

    @_zk
    def generate_broker_id(self, reserved_max: int) -> int:
        """A new broker id above ``reserved_max``: the next version of /brokers/seqid (as Kafka)."""
        self._zk.ensure_path(BrokerSequenceIdZNode.path)
        return self._zk.set(BrokerSequenceIdZNode.path, b"").version + reserved_max

    # --- controller -------------------------------------------------------------------------------
    @_zk
    def register_controller_and_increment_epoch(self, broker_id: int) -> tuple[int, int]:
        """Create /controller and bump /controller_epoch in one transaction: (new epoch, its znode version)."""
        epoch_and_version = self.get_controller_epoch()
        if epoch_and_version is None:
            try:
                self._zk.create(ControllerEpochZNode.path, ControllerEpochZNode.encode(INITIAL_CONTROLLER_EPOCH))
            except NodeExistsError:
                pass
            epoch_and_version = self.get_controller_epoch()
        epoch, version = epoch_and_version
        new_epoch = epoch + 1
        tx = self._zk.transaction()
        tx.create(ControllerZNode.path, ControllerZNode.encode(broker_id), ephemeral=True)
        tx.set_data(ControllerEpochZNode.path, ControllerEpochZNode.encode(new_epoch), version)
        created, stat = tx.commit()
        if not isinstance(created, Exception) and not isinstance(stat, Exception):
            log.info("broker %d is controller with epoch %d (zk version %d)", broker_id, new_epoch, stat.version)
            return new_epoch, stat.version
        # Kafka's checkControllerAndEpoch: a retried transaction of ours may already have succeeded
        data, owner = self._get(ControllerZNode.path)
        current = self.get_controller_epoch()
        if (owner is not None and owner.ephemeralOwner == self.session_id and current is not None
                and current[0] == new_epoch and ControllerZNode.decode(data) == broker_id):
            return current
        holder = ControllerZNode.decode(data) if data is not None else None
        raise ControllerMovedError(f"broker {broker_id} lost the election: controller is {holder}, "
                                   f"epoch {current[0] if current else None}")

    @_zk
    def get_controller_id(self) -> int | None:
        """The broker id in /controller, or None without a controller."""
        return ControllerZNode.decode(self._get(ControllerZNode.path)[0])

    @_zk
    def get_controller_epoch(self) -> tuple[int, int] | None:
        """(epoch, znode version) of /controller_epoch, or None if it was never written."""
        data, stat = self._get(ControllerEpochZNode.path)
        return None if stat is None else (ControllerEpochZNode.decode(data), stat.version)

    @_zk
    def delete_controller(self, epoch_zk_version: int | None = None) -> None:
        """Resign: delete /controller (conditionally on /controller_epoch's version when given)."""
        if epoch_zk_version is None:
            return self._delete(ControllerZNode.path)
        tx = self._zk.transaction()
        tx.check(ControllerEpochZNode.path, epoch_zk_version)
        tx.delete(ControllerZNode.path)
        check, _ = tx.commit()
        if isinstance(check, BadVersionError):
            raise ControllerMovedError(f"controller epoch znode version is no longer {epoch_zk_version}")

    def watch_controller(self, callback: Callable[[int | None], None]) -> Callable[[], None]:
        """``callback(controller id or None)`` now and whenever /controller changes (kazoo's thread); returns unwatch."""
        return self.watch_data(ControllerZNode.path, lambda data, version: callback(ControllerZNode.decode(data)))

    # --- topics -----------------------------------------------------------------------------------
    @_zk
    def create_topic_assignment(self, topic: str, assignment: TopicAssignment, config: dict[str, str]) -> None:
        """Write /config/topics/<t>, then create /brokers/topics/<t>; TopicExistsError if it exists."""
        if self._zk.exists(TopicZNode.path(topic)) is not None:
            raise TopicExistsError(f"Topic '{topic}' already exists.")
        self._set_or_create(ConfigEntityZNode.path("topics", topic), ConfigEntityZNode.encode(config))
        try:
            self._zk.create(TopicZNode.path(topic), TopicZNode.encode(assignment), makepath=True)
        except NodeExistsError:
            raise TopicExistsError(f"Topic '{topic}' already exists.") from None

    @_zk
    def get_all_topics(self) -> list[str]:
        """Names under /brokers/topics."""
        return sorted(self._children(TopicsZNode.path))

    @_zk
    def topic_exists(self, topic: str) -> bool:
        return self._zk.exists(TopicZNode.path(topic)) is not None

    @_zk
    def get_topic_assignments_with_versions(self, topics: Iterable[str] | None = None
                                            ) -> dict[str, tuple[TopicAssignment, int]]:
        """topic -> (assignment, znode version) for the given (default: all) existing topics."""
        names = self.get_all_topics() if topics is None else list(topics)
        found = self._get_many({t: TopicZNode.path(t) for t in names})
        return {t: (TopicZNode.decode(data), stat.version) for t, (data, stat) in found.items()}

    def get_topic_assignments(self, topics: Iterable[str] | None = None) -> dict[str, TopicAssignment]:
        """topic -> assignment for the given (default: all) existing topics."""
        return {t: a for t, (a, _) in self.get_topic_assignments_with_versions(topics).items()}

    @_zk
    def set_topic_assignment(self, topic: str, assignment: TopicAssignment, expected_version: int = -1,
                             epoch_zk_version: int | None = None) -> int | None:
        """Rewrite /brokers/topics/<t> at ``expected_version``: new version, or None on BadVersion."""
        return self._conditional_set(TopicZNode.path(topic), TopicZNode.encode(assignment), expected_version,
                                     epoch_zk_version)

    # --- partition state --------------------------------------------------------------------------
    @_zk
    def create_partition_states(self, states: dict[TopicPartition, LeaderIsrAndControllerEpoch],
                                epoch_zk_version: int | None = None) -> dict[TopicPartition, bool]:
        """Create .../partitions/<p>/state for each partition: (t, p) -> created (False if it existed)."""
        # Kafka's createTopicPartitionStatesRaw: the topics' partitions znodes, then per partition its znode and
        # its state, in chunked multis behind a check of /controller_epoch's version.
        topics = {tp[0] for tp in states}
        for result in [self._zk.create_async(TopicPartitionsZNode.path(t), b"", makepath=True) for t in topics]:
            try:
                result.get()
            except NodeExistsError:
                pass

        def create(tp: TopicPartition, data: bytes) -> zk_bulk.Op:
            def add(tx: Any) -> None:
                tx.create(TopicPartitionZNode.path(*tp), b"")
                tx.create(TopicPartitionStateZNode.path(*tp), data)
            return add

        items = [(tp, create(tp, TopicPartitionStateZNode.encode(state)), 2) for tp, state in states.items()]
        done, failed, moved = zk_bulk.commit_chunks(self._zk, items, self._epoch_check(epoch_zk_version))
        if moved is not None:
            raise ControllerMovedError(f"controller epoch znode version is no longer {epoch_zk_version}")
        created = {tp: True for tp in done}
        # a partition znode (or its state) that exists already: one at a time, an existing state is no error
        pending = [(tp, self._zk.create_async(TopicPartitionStateZNode.path(*tp),
                                              TopicPartitionStateZNode.encode(states[tp]), makepath=True))
                   for tp in failed]
        for tp, result in pending:
            try:
                result.get()
                created[tp] = True
            except NodeExistsError:
                created[tp] = False
        return created

    @staticmethod
    def _epoch_check(epoch_zk_version: int | None) -> list[zk_bulk.Op]:
        """The operation that fences a multi on /controller_epoch's version (none without a version)."""
        if epoch_zk_version is None:
            return []
        return [lambda tx: tx.check(ControllerEpochZNode.path, epoch_zk_version)]

    def _check_epoch_version(self, epoch_zk_version: int) -> None:
        _, stat = self._get(ControllerEpochZNode.path)
        if stat is None or stat.version != epoch_zk_version:
            raise ControllerMovedError(f"controller epoch znode version is no longer {epoch_zk_version}")

    @_zk
    def get_partition_states(self, partitions: Iterable[TopicPartition]
                             ) -> dict[TopicPartition, tuple[LeaderIsrAndControllerEpoch, int]]:
        """(t, p) -> (state, znode version) for the partitions that have a state znode."""
        found = self._get_many({tp: TopicPartitionStateZNode.path(*tp) for tp in partitions})
        return {tp: (TopicPartitionStateZNode.decode(data), stat.version) for tp, (data, stat) in found.items()}

    @_zk
    def update_partition_state(self, topic: str, partition: int, state: LeaderIsrAndControllerEpoch,
                               expected_version: int, epoch_zk_version: int | None = None) -> int | None:
        """Conditional write of the state: new znode version, or None on BadVersion (the caller re-reads)."""
        return self._conditional_set(TopicPartitionStateZNode.path(topic, partition),
                                     TopicPartitionStateZNode.encode(state), expected_version, epoch_zk_version)

    @_zk
    def update_partition_states(self, updates: dict[TopicPartition, tuple[LeaderIsrAndControllerEpoch, int]],
                                epoch_zk_version: int | None = None) -> dict[TopicPartition, int | None]:
        """Many conditional writes, pipelined (Kafka's updateLeaderAndIsr): (t, p) -> (state, expected version)
        in, (t, p) -> new znode version or None (version conflict or no such znode: re-read) out.

        With ``epoch_zk_version`` each multi checks /controller_epoch's version too; ControllerMovedError if
        that check failed."""
        def set_state(path: str, data: bytes, version: int) -> zk_bulk.Op:
            return lambda tx: tx.set_data(path, data, version)

        items = [(tp, set_state(TopicPartitionStateZNode.path(*tp), TopicPartitionStateZNode.encode(state), version), 1)
                 for tp, (state, version) in updates.items()]
        done, failed, moved = zk_bulk.commit_chunks(self._zk, items, self._epoch_check(epoch_zk_version))
        if moved is not None:
            raise ControllerMovedError(f"controller epoch znode version is no longer {epoch_zk_version}")
        written: dict[TopicPartition, int | None] = {tp: stat.version for tp, stat in done.items()}
        for tp, error in failed.items():
            if not isinstance(error, (BadVersionError, NoNodeError)):
                raise error
            written[tp] = None
        return written

    # --- topic deletion ---------------------------------------------------------------------------
    @_zk
    def mark_topic_for_deletion(self, topics: Iterable[str]) -> None:
        """Create /admin/delete_topics/<t> for each topic (already marked is fine)."""
        for topic in topics:
            try:
                self._zk.create(DeleteTopicsZNode.topic_path(topic), b"", makepath=True)
            except NodeExistsError:
                pass

    @_zk
    def get_topics_marked_for_deletion(self) -> list[str]:
        return sorted(self._children(DeleteTopicsZNode.path))

    @_zk
    def delete_topic_deletion_markers(self, topics: Iterable[str], epoch_zk_version: int | None = None) -> None:
        """Remove /admin/delete_topics/<t> (deletion disabled, or the topic does not exist)."""
        if epoch_zk_version is not None:
            self._check_epoch_version(epoch_zk_version)
        for topic in topics:
            self._delete(DeleteTopicsZNode.topic_path(topic))

    @_zk
    def delete_topic_znodes(self, topic: str, epoch_zk_version: int | None = None) -> None:
        """Remove the topic's assignment and states, its config, then its deletion marker.

        With ``epoch_zk_version``, first check that /controller_epoch still has that version
        (ControllerMovedError otherwise), so a deposed controller does not delete topics."""
        if epoch_zk_version is not None:
            self._check_epoch_version(epoch_zk_version)
        self._delete(TopicZNode.path(topic), recursive=True)
        self._delete(ConfigEntityZNode.path("topics", topic))
        self._delete(DeleteTopicsZNode.topic_path(topic))

    # --- admin requests: preferred replica election, reassignment -----------------------------------
    @_zk
    def get_preferred_replica_election(self) -> list[TopicPartition] | None:
        """The partitions in /admin/preferred_replica_election, None without the znode; ValueError if the
        JSON is not Kafka's."""
        data, stat = self._get(PreferredReplicaElectionZNode.path)
        if stat is None:
            return None
        try:
            return PreferredReplicaElectionZNode.decode(data)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"{PreferredReplicaElectionZNode.path} is not a partition list: {data!r}") from e

    @_zk
    def create_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None:
        """Ask the controller for a preferred replica election (what Kafka's tool writes); ZkNodeExistsError
        while an earlier one is pending."""
        try:
            self._zk.create(PreferredReplicaElectionZNode.path,
                            PreferredReplicaElectionZNode.encode(list(partitions)), makepath=True)
        except NodeExistsError:
            raise ZkNodeExistsError("a preferred replica election is already in progress") from None

    @_zk
    def delete_preferred_replica_election(self, epoch_zk_version: int | None = None) -> None:
        """Remove /admin/preferred_replica_election once the controller handled it."""
        if epoch_zk_version is not None:
            self._check_epoch_version(epoch_zk_version)
        self._delete(PreferredReplicaElectionZNode.path)

    @_zk
    def create_partition_reassignment(self, reassignment: dict[TopicPartition, list[int]]) -> None:
        """Ask for a reassignment the legacy way (Kafka's tool before KIP-455); ZkNodeExistsError while one is
        pending."""
        try:
            self._zk.create(ReassignPartitionsZNode.path, ReassignPartitionsZNode.encode(reassignment), makepath=True)
        except NodeExistsError:
            raise ZkNodeExistsError("a partition reassignment is already in progress") from None

    @_zk
    def get_partition_reassignment(self) -> dict[TopicPartition, list[int]] | None:
        """The legacy /admin/reassign_partitions request, None without the znode."""
        data, stat = self._get(ReassignPartitionsZNode.path)
        return None if stat is None else ReassignPartitionsZNode.decode(data)

    @_zk
    def set_partition_reassignment(self, reassignment: dict[TopicPartition, list[int]],
                                   epoch_zk_version: int | None = None) -> None:
        """Rewrite /admin/reassign_partitions with what is left of it (the controller, as partitions finish);
        an empty reassignment deletes the znode. Fenced on /controller_epoch's version when given."""
        if epoch_zk_version is not None:
            self._check_epoch_version(epoch_zk_version)
        if not reassignment:
            self._delete(ReassignPartitionsZNode.path)
            return
        try:
            self._zk.set(ReassignPartitionsZNode.path, ReassignPartitionsZNode.encode(reassignment))
        except NoNodeError:
            pass  # deleted meanwhile: nothing left to keep

    @_zk
    def get_topic_partition_ids(self, topic: str) -> list[int]:
        """The partitions of a topic that have a znode under /brokers/topics/<t>/partitions."""
        return sorted(int(c) for c in self._children(TopicPartitionsZNode.path(topic)) if c.isdigit())

    # --- sequential notifications: ISR changes, log dir events (KIP-112) ---------------------------
    def _notify(self, prefix: str, data: bytes) -> str:
        """Create the sequential child ``<prefix>N``; returns its name."""
        return self._zk.create(prefix, data, sequence=True, makepath=True).rsplit("/", 1)[1]

    def _notifications(self, parent: str) -> dict[str, bytes]:
        """Child name -> data, oldest first (vanished notifications are skipped)."""
        names = sorted(self._children(parent))
        return {n: data for n, (data, _) in self._get_many({n: f"{parent}/{n}" for n in names}).items()}

    def _delete_notifications(self, parent: str, names: Iterable[str] | None) -> None:
        for name in (self._children(parent) if names is None else names):
            self._delete(f"{parent}/{name}")

    @_zk
    def propagate_isr_changes(self, partitions: Iterable[TopicPartition]) -> str:
        """Create a sequential /isr_change_notification/isr_change_N naming the partitions; returns its name."""
        return self._notify(IsrChangeNotificationZNode.prefix, IsrChangeNotificationZNode.encode(list(partitions)))

    @_zk
    def get_isr_change_notifications(self) -> dict[str, list[TopicPartition]]:
        """Notification name -> partitions, oldest first."""
        return {n: IsrChangeNotificationZNode.decode(data)
                for n, data in self._notifications(IsrChangeNotificationZNode.path).items()}

    @_zk
    def delete_isr_change_notifications(self, names: Iterable[str] | None = None) -> None:
        """Delete the named notifications (default: all)."""
        self._delete_notifications(IsrChangeNotificationZNode.path, names)

    @_zk
    def propagate_log_dir_event(self, broker_id: int) -> str:
        """Create a persistent sequential /log_dir_event_notification/log_dir_event_N for ``broker_id``."""
        return self._notify(LogDirEventNotificationZNode.prefix, LogDirEventNotificationZNode.encode(broker_id))

    @_zk
    def get_log_dir_event_notifications(self) -> dict[str, int | None]:
        """Notification name -> broker id, oldest first."""
        return {n: LogDirEventNotificationZNode.decode(data)
                for n, data in self._notifications(LogDirEventNotificationZNode.path).items()}

    @_zk
    def delete_log_dir_event_notifications(self, names: Iterable[str] | None = None) -> None:
        """Delete the named notifications (default: all)."""
        self._delete_notifications(LogDirEventNotificationZNode.path, names)

    # --- producer ids -----------------------------------------------------------------------------
    @_zk
    def allocate_producer_id_block(self, broker_id: int) -> ProducerIdBlock:
        """Claim the next block of producer ids with a versioned write, retrying when another broker wins."""
        while True:
            try:
                data, stat = self._zk.get(ProducerIdBlockZNode.path)
            except NoNodeError:
                # Created with its first block, never empty: Kafka 2.8 parses any data it finds there as JSON
                # (it creates the node with null data, which both read as "no block yet")
                block = ProducerIdBlockZNode.next_block(None, broker_id)
                try:
                    self._zk.create(ProducerIdBlockZNode.path, ProducerIdBlockZNode.encode(block), makepath=True)
                    return block
                except NodeExistsError:
                    continue
            block = ProducerIdBlockZNode.next_block(ProducerIdBlockZNode.decode(data), broker_id)
            try:
                self._zk.set(ProducerIdBlockZNode.path, ProducerIdBlockZNode.encode(block), version=stat.version)
                return block
            except BadVersionError:
                continue

    # --- configs ----------------------------------------------------------------------------------
    @_zk
    def get_entity_config(self, entity_type: str, entity_name: str) -> dict[str, str]:
        """The overrides in /config/<type>/<name> ({} if none)."""
        return ConfigEntityZNode.decode(self._get(ConfigEntityZNode.path(entity_type, entity_name))[0])

    @_zk
    def get_entity_configs(self, entity_type: str, entity_names: Iterable[str]) -> dict[str, dict[str, str]]:
        """``get_entity_config`` of many entities in one pipelined round: name -> overrides ({} if none)."""
        names = list(entity_names)
        found = self._get_many({n: ConfigEntityZNode.path(entity_type, n) for n in names})
        return {n: ConfigEntityZNode.decode(found[n][0] if n in found else None) for n in names}

    @_zk
    def set_entity_config(self, entity_type: str, entity_name: str, config: dict[str, str]) -> None:
        """Write /config/<type>/<name>, then announce it with a /config/changes/config_change_N."""
        self._set_or_create(ConfigEntityZNode.path(entity_type, entity_name), ConfigEntityZNode.encode(config))
        self._zk.create(ConfigChangeNotificationZNode.prefix,
                        ConfigChangeNotificationZNode.encode(entity_type, entity_name), sequence=True, makepath=True)

    @_zk
    def get_all_entity_configs(self, entity_type: str) -> dict[str, dict[str, str]]:
        """Every /config/<type>/<name>: name -> overrides (Kafka's fetchAllEntityConfigs). A name that
        only holds children (a user with per-client quotas alone) maps to {}."""
        names = self._children(f"/config/{entity_type}")
        found = self._get_many({n: ConfigEntityZNode.path(entity_type, n) for n in names})
        return {n: ConfigEntityZNode.decode(data) for n, (data, _) in sorted(found.items())}

    @_zk
    def get_all_child_entity_configs(self, root_type: str, child_type: str) -> dict[str, dict[str, str]]:
        """Every /config/<root>/<name>/<child>/<child name>: "<name>/<child>/<child name>" -> overrides
        (fetchAllChildEntityConfigs; users' per-client-id quotas)."""
        paths = {f"{name}/{child_type}/{child}": ConfigEntityZNode.path(root_type, f"{name}/{child_type}/{child}")
                 for name in self._children(f"/config/{root_type}")
                 for child in self._children(f"/config/{root_type}/{name}/{child_type}")}
        found = self._get_many(paths)
        return {n: ConfigEntityZNode.decode(data) for n, (data, _) in sorted(found.items())}

    @_zk
    def get_config_change_notifications(self) -> dict[str, tuple[str, str]]:
        """Notification name -> (entity type, entity name), oldest first."""
        names = sorted(self._children(ConfigChangeNotificationZNode.path))
        found = self._get_many({n: f"{ConfigChangeNotificationZNode.path}/{n}" for n in names})
        return {n: ConfigChangeNotificationZNode.decode(data) for n, (data, _) in found.items()}

    # --- OffsetCommit/OffsetFetch v0 ---------------------------------------------------------------
    @_zk
    def set_consumer_offset(self, group: str, topic: str, partition: int, offset: int) -> None:
        self._set_or_create(ConsumerOffsetZNode.path(group, topic, partition), ConsumerOffsetZNode.encode(offset))

    @_zk
    def get_consumer_offset(self, group: str, topic: str, partition: int) -> int | None:
        data, _ = self._get(ConsumerOffsetZNode.path(group, topic, partition))
        return None if data is None else ConsumerOffsetZNode.decode(data)

    # --- raw access (tests, tools) ----------------------------------------------------------------
    @_zk
    def get_data(self, path: str) -> tuple[bytes | None, int | None]:
        """(data, version) of any znode, (None, None) if absent."""
        data, stat = self._get(path)
        return data, None if stat is None else stat.version

    @_zk
    def get_children(self, path: str) -> list[str]:
        return sorted(self._children(path))

    # --- versioned znodes, for stores kept outside this module (the ACL store) -------------------
    @_zk
    def ensure_path(self, path: str) -> None:
        self._zk.ensure_path(path)

    @_zk
    def get_data_version_ctime(self, path: str) -> tuple[bytes | None, int, int]:
        """(data, version, creation time in ms); (None, -1, -1) if absent."""
        data, stat = self._get(path)
        return (None, -1, -1) if stat is None else (data, stat.version, stat.ctime)

    @_zk
    def create_if_absent(self, path: str, data: bytes) -> bool:
        """Create a persistent znode (and its parents); False if it already exists."""
        try:
            self._zk.create(path, data, makepath=True)
            return True
        except NodeExistsError:
            return False

    @_zk
    def set_if_version(self, path: str, data: bytes, version: int) -> int | None:
        """Set ``path``'s data if its version is still ``version``: the new version, None if it changed or is gone."""
        try:
            return self._zk.set(path, data, version=version).version
        except (BadVersionError, NoNodeError):
            return None

    @_zk
    def delete_if_version(self, path: str, version: int) -> bool:
        """Delete ``path`` if its version is ``version`` (-1: any); True also when it is already gone."""
        try:
            self._zk.delete(path, version=version)
        except NoNodeError:
            pass
        except BadVersionError:
            return False
        return True

    @_zk
    def create_sequential(self, prefix: str, data: bytes) -> str:
        """A persistent sequential znode ``<prefix><10-digit sequence>``; returns its path."""
        return self._zk.create(prefix, data, sequence=True, makepath=True)

    @_zk
    def delete_path(self, path: str) -> None:
        self._delete(path)

    # --- watches ---------------------------------------------------------------------------------
    @_zk
    def watch_children(self, path: str, callback: Callable[[list[str]], None]) -> Callable[[], None]:
        """``callback(sorted children)`` now and after every change; re-armed, survives reconnects (kazoo's thread).

        Returns ``unwatch()``: after it the callback is never called again and kazoo drops the watch
        the next time it fires (a resigning controller drops its watches this way)."""
        self._zk.ensure_path(path)
        cancelled = threading.Event()

        def fire(children: list[str]) -> bool | None:
            if self._closing or cancelled.is_set():
                return False  # tells kazoo to stop watching
            try:
                callback(sorted(children))
            except Exception:
                log.exception("children watch callback for %s failed", path)
            return None

        ChildrenWatch(self._zk, path, fire, allow_session_lost=True)  # kazoo keeps it registered
        return cancelled.set

    @_zk
    def watch_data(self, path: str, callback: Callable[[bytes | None, int | None], None]) -> Callable[[], None]:
        """``callback(data, version)`` now and on every create/change/delete of ``path`` (kazoo's thread).

        Returns ``unwatch()``, as ``watch_children`` does."""
        cancelled = threading.Event()

        def fire(data: bytes | None, stat: Any) -> bool | None:
            if self._closing or cancelled.is_set():
                return False
            try:
                callback(data, None if stat is None else stat.version)
            except Exception:
                log.exception("data watch callback for %s failed", path)
            return None

        DataWatch(self._zk, path, fire)
        return cancelled.set
