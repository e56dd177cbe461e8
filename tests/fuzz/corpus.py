"""A valid request for every (api key, version): the seeds the fuzzer mutates.

Built from the message declarations themselves (``protocol/messages``): every field the version carries
gets a plausible value, chosen by the field's name (and the struct it sits in, where a name means
different things), else by its type. Arrays get one element. The values aim at the fuzz topic and group
and at nothing that exists elsewhere: controller requests carry a stale controller epoch (0) and broker
epoch (0), ids name a broker that is not in the cluster (77), admin requests validate only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from odradek.clients.simple_client import build_batch
from odradek.protocol.consumer_protocol import encode_assignment, encode_subscription
from odradek.protocol.messages import REQUESTS
from odradek.protocol.schema import Field, Message

NO_BROKER = 77  # no broker of the fuzz cluster has this id


@dataclass(frozen=True)
class Context:
    topic: str          # an existing topic the fuzzer may write to (never the well-behaved client's)
    group: str = "fuzz-group"
    transactional_id: str = "fuzz-txn"


def _by_name(ctx: Context) -> dict[str, Any]:
    """Values by field name; a callable is called with nothing."""
    return {
        "acks": 1, "allow_auto_topic_creation": False, "auth_bytes": b"", "broker_epoch": 0,
        "broker_id": NO_BROKER, "broker_ids": 0, "client_software_name": "odradek-fuzz",
        "client_software_version": "1.0", "cluster_id": None, "commit_timestamp": -1, "committed": False,
        "config_operation": 0, "configuration_keys": None, "controller_epoch": 0, "controller_id": NO_BROKER,
        "coordinator_epoch": 0, "count": 2, "current_leader_epoch": -1, "delete_partition": False,
        "delete_partitions": False, "election_type": 0, "fetch_offset": 0, "generation_id": -1,
        "generation_id_or_member_epoch": -1, "group_id": ctx.group, "group_instance_id": None,
        "groups": ctx.group, "groups_names": ctx.group, "host": "localhost", "host_name": "localhost",
        "id": NO_BROKER, "index": 0, "is_new": False, "isolation_level": 0, "isr": NO_BROKER,
        "key": ctx.group, "key_type": 0, "last_fetched_epoch": -1, "leader": NO_BROKER, "leader_epoch": 0,
        "listener": "PLAINTEXT", "log_start_offset": -1, "max_bytes": 1 << 20, "max_num_offsets": 1,
        "max_wait_ms": 10, "mechanism": "PLAIN", "member_id": "", "min_bytes": 1, "num_partitions": 1,
        "offset": 0, "offline_replicas": NO_BROKER, "adding_replicas": NO_BROKER,
        "removing_replicas": NO_BROKER, "partition": 0, "partition_epoch": 0, "partition_index": 0,
        "partition_indexes": 0, "partition_max_bytes": 1 << 20, "partitions": 0, "port": 9092,
        "protocol_name": "range", "protocol_type": "consumer", "rack": None, "rack_id": "",
        "rebalance_timeout_ms": 1000, "replica_id": -1, "replicas": 0, "replication_factor": 1,
        "require_stable": False, "resource_name": ctx.topic, "resource_type": 2, "retention_time_ms": -1,
        "security_protocol": 0, "session_epoch": -1, "session_id": 0, "session_timeout_ms": 10000,
        "states_filter": "Stable", "timeout_ms": 1000, "timestamp": -1, "topic": ctx.topic,
        "topic_name": ctx.topic, "topic_names": ctx.topic, "topics": ctx.topic, "transaction_result": False,
        "transaction_timeout_ms": 60000, "transactional_id": ctx.transactional_id, "type": 0,
        "v0_host": "localhost", "v0_port": 9092, "validate_only": True, "zk_version": 0,
        "producer_id": -1, "producer_epoch": -1, "committed_offset": 0, "committed_metadata": "",
        "committed_leader_epoch": -1, "name": ctx.topic, "value": "86400000",
        "include_authorized_operations": False, "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False, "include_documentation": False,
        "include_synonyms": False, "entity_type": "client-id", "entity_name": "fuzz-client", "match_type": 0,
        "remove": False, "strict": False, "records": lambda: build_batch([(b"k", b"fuzz")]),
        "metadata": lambda: encode_subscription([ctx.topic]),
        "assignment": lambda: encode_assignment({ctx.topic: [0]}),
    }


# Where a name means something else inside a struct: (struct, field) -> value.
_IN_STRUCT: dict[tuple[str, str], Any] = {
    ("AlterableConfig", "name"): "retention.ms",
    ("CreateableTopicConfig", "name"): "retention.ms",
    ("DescribeConfigsResource", "configuration_keys"): None,
    ("JoinGroupRequestProtocol", "name"): "range",
    ("MemberIdentity", "member_id"): "fuzz-member",
    ("UpdateMetadataBroker", "rack"): None,
    ("OpData", "key"): "producer_byte_rate",
    ("OpData", "value"): 1048576.0,
    ("ComponentData", "match"): "fuzz-client",
}

_PYTHON_TYPES: dict[str, type | tuple[type, ...]] = {
    "bool": bool, "int8": int, "int16": int, "uint16": int, "int32": int, "uint32": int, "int64": int,
    "float64": float, "string": str, "bytes": (bytes, bytearray), "records": (bytes, bytearray)}
_BY_TYPE: dict[str, Any] = {"bool": False, "int8": 0, "int16": 0, "uint16": 0, "int32": 0, "uint32": 0,
                            "int64": 0, "float64": 0.0, "string": "fuzz", "bytes": b"", "records": None}


def example(message: Message, version: int, ctx: Context) -> Any:
    """A valid ``message`` request at ``version``."""
    return _struct(message.cls, "", message.fields, version, _by_name(ctx))


def examples(ctx: Context, versions: dict[int, tuple[int, int]]) -> list[tuple[int, int, Any]]:
    """(api key, version, request) for every version in ``versions`` (api key -> (min, max))."""
    out = []
    for api_key, (lo, hi) in sorted(versions.items()):
        message = REQUESTS.get(api_key)
        if message is None:
            continue
        for version in range(lo, hi + 1):
            out.append((api_key, version, example(message, version, ctx)))
    return out


def _struct(cls: type, struct_name: str, fields: tuple[Field, ...], version: int, hints: dict[str, Any]) -> Any:
    values = {}
    for f in fields:
        if f.present_in(version):
            values[f.name] = _value(f, struct_name, version, hints)
    return cls(**values)


def _value(f: Field, struct_name: str, version: int, hints: dict[str, Any]) -> Any:
    if f.struct_name is not None:
        element = _struct(f.cls, f.struct_name, f.fields, version, hints)  # type: ignore[arg-type]
        return [element] if f.is_array else element
    key = (struct_name, f.name)
    if key in _IN_STRUCT:
        value = _IN_STRUCT[key]
    elif f.name in hints:
        value = hints[f.name]
    else:
        value = _BY_TYPE.get(f.element, 0)
    if callable(value):
        value = value()
    if value is not None and not isinstance(value, _PYTHON_TYPES.get(f.element, object)):
        value = _BY_TYPE.get(f.element, 0)  # a hint meant for another api's field of that name
    if value is None:
        return None if f.nullable_in(version) else (f.default_value() if not f.is_array else [])
    if f.element == "uuid":
        return f.default_value()
    return [value] if f.is_array else value
