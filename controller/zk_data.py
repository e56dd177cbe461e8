"""The znodes of Kafka's ZooKeeper mode: one class per node, with its path and its JSON.

The layout and the JSON documents are Kafka's own (ZkData in Kafka 2.8), so that an operator's
`zookeeper-shell` habits, and Kafka's own tools pointed at our ZooKeeper, read the same data.
Nothing here talks to ZooKeeper: ``zk_client`` does the I/O, these classes only name and (de)code.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from typing import Any


def _dump(document: dict[str, Any]) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def _load(data: bytes | None) -> Any:
    if not data:
        return None
    return json.loads(data.decode())


def _now_ms() -> str:
    return str(int(time.time() * 1000))


# --- /cluster/id ---------------------------------------------------------------------------------

class ClusterIdZNode:
    path = "/cluster/id"

    @staticmethod
    def encode(cluster_id: str) -> bytes:
        return _dump({"version": "1", "id": cluster_id})

    @staticmethod
    def decode(data: bytes) -> str:
        return _load(data)["id"]

    @staticmethod
    def new_cluster_id() -> str:
        """A random UUID as 22 characters of URL-safe base64, as Kafka generates it."""
        return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


# --- /brokers --------------------------------------------------------------------------------------

class BrokerIdsZNode:
    path = "/brokers/ids"


class BrokerSequenceIdZNode:
    """Its znode version hands out automatic broker ids (above reserved.broker.max.id)."""

    path = "/brokers/seqid"


@dataclass
class BrokerInfo:
    broker_id: int
    endpoints: list[tuple[str, str, int]]  # (listener name, host, port)
    rack: str | None = None
    security_protocol_map: dict[str, str] = field(default_factory=dict)
    jmx_port: int = -1
    timestamp: str = field(default_factory=_now_ms)

    def endpoint(self, listener: str) -> tuple[str, int] | None:
        for name, host, port in self.endpoints:
            if name == listener:
                return host, port
        return None


class BrokerIdZNode:
    """Ephemeral registration of a live broker: version 5 of Kafka's JSON (2.8)."""

    VERSION = 5

    @staticmethod
    def path(broker_id: int) -> str:
        return f"/brokers/ids/{broker_id}"

    @classmethod
    def encode(cls, info: BrokerInfo) -> bytes:
        protocol_map = info.security_protocol_map or {name: name for name, _, _ in info.endpoints}
        plaintext = next(((h, p) for n, h, p in info.endpoints if protocol_map.get(n) == "PLAINTEXT"), None)
        return _dump({
            "features": {},
            "listener_security_protocol_map": protocol_map,
            "endpoints": [f"{name}://{host}:{port}" for name, host, port in info.endpoints],
            "rack": info.rack,
            "jmx_port": info.jmx_port,
            # host/port are the legacy fields: the PLAINTEXT endpoint, or null/-1 without one
            "host": plaintext[0] if plaintext else None,
            "port": plaintext[1] if plaintext else -1,
            "timestamp": info.timestamp,
            "version": cls.VERSION,
        })

    @staticmethod
    def decode(broker_id: int, data: bytes) -> BrokerInfo:
        doc = _load(data)
        endpoints = []
        for text in doc.get("endpoints", []):
            name, _, address = text.partition("://")
            host, _, port = address.rpartition(":")
            endpoints.append((name, host.strip("[]"), int(port)))
        if not endpoints and doc.get("host"):
            endpoints.append(("PLAINTEXT", doc["host"], int(doc["port"])))
        return BrokerInfo(broker_id, endpoints, doc.get("rack"),
                          doc.get("listener_security_protocol_map") or {},
                          doc.get("jmx_port", -1), str(doc.get("timestamp", "")))


class TopicsZNode:
    path = "/brokers/topics"


@dataclass
class TopicAssignment:
    partitions: dict[int, list[int]]  # partition -> replicas, preferred leader first
    topic_id: uuid.UUID | None = None
    adding_replicas: dict[int, list[int]] = field(default_factory=dict)
    removing_replicas: dict[int, list[int]] = field(default_factory=dict)


class TopicZNode:
    """A topic's replica assignment (version 3: with topic id, as Kafka 2.8 writes it)."""

    @staticmethod
    def path(topic: str) -> str:
        return f"/brokers/topics/{topic}"

    @staticmethod
    def encode(assignment: TopicAssignment) -> bytes:
        doc: dict[str, Any] = {
            "version": 3 if assignment.topic_id is not None else 2,
            "partitions": {str(p): r for p, r in sorted(assignment.partitions.items())},
            "adding_replicas": {str(p): r for p, r in sorted(assignment.adding_replicas.items())},
            "removing_replicas": {str(p): r for p, r in sorted(assignment.removing_replicas.items())},
        }
        if assignment.topic_id is not None:
            doc["topic_id"] = base64.urlsafe_b64encode(assignment.topic_id.bytes).decode().rstrip("=")
        return _dump(doc)

    @staticmethod
    def decode(data: bytes) -> TopicAssignment:
        doc = _load(data)
        topic_id = None
        if doc.get("topic_id"):
            raw = doc["topic_id"]
            topic_id = uuid.UUID(bytes=base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))

        def _ints(section: str) -> dict[int, list[int]]:
            return {int(p): list(r) for p, r in (doc.get(section) or {}).items()}

        return TopicAssignment(_ints("partitions"), topic_id, _ints("adding_replicas"), _ints("removing_replicas"))


