"""Dynamic configuration: topic overrides and dynamic broker configs changed at run time.

As Kafka 2.8's ZooKeeper-mode DynamicConfigManager: AlterConfigs writes the entity's overrides to
``/config/<type>/<name>`` and adds a sequential ``/config/changes/config_change_N`` naming the entity;
every broker watches ``/config/changes``, re-reads the overrides of each entity named in a
notification it has not processed yet and applies them:

- ``topics/<t>``: the topic's overrides become the ``LogConfig`` of every live log of that topic
  (retention, segment size and age, cleanup policy, min.insync.replicas, max.message.bytes, ...),
  so the change takes effect without a restart (retention at the next retention check, as Kafka).
- ``users/<user>``: the user's SCRAM credentials, re-read into the credential cache of the SASL listeners.
- ``brokers/<id>`` and ``brokers/<default>``: the dynamic broker configs of this broker and the
  cluster-wide defaults. Only the log keys that are synonyms of topic keys can be dynamic here
  (Kafka's DynamicLogConfig); they change the topic defaults of every log without an override.
  The replication throttle rates are dynamic too (Kafka's DynamicConfig.Broker); they and the topics'
  throttled-replica lists go to ``replication_quotas`` (broker/replication_quota.py) when it is set.
  So are the log cleaner's keys (Kafka's LogCleaner.ReconfigurableConfigs): a change restarts the
  cleaner threads with the new values.
- ``clients/<c>``, ``users/<u>``, ``users/<u>/clients/<c>`` (names sanitized, ``<default>``): client quotas,
  handed to ``client_quotas`` (broker/quota/) on the event loop, where the request path reads them. At
  start-up every stored user and client config is applied first, as Kafka's DynamicConfigManager does.

Notifications are processed in sequence order, each once; at start-up every existing one is
processed (cheap and idempotent), as Kafka does. Kafka also purges notifications older than 15
minutes; we leave them (they are tiny, and the purge needs the znodes' creation times).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .config import KafkaConfig
from .config_keys import TOPIC_SYNONYMS
from .log.cleaner import RECONFIGURABLE_KEYS as CLEANER_RECONFIGURABLE_KEYS
from .log.cleaner import CleanerConfig
from .replication_quota import RATES as REPLICATION_RATES
from .security.sensitive_configs import loggable, loggable_entity_config

if TYPE_CHECKING:
    from ..controller.zk_client import KafkaZkClient
    from .log import LogManager
    from .security.credential_cache import CredentialCache

log = logging.getLogger(__name__)

CHANGES_PATH = "/config/changes"
DEFAULT_ENTITY = "<default>"  # Kafka's ConfigEntityName.Default: the cluster-wide broker defaults

# Broker keys that may change at run time (Kafka's DynamicLogConfig.ReconfigurableConfigs: the broker
# synonyms of topic-level keys, with the coarser-unit twins, minus log.message.format.version).
DYNAMIC_BROKER_KEYS: frozenset[str] = frozenset(
    {syn for syn in TOPIC_SYNONYMS.values() if syn is not None and syn != "log.message.format.version"}
    | {"log.roll.hours", "log.roll.jitter.hours", "log.retention.minutes", "log.retention.hours",
       "log.flush.scheduler.interval.ms"}
    | set(REPLICATION_RATES)
    | CLEANER_RECONFIGURABLE_KEYS)


class DynamicConfigManager:
    """Watches ``/config/changes`` and applies config changes to this broker's logs."""

    def __init__(self, zk: KafkaZkClient, broker_id: int, static_config: KafkaConfig,
                 log_manager: LogManager | None) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.static_config = static_config
        self.log_manager = log_manager
        # The dynamic broker configs as stored in ZooKeeper (strings), per-broker and cluster default.
        self.dynamic_broker: dict[str, str] = {}
        self.dynamic_default: dict[str, str] = {}
        self.effective_config: KafkaConfig = static_config
        self._last_processed: str | None = None
        self._unwatch: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._processing: asyncio.Lock | None = None
        self._pending: asyncio.Task | None = None
        self.applied_changes = 0  # notifications processed (tests and metrics)
        self.replication_quotas: Any = None  # broker.replication_quota.ReplicationQuotas, set by the server
        self.client_quotas: Any = None  # broker.quota.client_quotas.ClientQuotas, set by the server
        self.credentials: CredentialCache | None = None  # SCRAM users

    # -- lifecycle --------------------------------------------------------------------------------

    async def startup(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._processing = asyncio.Lock()
        await self._loop.run_in_executor(None, self.load_broker_configs)
        if self.client_quotas is not None:
            await self._loop.run_in_executor(None, self.load_client_quota_configs)
        # The watch fires once at once with the current children: every existing notification is processed.
        self._unwatch = await self._loop.run_in_executor(None, self.zk.watch_children, CHANGES_PATH,
                                                         self._on_children)

    async def shutdown(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        if self._pending is not None:
            self._pending.cancel()
            await asyncio.gather(self._pending, return_exceptions=True)

    def _on_children(self, children: list[str]) -> None:
        """Kazoo's thread: hand the work to the event loop, which runs it in the executor."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._schedule)

    def _schedule(self) -> None:
        self._pending = asyncio.get_running_loop().create_task(self._process())

    async def _process(self) -> None:
        assert self._processing is not None and self._loop is not None
        async with self._processing:  # one pass at a time, in notification order
            try:
                await self._loop.run_in_executor(None, self.process_notifications)
            except Exception:
                log.exception("Processing config change notifications failed")

    # -- processing (blocking: ZooKeeper reads) ---------------------------------------------------

    def process_notifications(self) -> int:
        """Apply every notification after the last one processed; returns how many were applied."""
        notifications = self.zk.get_config_change_notifications()  # name -> (type, name), oldest first
        new = [(name, entity) for name, entity in notifications.items()
               if self._last_processed is None or name > self._last_processed]
        # Each entity once: its overrides are re-read whole, so only the latest state matters.
        for entity in dict.fromkeys(entity for _, entity in new):
            try:
                self.apply_change(*entity)
            except Exception:
                log.exception("Cannot apply the config change of %s/%s", *entity)
        if new:
            self._last_processed = new[-1][0]
        self.applied_changes += len(new)
        return len(new)

    def apply_change(self, entity_type: str, entity_name: str) -> None:
        if entity_type == "topics":
            overrides = self.zk.get_entity_config("topics", entity_name)
            log.info("Processing override for entityPath: topics/%s with config: %s", entity_name, overrides)
            self.log_manager.update_topic_config(entity_name, overrides)
            if self.replication_quotas is not None:
                self.replication_quotas.apply_topic_config(entity_name, overrides)
        elif entity_type == "brokers" and entity_name in (DEFAULT_ENTITY, str(self.broker_id)):
            self.load_broker_configs()
        elif entity_type in ("users", "clients") and self.client_quotas is not None:
            config = self.zk.get_entity_config(entity_type, entity_name)
            log.info("Processing override for entityPath: %s/%s with config: %s", entity_type, entity_name,
                     loggable_entity_config(config))  # a user's SCRAM credentials are never logged
            self._on_loop(self.client_quotas.apply_entity_config, entity_type, entity_name, config)
        if entity_type == "users" and self.credentials is not None:  # SCRAM credentials changed
            self.credentials.load_user(self.zk, entity_name)
        # other entities (other brokers) have nothing to change here

    def load_client_quota_configs(self) -> None:
        """Every stored user, (user, client-id) and client-id config (Kafka's start-up bootstrap)."""
        entities = [("users", name, config) for name, config in self.zk.get_all_entity_configs("users").items()]
        entities += [("users", name, config)
                     for name, config in self.zk.get_all_child_entity_configs("users", "clients").items()]
        entities += [("clients", name, config) for name, config in self.zk.get_all_entity_configs("clients").items()]
        for entity_type, name, config in entities:
            self._on_loop(self.client_quotas.apply_entity_config, entity_type, name, config)

    def _on_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn`` on the broker's event loop (this runs in an executor thread): the quota managers are
        the request path's, which has no locks."""
        loop = self._loop
        if loop is None or loop.is_closed():
            fn(*args)
            return
        loop.call_soon_threadsafe(self._guarded, fn, args)

    @staticmethod
    def _guarded(fn: Callable[..., Any], args: tuple) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("Cannot apply the client quota config %s", args[:2])

    def load_broker_configs(self) -> None:
        """Re-read this broker's and the default dynamic configs; new topic defaults for every log."""
        self.dynamic_default = self.zk.get_entity_config("brokers", DEFAULT_ENTITY)
        self.dynamic_broker = self.zk.get_entity_config("brokers", str(self.broker_id))
        self.effective_config = merged_config(self.static_config, self.dynamic_default, self.dynamic_broker)
        if self.log_manager is not None:
            self.log_manager.update_topic_defaults(self.effective_config.topic_defaults())
            self.log_manager.reconfigure_cleaner(CleanerConfig.from_kafka_config(self.effective_config))
        if self.replication_quotas is not None:
            self.replication_quotas.apply_broker_config(self.effective_config)
        if self.dynamic_default or self.dynamic_broker:
            log.info("Dynamic broker configs: per-broker %s, cluster default %s", loggable(self.dynamic_broker),
                     loggable(self.dynamic_default))


def merged_config(static: KafkaConfig, dynamic_default: Mapping[str, str],
                  dynamic_broker: Mapping[str, str]) -> KafkaConfig:
    """Kafka's precedence: per-broker dynamic > cluster-default dynamic > static > default. Keys that
    are not dynamic (stored by an older broker, or written into ZooKeeper by hand) are ignored; a value
    that no longer parses keeps the static one, as Kafka logs and skips invalid dynamic configs."""
    props = dict(static.originals)
    for layer in (dynamic_default, dynamic_broker):
        for key, value in layer.items():
            if key not in DYNAMIC_BROKER_KEYS:
                continue
            try:
                KafkaConfig({**props, key: value})
            except Exception:
                log.warning("Ignoring invalid dynamic broker config %s=%s", key, value)
                continue
            props[key] = value
    merged = KafkaConfig(props, static.sources)
    return merged
