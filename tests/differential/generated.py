"""Generated sequences: for every API and every version we advertise, requests built from the message's own
field declarations with values drawn (by a seeded random generator) from pools of meaningful values: existing
and unknown topics, valid and invalid partitions, offsets, epochs, ids, empty and absent arrays.

The same seed gives the same requests on both sides. Requests that would change the cluster in a way that
depends on timing stay on the error paths: destructive and controller APIs only name what does not exist
(or carry a stale controller epoch), validate_only is set where the request has it, waits are short, and a
ControlledShutdown names a broker that is not there.
"""

from __future__ import annotations

import random
from typing import Any, Iterable

from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS, ApiKey as K
from odradek.protocol.messages import REQUESTS
from odradek.protocol.types import ZERO_UUID

from .harness import Side, build
from .scenarios_data import TOPIC, batch

REQUESTS_PER_VERSION = 3
SEED = 28  # the number; change it to explore other sequences

# APIs that change what later requests see: only unknown or invalid names, never the module's topics.
DESTRUCTIVE = {K.DELETE_TOPICS, K.DELETE_RECORDS, K.CREATE_PARTITIONS, K.ALTER_CONFIGS, K.INCREMENTAL_ALTER_CONFIGS,
               K.ALTER_PARTITION_REASSIGNMENTS, K.ELECT_LEADERS, K.LEADER_AND_ISR, K.STOP_REPLICA, K.UPDATE_METADATA,
               K.WRITE_TXN_MARKERS, K.DELETE_GROUPS, K.OFFSET_DELETE, K.CREATE_TOPICS, K.JOIN_GROUP, K.SYNC_GROUP,
               K.LEAVE_GROUP, K.HEARTBEAT, K.OFFSET_COMMIT, K.TXN_OFFSET_COMMIT, K.ADD_PARTITIONS_TO_TXN,
               K.ADD_OFFSETS_TO_TXN, K.END_TXN, K.INIT_PRODUCER_ID, K.ALTER_USER_SCRAM_CREDENTIALS,
               K.ALTER_CLIENT_QUOTAS, K.CREATE_ACLS, K.DELETE_ACLS, K.PRODUCE}
EXISTING_TOPICS = [TOPIC, "diff-topics"]
INVALID_TOPICS = ["bad name!", ""]
UNKNOWN_TOPICS = ["gen-no-such-topic", *INVALID_TOPICS]
GROUPS = ["gen-no-such-group", ""]
LIST_KEYS = {2: "cleanup.policy", 4: "log.cleanup.policy"}  # a list-typed key of a topic, of a broker