class TopicPartitionsZNode:
    @staticmethod
    def path(topic: str) -> str:
        return f"/brokers/topics/{topic}/partitions"


class TopicPartitionZNode:
    @staticmethod
    def path(topic: str, partition: int) -> str:
        return f"/brokers/topics/{topic}/partitions/{partition}"


@dataclass
class LeaderIsrAndControllerEpoch:
    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int


class TopicPartitionStateZNode:
    """``.../partitions/<p>/state``: leader, leader epoch, ISR and the controller epoch that wrote it.

    Every write is conditional on the znode version, which is the partition epoch."""

    @staticmethod
    def path(topic: str, partition: int) -> str:
        return f"/brokers/topics/{topic}/partitions/{partition}/state"

    @staticmethod
    def encode(state: LeaderIsrAndControllerEpoch) -> bytes:
        return _dump({"controller_epoch": state.controller_epoch, "leader": state.leader, "version": 1,
                      "leader_epoch": state.leader_epoch, "isr": state.isr})

    @staticmethod
    def decode(data: bytes) -> LeaderIsrAndControllerEpoch:
        doc = _load(data)
        return LeaderIsrAndControllerEpoch(doc["leader"], doc["leader_epoch"], list(doc["isr"]), doc["controller_epoch"])


# --- controller -----------------------------------------------------------------------------------

class ControllerZNode:
    """Ephemeral: whoever creates it is the controller."""

    path = "/controller"

    @staticmethod
    def encode(broker_id: int, timestamp: str | None = None) -> bytes:
        return _dump({"version": 1, "brokerid": broker_id, "timestamp": timestamp or _now_ms()})

    @staticmethod
    def decode(data: bytes | None) -> int | None:
        doc = _load(data)
        return None if doc is None else int(doc["brokerid"])


class ControllerEpochZNode:
    """A plain integer; incremented (conditionally on its version) by every new controller."""

    path = "/controller_epoch"

    @staticmethod
    def encode(epoch: int) -> bytes:
        return str(epoch).encode()

    @staticmethod
    def decode(data: bytes) -> int:
        return int(data.decode())


# --- admin paths ----------------------------------------------------------------------------------

class DeleteTopicsZNode:
    path = "/admin/delete_topics"

    @staticmethod
    def topic_path(topic: str) -> str:
        return f"/admin/delete_topics/{topic}"


def _encode_partition_list(partitions: list[tuple[str, int]], extra: dict | None = None) -> bytes:
    entries = []
    for topic, partition in partitions:
        entry: dict[str, Any] = {"topic": topic, "partition": partition}
        if extra is not None:
            entry["replicas"] = extra[(topic, partition)]
        entries.append(entry)
    return _dump({"version": 1, "partitions": entries})


class ReassignPartitionsZNode:
    """The legacy (pre-KIP-455) way to ask for a reassignment: topic, partition, target replicas."""

    path = "/admin/reassign_partitions"

    @staticmethod
    def encode(reassignment: dict[tuple[str, int], list[int]]) -> bytes:
        return _encode_partition_list(sorted(reassignment), reassignment)

    @staticmethod
    def decode(data: bytes) -> dict[tuple[str, int], list[int]]:
        doc = _load(data) or {}
        return {(e["topic"], int(e["partition"])): list(e["replicas"]) for e in doc.get("partitions", [])}


class PreferredReplicaElectionZNode:
    path = "/admin/preferred_replica_election"

    @staticmethod
    def encode(partitions: list[tuple[str, int]]) -> bytes:
        return _encode_partition_list(sorted(partitions))

    @staticmethod
    def decode(data: bytes) -> list[tuple[str, int]]:
        doc = _load(data) or {}
        return [(e["topic"], int(e["partition"])) for e in doc.get("partitions", [])]


class IsrChangeNotificationZNode:
    """Brokers create sequential children after ISR changes; the controller reads and deletes them."""

    path = "/isr_change_notification"
    prefix = "/isr_change_notification/isr_change_"

    encode = staticmethod(PreferredReplicaElectionZNode.encode)
    decode = staticmethod(PreferredReplicaElectionZNode.decode)


