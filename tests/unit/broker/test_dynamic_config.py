"""DynamicConfigManager against an in-memory stand-in for ZooKeeper's config znodes and a real LogManager,
and AlterConfigsApi's incremental operations and validation."""

from __future__ import annotations

import pytest

from odradek.broker.apis.alter_configs import APPEND, DELETE, SET, SUBTRACT, _apply_ops, _validate
from odradek.broker.config import KafkaConfig
from odradek.broker.config_keys import TOPIC_KEYS
from odradek.broker.dynamic_config import DEFAULT_ENTITY, DynamicConfigManager, merged_config
from odradek.broker.log import LogManager
from odradek.protocol.errors import InvalidConfigError, InvalidRequestError  # type: ignore[attr-defined]


class ConfigZNodes:
    """The config part of KafkaZkClient: entity configs and sequential change notifications."""

    def __init__(self) -> None:
        self.configs: dict[tuple[str, str], dict[str, str]] = {}
        self.notifications: dict[str, tuple[str, str]] = {}

    def get_entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        return dict(self.configs.get((entity_type, name), {}))

    def set_entity_config(self, entity_type: str, name: str, config: dict[str, str]) -> None:
        self.configs[(entity_type, name)] = dict(config)
        self.notifications[f"config_change_{len(self.notifications):010d}"] = (entity_type, name)

    def get_config_change_notifications(self) -> dict[str, tuple[str, str]]:
        return dict(sorted(self.notifications.items()))


@pytest.fixture
def static():
    return KafkaConfig({"zookeeper.connect": "zk:2181", "broker.id": "1", "log.retention.hours": "24"})


@pytest.fixture
def logs(tmp_path, static):
    manager = LogManager([str(tmp_path / "logs")], static.topic_defaults(), broker_id=1, cluster_id="c")
    manager.get_or_create_log("orders", 0, {})
    manager.get_or_create_log("orders", 1, {})
    manager.get_or_create_log("other", 0, {"retention.ms": "5000"})
    yield manager
    manager.shutdown()


def test_topic_changes_reach_every_live_log_of_the_topic(logs, static):
    zk = ConfigZNodes()
    manager = DynamicConfigManager(zk, 1, static, logs)
    zk.set_entity_config("topics", "orders", {"retention.ms": "1000", "segment.bytes": "2048",
                                              "cleanup.policy": "compact", "min.insync.replicas": "2"})
    assert manager.process_notifications() == 1
    for p in (0, 1):
        config = logs.get_log("orders", p).config
        assert (config.retention_ms, config.segment_bytes, config.cleanup_policy, config.min_insync_replicas) == \
            (1000, 2048, "compact", 2)
    assert logs.get_log("other", 0).config.retention_ms == 5000
    # Processed once: the same notification does nothing the second time; a deletion goes back to defaults.
    assert manager.process_notifications() == 0
    zk.set_entity_config("topics", "orders", {})
    assert manager.process_notifications() == 1
    assert logs.get_log("orders", 0).config.retention_ms == 24 * 3_600_000


def test_dynamic_broker_configs_change_the_defaults_under_topic_overrides(logs, static):
    zk = ConfigZNodes()
    manager = DynamicConfigManager(zk, 1, static, logs)
    zk.set_entity_config("brokers", DEFAULT_ENTITY, {"log.retention.ms": "60000", "log.segment.bytes": "4096"})
    zk.set_entity_config("brokers", "1", {"log.segment.bytes": "8192"})
    zk.set_entity_config("brokers", "2", {"log.segment.bytes": "1"})  # another broker's: not ours
    manager.process_notifications()
    orders = logs.get_log("orders", 0).config
    assert (orders.retention_ms, orders.segment_bytes) == (60000, 8192)  # per-broker wins over the default
    assert logs.get_log("other", 0).config.retention_ms == 5000  # the topic override wins over both
    assert manager.effective_config.get("log.segment.bytes") == 8192
    # Static keys written by hand are ignored, invalid values keep the static setting.
    zk.set_entity_config("brokers", "1", {"log.dirs": "/x", "log.retention.ms": "soon"})
    manager.process_notifications()
    assert manager.effective_config.log_dirs == static.log_dirs
    assert logs.get_log("orders", 0).config.retention_ms == 60000


def test_merged_config_precedence(static):
    merged = merged_config(static, {"log.retention.minutes": "10"}, {})
    assert merged.log_retention_ms == 600_000  # the dynamic minutes beat the static hours
    merged = merged_config(static, {"log.retention.minutes": "10"}, {"log.retention.ms": "1234"})
    assert merged.log_retention_ms == 1234


def test_incremental_operations():
    defaults = {"cleanup.policy": "delete"}.get
    current = {"retention.ms": "10", "segment.ms": "99"}
    ops = [("retention.ms", DELETE, None), ("segment.bytes", SET, "2048"), ("cleanup.policy", APPEND, "compact")]
    assert _apply_ops(current, ops, TOPIC_KEYS, defaults, "topic") == \
        {"segment.ms": "99", "segment.bytes": "2048", "cleanup.policy": "delete,compact"}
    assert _apply_ops({"cleanup.policy": "delete,compact"}, [("cleanup.policy", SUBTRACT, "delete")], TOPIC_KEYS,
                      defaults, "topic") == {"cleanup.policy": "compact"}
    with pytest.raises(InvalidRequestError, match="append is not allowed for config key: retention.ms"):
        _apply_ops({}, [("retention.ms", APPEND, "1")], TOPIC_KEYS, defaults, "topic")
    with pytest.raises(InvalidConfigError, match="Unknown topic config name: nope"):
        _apply_ops({}, [("nope", SUBTRACT, "1")], TOPIC_KEYS, defaults, "topic")


def test_validation_names_the_key_and_what_it_accepts():
    label = "ConfigResource(type=TOPIC, name='t')"
    with pytest.raises(InvalidRequestError) as raised:
        _validate({"min.insync.replicas": "0"}, TOPIC_KEYS, label, "topic")
    assert raised.value.detail == (f"Invalid config value for resource {label}: Invalid value 0 for configuration "
                                   f"min.insync.replicas: expected an integer >= 1")
    with pytest.raises(InvalidRequestError, match="message.timestamp.type: expected one of: CreateTime, LogAppendTime"):
        _validate({"message.timestamp.type": "Now"}, TOPIC_KEYS, label, "topic")
    with pytest.raises(InvalidRequestError, match="min.compaction.lag.ms"):
        _validate({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, TOPIC_KEYS, label, "topic")
    _validate({"retention.ms": "-1", "cleanup.policy": "compact,delete"}, TOPIC_KEYS, label, "topic")


def test_user_and_client_quota_changes_reach_the_client_quotas(static):
    from odradek.broker.quota.client_quotas import ClientQuotas

    zk = ConfigZNodes()
    quotas = ClientQuotas.from_config(static)
    manager = DynamicConfigManager(zk, 1, static, None)
    manager.client_quotas = quotas  # no event loop: applied at once
    zk.set_entity_config("clients", "slow", {"producer_byte_rate": "200000"})
    zk.set_entity_config("users", "User%3Aalice/clients/<default>", {"consumer_byte_rate": "5000"})
    zk.set_entity_config("users", "<default>", {"request_percentage": "40"})
    assert manager.process_notifications() == 3
    assert quotas.produce.quota("anyone", "slow") == 200_000
    assert quotas.fetch.quota("User:alice", "any-client") == 5000
    assert quotas.request.quota("bob", "app") == 40
    zk.set_entity_config("clients", "slow", {})
    manager.process_notifications()
    assert quotas.produce.quota("anyone", "slow") > 1e18  # removed: unlimited again