class Generator:
    """Builds request specs (plain dicts for harness.build) of one API at one version."""

    def __init__(self, seed: int):
        self.random = random.Random(seed)

    def request(self, api_key: int, version: int) -> Any:
        message = REQUESTS[api_key]
        spec = self._struct(message.fields, version, api_key)
        if api_key == K.INCREMENTAL_ALTER_CONFIGS:
            _list_keys_for_append(spec)
        return build(api_key, spec)

    def _struct(self, fields: Iterable[Any], version: int, api_key: int) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        for f in fields:
            if not f.present_in(version):
                continue
            spec[f.name] = self._value(f, version, api_key)
        return spec

    def _value(self, f: Any, version: int, api_key: int) -> Any:
        pick = self.random.choice
        if f.struct_name is not None:
            if not f.is_array:
                return self._struct(f.fields, version, api_key)
            return [self._struct(f.fields, version, api_key) for _ in range(pick((0, 1, 1, 2)))]
        if f.is_array:
            return [self._scalar(f.name, f.element, api_key) for _ in range(pick((0, 1, 2)))]
        return self._scalar(f.name, f.type, api_key)

    def _scalar(self, name: str, type_name: str, api_key: int) -> Any:
        pick = self.random.choice
        destructive = api_key in DESTRUCTIVE
        if name in ("validate_only",):
            return True
        if name.endswith("timeout_ms") or name in ("max_wait_ms",):
            return pick((0, 50)) if name != "session_timeout_ms" else pick((1, 10 ** 9))
        if name == "acks":
            return pick((-1, 1, 2))
        if name in ("broker_id",) and api_key == K.CONTROLLED_SHUTDOWN:
            return 7
        if name in ("controller_epoch",):
            return 0  # stale: the module's controllers are at epoch 1 or later
        if name == "resource_type":
            return pick((2, 4, 8))  # topic, broker, broker logger (an unknown type hangs Kafka's AlterConfigs)
        if name == "config_operation":
            return pick((0, 1, 2, 3))  # an unknown one: the hand-written scenario (ACCEPTED.md)
        if name == "records":
            return pick((batch([b"generated"]), b""))
        if type_name == "string":
            if "topic" in name or name in ("name", "resource_name"):
                if api_key in (K.METADATA, K.CREATE_TOPICS):
                    # a legal unknown name would be created (CreateTopics v0 cannot validate only; Metadata
                    # auto-creates), visible at different times, and DeleteTopics would then delete it
                    return pick(EXISTING_TOPICS + INVALID_TOPICS)
                return pick(UNKNOWN_TOPICS if destructive else EXISTING_TOPICS + UNKNOWN_TOPICS)
            if "group" in name or name == "key":
                return pick(GROUPS)
            if "transactional" in name:
                return pick(("gen-no-such-txn", None)) if destructive else pick(("gen-txn", None))
            return pick(("", "x", "gen-value", None))
        if type_name == "bool":
            return pick((True, False))
        if type_name in ("int8", "int16"):
            return pick((-1, 0, 1, 5))
        if type_name == "int32":
            return pick((-1, 0, 1, 99))
        if type_name == "int64":
            return pick((-1, 0, 5, 1 << 40))
        if type_name == "float64":
            return pick((1.0, -1.0))
        if type_name == "bytes":
            return pick((b"", b"\x00\x01"))
        if type_name == "uuid":
            return ZERO_UUID
        raise ValueError(f"no generator for {name}: {type_name}")


def _list_keys_for_append(spec: dict[str, Any]) -> None:
    """APPEND and SUBTRACT name a list key of their resource: of an unknown key Kafka 2.8 fails with a
    NoSuchElementException (its hand-written step and ACCEPTED.md row say why Odradek answers otherwise)."""
    for resource in spec.get("resources") or []:
        for config in resource.get("configs") or []:
            if config.get("config_operation") in (2, 3):
                config["name"] = LIST_KEYS.get(resource.get("resource_type"), config["name"])


def generated_scenarios(seed: int = SEED) -> dict[str, Any]:
    """One generated scenario per advertised API, named after it."""
    return {f"generated.{K(key).name.lower()}": generated_scenario([key], seed + key) for key in KAFKA_2_8_VERSIONS}


def generated_scenario(api_keys: Iterable[int], seed: int = SEED):
    """A scenario sending REQUESTS_PER_VERSION generated requests of each version of each of ``api_keys``."""
    keys = list(api_keys)

    async def scenario(side: Side) -> None:
        generator = Generator(seed)
        for api_key in keys:
            low, high = KAFKA_2_8_VERSIONS[api_key]
            for version in range(low, high + 1):
                for i in range(REQUESTS_PER_VERSION):
                    request = _encodable(generator, api_key, version)
                    if request is not None:
                        await side.call(f"seed {seed} #{i}", api_key, version, request, timeout=10.0)
    return scenario


def _encodable(generator: Generator, api_key: int, version: int) -> Any:
    """A generated request the codec accepts at ``version`` (a null where the version has no nulls is redrawn)."""
    for _ in range(20):
        request = generator.request(api_key, version)
        try:
            request.encode(version)
        except Exception:
            continue
        return request
    return None