class LogDirEventNotificationZNode:
    """A broker whose log directory failed creates a persistent sequential child; the controller reads and
    deletes them (Kafka's LogDirEventNotificationSequenceZNode: ``{"version":1,"broker":N,"event":1}``)."""

    path = "/log_dir_event_notification"
    prefix = "/log_dir_event_notification/log_dir_event_"
    LOG_DIR_FAILURE_EVENT = 1

    @classmethod
    def encode(cls, broker_id: int) -> bytes:
        return _dump({"version": 1, "broker": broker_id, "event": cls.LOG_DIR_FAILURE_EVENT})

    @staticmethod
    def decode(data: bytes) -> int | None:
        """The broker id, or None for a znode without one."""
        doc = _load(data)
        if not isinstance(doc, dict) or "broker" not in doc:
            return None
        return int(doc["broker"])


# --- old consumers' offsets --------------------------------------------------------------------

class ConsumerOffsetZNode:
    """An OffsetCommit v0 offset (Kafka 2.8 keeps v0 commits in ZooKeeper, as the old consumers did): the
    offset in decimal text at /consumers/<group>/offsets/<topic>/<partition>."""

    @staticmethod
    def path(group: str, topic: str, partition: int) -> str:
        return f"/consumers/{group}/offsets/{topic}/{partition}"

    @staticmethod
    def encode(offset: int) -> bytes:
        return str(offset).encode()

    @staticmethod
    def decode(data: bytes) -> int:
        return int(data.decode())


# --- configs --------------------------------------------------------------------------------------

class ConfigEntityZNode:
    """Per-entity config overrides: /config/topics/<topic>, /config/brokers/<id>, and the client quotas
    /config/clients/<client-id>, /config/users/<user>, /config/users/<user>/clients/<client-id> (names
    sanitized, ``<default>`` for the defaults)."""

    @staticmethod
    def path(entity_type: str, entity_name: str) -> str:
        return f"/config/{entity_type}/{entity_name}"

    @staticmethod
    def encode(config: dict[str, str]) -> bytes:
        return _dump({"version": 1, "config": dict(sorted(config.items()))})

    @staticmethod
    def decode(data: bytes | None) -> dict[str, str]:
        doc = _load(data)
        return {} if doc is None else {k: str(v) for k, v in doc.get("config", {}).items()}


def sanitize_entity_name(name: str) -> str:
    """User and client-id znode names, as Kafka's Sanitizer: URL-encoded (UTF-8), '*' and ' ' as %2A, %20;
    "User:alice" -> "User%3Aalice"."""
    safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_"
    return "".join(c if c in safe else "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in name)


def desanitize_entity_name(name: str) -> str:
    return urllib.parse.unquote_plus(name)


class ConfigChangeNotificationZNode:
    """Sequential ``config_change_`` children tell brokers which entity's overrides changed."""

    path = "/config/changes"
    prefix = "/config/changes/config_change_"

    @staticmethod
    def encode(entity_type: str, entity_name: str) -> bytes:
        return _dump({"version": 2, "entity_path": f"{entity_type}/{entity_name}"})

    @staticmethod
    def decode(data: bytes) -> tuple[str, str]:
        entity_type, _, entity_name = _load(data)["entity_path"].partition("/")
        return entity_type, entity_name


# --- producer ids ---------------------------------------------------------------------------------

@dataclass
class ProducerIdBlock:
    broker_id: int
    block_start: int
    block_end: int  # inclusive

    @property
    def size(self) -> int:
        return self.block_end - self.block_start + 1


class ProducerIdBlockZNode:
    """The last block of producer ids handed out; brokers claim the next one with a versioned write."""

    path = "/latest_producer_id_block"
    BLOCK_SIZE = 1000

    @staticmethod
    def encode(block: ProducerIdBlock) -> bytes:
        return _dump({"version": 1, "broker": block.broker_id,
                      "block_start": str(block.block_start), "block_end": str(block.block_end)})

    @staticmethod
    def decode(data: bytes | None) -> ProducerIdBlock | None:
        doc = _load(data)
        if doc is None:
            return None
        return ProducerIdBlock(int(doc["broker"]), int(doc["block_start"]), int(doc["block_end"]))

    @classmethod
    def next_block(cls, previous: ProducerIdBlock | None, broker_id: int) -> ProducerIdBlock:
        start = 0 if previous is None else previous.block_end + 1
        return ProducerIdBlock(broker_id, start, start + cls.BLOCK_SIZE - 1)


# Paths a broker or controller creates at start-up if they are missing (Kafka's persistent paths).
PERSISTENT_PATHS = (
    "/consumers", BrokerIdsZNode.path, TopicsZNode.path, "/config/changes", "/admin/delete_topics",
    "/brokers/seqid", IsrChangeNotificationZNode.path, "/config/topics", "/config/clients",
    "/config/users", "/config/brokers", LogDirEventNotificationZNode.path,
)  # not /latest_producer_id_block: made with its first block (an empty one would stop a Kafka 2.8 broker)
