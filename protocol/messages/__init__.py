"""Every message Odradek speaks, by name and by api key.

One module per API family declares the layouts; this package gathers them into the lookup tables
the broker and the clients use (``REQUESTS[api_key]``, ``RESPONSES[api_key]``) and exports each
message's data class under its Kafka name (``ProduceRequest``, ``FetchResponse``, ...).
"""

from __future__ import annotations

from ..schema import Message
from .produce import (
    PRODUCE_REQUEST,
    PRODUCE_RESPONSE,
)
from .fetch import (
    FETCH_REQUEST,
    FETCH_RESPONSE,
    LIST_OFFSETS_REQUEST,
    LIST_OFFSETS_RESPONSE,
    OFFSET_FOR_LEADER_EPOCH_REQUEST,
    OFFSET_FOR_LEADER_EPOCH_RESPONSE,
)
from .metadata import (
    METADATA_REQUEST,
    METADATA_RESPONSE,
    API_VERSIONS_REQUEST,
    API_VERSIONS_RESPONSE,
    DESCRIBE_CLUSTER_REQUEST,
    DESCRIBE_CLUSTER_RESPONSE,
)
from .inter_broker import (
    LEADER_AND_ISR_REQUEST,
    LEADER_AND_ISR_RESPONSE,
    STOP_REPLICA_REQUEST,
    STOP_REPLICA_RESPONSE,
    UPDATE_METADATA_REQUEST,
    UPDATE_METADATA_RESPONSE,
    CONTROLLED_SHUTDOWN_REQUEST,
    CONTROLLED_SHUTDOWN_RESPONSE,
    WRITE_TXN_MARKERS_REQUEST,
    WRITE_TXN_MARKERS_RESPONSE,
)
from .group import (
    FIND_COORDINATOR_REQUEST,
    FIND_COORDINATOR_RESPONSE,
    JOIN_GROUP_REQUEST,
    JOIN_GROUP_RESPONSE,
    HEARTBEAT_REQUEST,
    HEARTBEAT_RESPONSE,
    LEAVE_GROUP_REQUEST,
    LEAVE_GROUP_RESPONSE,
    SYNC_GROUP_REQUEST,
    SYNC_GROUP_RESPONSE,
    DESCRIBE_GROUPS_REQUEST,
    DESCRIBE_GROUPS_RESPONSE,
    LIST_GROUPS_REQUEST,
    LIST_GROUPS_RESPONSE,
    DELETE_GROUPS_REQUEST,
    DELETE_GROUPS_RESPONSE,
)
from .offsets import (
    OFFSET_COMMIT_REQUEST,
    OFFSET_COMMIT_RESPONSE,
    OFFSET_FETCH_REQUEST,
    OFFSET_FETCH_RESPONSE,
    OFFSET_DELETE_REQUEST,
    OFFSET_DELETE_RESPONSE,
)
from .transactions import (
    INIT_PRODUCER_ID_REQUEST,
    INIT_PRODUCER_ID_RESPONSE,
    ADD_PARTITIONS_TO_TXN_REQUEST,
    ADD_PARTITIONS_TO_TXN_RESPONSE,
    ADD_OFFSETS_TO_TXN_REQUEST,
    ADD_OFFSETS_TO_TXN_RESPONSE,
    END_TXN_REQUEST,
    END_TXN_RESPONSE,
    TXN_OFFSET_COMMIT_REQUEST,
    TXN_OFFSET_COMMIT_RESPONSE,
    DESCRIBE_PRODUCERS_REQUEST,
    DESCRIBE_PRODUCERS_RESPONSE,
)
from .topics import (
    CREATE_TOPICS_REQUEST,
    CREATE_TOPICS_RESPONSE,
    DELETE_TOPICS_REQUEST,
    DELETE_TOPICS_RESPONSE,
    DELETE_RECORDS_REQUEST,
    DELETE_RECORDS_RESPONSE,
    CREATE_PARTITIONS_REQUEST,
    CREATE_PARTITIONS_RESPONSE,
    ELECT_LEADERS_REQUEST,
    ELECT_LEADERS_RESPONSE,
    ALTER_PARTITION_REASSIGNMENTS_REQUEST,
    ALTER_PARTITION_REASSIGNMENTS_RESPONSE,
    LIST_PARTITION_REASSIGNMENTS_REQUEST,
    LIST_PARTITION_REASSIGNMENTS_RESPONSE,
    DESCRIBE_LOG_DIRS_REQUEST,
    DESCRIBE_LOG_DIRS_RESPONSE,
)
from .configs import (
    DESCRIBE_CONFIGS_REQUEST,
    DESCRIBE_CONFIGS_RESPONSE,
    ALTER_CONFIGS_REQUEST,
    ALTER_CONFIGS_RESPONSE,
    INCREMENTAL_ALTER_CONFIGS_REQUEST,
    INCREMENTAL_ALTER_CONFIGS_RESPONSE,
)
from .quotas import (
    DESCRIBE_CLIENT_QUOTAS_REQUEST,
    DESCRIBE_CLIENT_QUOTAS_RESPONSE,
    ALTER_CLIENT_QUOTAS_REQUEST,
    ALTER_CLIENT_QUOTAS_RESPONSE,
)
from .sasl import (
    SASL_HANDSHAKE_REQUEST,
    SASL_HANDSHAKE_RESPONSE,
    SASL_AUTHENTICATE_REQUEST,
    SASL_AUTHENTICATE_RESPONSE,
)

# Every message imported above, in declaration order.
ALL_MESSAGES: tuple[Message, ...] = tuple(v for v in dict(globals()).values() if isinstance(v, Message))

REQUESTS: dict[int, Message] = {m.api_key: m for m in ALL_MESSAGES if m.kind == "request"}
RESPONSES: dict[int, Message] = {m.api_key: m for m in ALL_MESSAGES if m.kind == "response"}

# The data classes under their Kafka names: ``from odradek.protocol.messages import ProduceRequest``.
globals().update({m.name: m.cls for m in ALL_MESSAGES})


def compile_all() -> None:
    """Compile every codec now instead of on first use (tests, benchmarks, long-running servers)."""
    for message in ALL_MESSAGES:
        message.compile_all()
