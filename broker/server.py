"""The composition root: ``odradek-server <server.properties> [--override key=value]...``.

KafkaServer starts the pieces in Kafka's order: ZooKeeper session and cluster id, the log manager
(recovery happens here), the replica manager and metadata cache, the socket server (so the bound
ports are known), the broker registration in ZooKeeper (which gives the broker epoch), then the
controller, which every broker runs and one wins. Shutdown goes in reverse and leaves clean-shutdown
markers and checkpoints behind, so the next start skips recovery.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING, Any, Callable

from ..controller import state_change_log
from ..controller.admin_zk import AdminZkClient
from ..controller.channel_manager import inter_broker_connect
from ..controller.kafka_controller import KafkaController
from ..controller.zk_client import KafkaZkClient, ZkNodeExistsError
from ..controller.zk_data import BrokerInfo
from ..protocol import messages
from .apis import create_partitions, create_topics, delete_topics, fetch, inter_broker, list_offsets, metadata
from .apis import controlled_shutdown as controlled_shutdown_api
from .apis import alter_isr as alter_isr_api
from .apis import describe_configs, group_apis, offset_apis, offset_for_leader_epoch, produce, producers
from .apis import write_txn_markers
from .apis import txn_apis
from .apis import alter_configs, delete_records
from .apis import alter_replica_log_dirs, describe_log_dirs
from .apis import elect_leaders, reassignment_apis
from .apis import client_quotas as client_quotas_api
from .apis import describe_cluster, describe_producers, sasl_plaintext
from .apis import scram_credentials
from .apis import acl_apis
from .apis import api_versions
from .apis.authorization import AuthHelper
from .apis.services import BrokerServices
from .broker_id import ONE_LINE_STARTUP_ERRORS, FatalStartupError, resolve_broker_id
from .controlled_shutdown import controlled_shutdown
from .coordinator.group.coordinator import GroupCoordinator
from .coordinator.transaction.coordinator import TransactionCoordinator
from .dynamic_config import DynamicConfigManager
from .config import ConfigError, KafkaConfig, load_config
from .kafka_apis import KafkaApis
from .log import LogManager
from .log_dir_failure_handler import LogDirFailureHandler
from .log.file_handles import HANDLES, budget_for, raise_descriptor_limit
from .log.cleaner import CleanerConfig, cleaner_log
from .log.free_space import CHECK_INTERVAL_MS as FREE_SPACE_CHECK_INTERVAL_MS, FreeSpaceMonitor
from .log.log_manager import PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS
from .memory_tuning import (MMAP_THRESHOLD, REFREEZE_CHECK_MS, TRIM_THRESHOLD, Refreezer, collect_and_freeze,
                            keep_freed_buffers)
from .log.scheduler import Scheduler
from .metadata_cache import MetadataCache
from .broker_state import BrokerState
from .metrics import BrokerMetrics
from .metrics.log_format import setup_logging as _setup_logging
from .network.request_channel import RequestChannel
from .network.socket_server import SocketServer
from .isr_manager import PROPAGATION_CHECK_INTERVAL_MS, IsrManager
from .producer_id_manager import ProducerIdManager
from .quota.client_quotas import ClientQuotas
from .replica_fetcher import FetcherSettings, ReplicaFetcherManager
from .replica_manager import ReplicaManager
from .replica_selector import replica_selector
from .replication_quota import ReplicationQuotas
from .request_handler import KafkaRequestHandlerPool
from .security.credential_cache import CredentialCache
from .security.acl_authorizer import AclAuthorizer

if TYPE_CHECKING:
    from .metrics.request_metrics import RequestMetrics

log = logging.getLogger("odradek.server")

_API_MODULES = (api_versions, produce, fetch, list_offsets, metadata, create_topics, delete_topics,
                inter_broker, controlled_shutdown_api, alter_isr_api,
                offset_for_leader_epoch, producers, group_apis, offset_apis, create_partitions,
                describe_configs, alter_configs, delete_records, write_txn_markers,
                txn_apis, describe_log_dirs, alter_replica_log_dirs,
                elect_leaders, reassignment_apis, client_quotas_api, describe_cluster, describe_producers,
                sasl_plaintext, scram_credentials, acl_apis)
_NEVER_MS = 2 ** 62  # Kafka's Long.MaxValue defaults: "never"
SWITCH_INTERVAL_S = 0.0005


class KafkaServer:
    def __init__(self, config: KafkaConfig) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.broker_epoch = -1
        self.zk: KafkaZkClient | None = None
        self.log_manager: LogManager | None = None
        self.socket_server: SocketServer | None = None
        self.replica_manager: ReplicaManager | None = None
        self.fetcher_manager: ReplicaFetcherManager | None = None
        self.isr_manager: IsrManager | None = None
        self.controller: KafkaController | None = None
        self.group_coordinator: GroupCoordinator | None = None
        self.transaction_coordinator: TransactionCoordinator | None = None
        self.dynamic_config: DynamicConfigManager | None = None
        self.client_quotas = ClientQuotas.from_config(config)
        self.credentials = CredentialCache()  # SCRAM users, from /config/users
        self.authorizer: AclAuthorizer | None = None
        self._tasks: list[asyncio.Task] = []
        self._session_expired = False
        self._stopped = asyncio.Event()
        self.broker_state = BrokerState.NOT_RUNNING
        self.metrics = BrokerMetrics(self)

    async def _blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    async def startup(self) -> None:
        cfg = self.config
        self.broker_state = BrokerState.STARTING
        messages.compile_all()  # ~1 s once, instead of a first-use pause on live requests
        if cfg.metrics_port >= 0:  # up first, so a scrape during a slow start-up sees the process
            await self.metrics.start(cfg.metrics_host, cfg.metrics_port)
            log.info("Prometheus metrics on %s", self.metrics.urls())
        loop = asyncio.get_running_loop()
        zk = KafkaZkClient(cfg.get("zookeeper.connect"), cfg.get("zookeeper.session.timeout.ms"),
                           cfg.zookeeper_connection_timeout_ms,
                           on_event=lambda kind, state: loop.call_soon_threadsafe(self._on_session_event, state))
        self.zk = zk
        await self._blocking(zk.start)
        await self._blocking(zk.create_top_level_paths)
        cluster_id = await self._blocking(zk.get_or_create_cluster_id)
        # meta.properties checks and broker.id auto-generation, as Kafka's getOrGenerateBrokerId
        self.broker_id = await self._blocking(resolve_broker_id, cfg, cluster_id,
                                              lambda: zk.generate_broker_id(cfg.get("reserved.broker.max.id")))
        await self._blocking(self.credentials.load_all, zk)  # before the listeners open
        topic_configs = await self._blocking(self._all_topic_configs)
        # Dynamic broker configs (/config/brokers) first: the logs open with them as their defaults.
        dynamic = self.dynamic_config = DynamicConfigManager(zk, self.broker_id, cfg, None)
        await self._blocking(dynamic.load_broker_configs)
        self.broker_state = BrokerState.RECOVERY
        self.log_manager = await self._blocking(lambda: LogManager(
            cfg.log_dirs, dynamic.effective_config.topic_defaults(), broker_id=self.broker_id,
            cluster_id=cluster_id,
            topic_configs=topic_configs,
            max_producer_id_expiration_ms=cfg.get("transactional.id.expiration.ms"),
            scheduler=Scheduler(cfg.get("background.threads")),
            recovery_threads=cfg.get("num.recovery.threads.per.data.dir")))
        cleaner_log.configure_from(cfg)
        try:
            self.log_manager.start_cleaner(CleanerConfig.from_kafka_config(dynamic.effective_config))
        except ValueError as exc:  # a dedupe buffer too small for one entry per thread (Kafka's require)
            raise FatalStartupError(str(exc)) from None
        cache = MetadataCache(self.broker_id)
        cache.cluster_id = cluster_id
        rm = self.replica_manager = ReplicaManager(
            self.broker_id, self.log_manager, cache,
            fetch_purge_interval=cfg.get("fetch.purgatory.purge.interval.requests"),
            produce_purge_interval=cfg.get("producer.purgatory.purge.interval.requests"),
            delete_records_purge_interval=cfg.get("delete.records.purgatory.purge.interval.requests"),
            topic_stats=self.metrics.topic_stats,
            replication_quotas=self._replication_quotas(dynamic, topic_configs),
            replica_selector=replica_selector(cfg.get("replica.selector.class")))
        rm.start()
        self._start_replication(zk)
        # an I/O error takes its log dir offline: its partitions stop, the controller is told (KIP-112)
        LogDirFailureHandler(rm, self.broker_id, lambda: zk.propagate_log_dir_event(self.broker_id),
                             zk.close).start(asyncio.get_running_loop())
        auth = AuthHelper()  # every check passes without an authorizer
        if cfg.get("authorizer.class.name"):  # ACLs cached and watched before the first request is served
            self.authorizer = AclAuthorizer.from_config(cfg, zk)
            await self._blocking(self.authorizer.start)
            auth = AuthHelper(self.authorizer)
        producer_ids = ProducerIdManager(self.broker_id, zk)
        groups = self.group_coordinator = GroupCoordinator(self.broker_id, cfg, rm)
        groups.startup()
        txn = self.transaction_coordinator = TransactionCoordinator(
            self.broker_id, cfg, rm, cache, producer_ids.generate_producer_id, cfg.inter_broker_listener_name)
        # The coordinators are built with the replica manager, so it is told of them afterwards.
        rm.on_leadership_change = lambda led, not_led: (
            groups.on_leadership_change(led, not_led), txn.on_leadership_change(led, not_led))
        dynamic.log_manager = self.log_manager
        dynamic.credentials = self.credentials
        dynamic.client_quotas = self.client_quotas
        # Built now so that the handlers hold it from the first request; it starts (and may be elected)
        # only once this broker is registered, below. Until then it is not active, as before it existed.
        controller = KafkaController(cfg, zk, self.broker_id, lambda: self.broker_epoch)
        services = BrokerServices(cfg, self.broker_id, cache, rm, lambda: self.broker_epoch,
                                  admin=AdminZkClient(zk, cfg), zk=zk, producer_ids=producer_ids,
                                  controller=controller, group_coordinator=groups, transaction_coordinator=txn,
                                  dynamic_config=dynamic, client_quotas=self.client_quotas, auth=auth)
        await dynamic.startup()  # watches /config/changes
        apis = KafkaApis()
        for module in _API_MODULES:
            module.register(apis, services)
        apis.on_response = self.metrics.request_metrics.record_errors
        apis.throttle = self.client_quotas.throttle_response
        self.socket_server = build_socket_server(cfg, apis, self.credentials, self.metrics.request_metrics)
        # Bound now (registration names the ports), serving only once registered and the controller has
        # started, as Kafka 2.8's startProcessingRequests at the end of start-up: while a crashed
        # predecessor's registration lingers, a client waits instead of being told there are no brokers.
        await self.socket_server.start(start_processing=False)
        self.broker_epoch = await self._register()
        state_change_log.configure_from(cfg)
        self.controller = controller
        await controller.startup()
        self.socket_server.start_processing_requests()
        self._start_periodic_tasks()
        self.broker_state = BrokerState.RUNNING
        log.info("[KafkaServer id=%d] started (cluster id %s, listeners %s)", self.broker_id, cluster_id,
                 ", ".join(f"{e.name}://{e.host}:{self.socket_server.port(e.name)}" for e in cfg.listeners))

    def _on_session_event(self, state: str) -> None:
        """After a session expired, the broker's ephemeral registration is gone: register again in the
        new session (a new broker epoch), as Kafka's broker does on session re-establishment."""
        self.metrics.zk_stats.on_session_event(state)
        if state == "expired":
            log.warning("ZooKeeper session expired; broker %d will register again", self.broker_id)
            self._session_expired = True
        elif state == "connected" and self._session_expired and self.broker_epoch >= 0:
            self._session_expired = False
            self._tasks.append(asyncio.get_running_loop().create_task(self._reregister()))

    async def _reregister(self) -> None:
        try:
            self.broker_epoch = await self._register()
        except Exception:
            log.exception("Broker %d could not register again after its session expired", self.broker_id)

    async def _register(self) -> int:
        """Register in ZooKeeper. After a crash the old ephemeral registration lives until its session
        expires; Kafka fails to start then, we wait for it (up to the session timeout, and a margin)."""
        assert self.zk is not None
        info = self._broker_info()
        deadline = time.monotonic() + self.config.get("zookeeper.session.timeout.ms") * 1.5 / 1000 + 5
        while True:
            try:
                return await self._blocking(self.zk.register_broker, info)
            except ZkNodeExistsError:
                if time.monotonic() > deadline:
                    raise
                log.info("Broker %d is still registered by a previous session; waiting for it to expire",
                         self.broker_id)
                await asyncio.sleep(0.5)

    def _all_topic_configs(self) -> dict[str, dict[str, str]]:
        assert self.zk is not None
        return {t: c for t in self.zk.get_all_topics() if (c := self.zk.get_entity_config("topics", t))}

    def _broker_info(self) -> BrokerInfo:
        """The registration: advertised listeners, with the bound port where the listener asked for 0."""
        assert self.socket_server is not None
        endpoints = []
        for e in self.config.advertised_listeners:
            port = e.port or self.socket_server.port(e.name)
            endpoints.append((e.name, e.host or socket.getfqdn(), port))
        protocols = {e.name: e.security_protocol for e in self.config.listeners}
        return BrokerInfo(self.broker_id, endpoints, self.config.get("broker.rack"), protocols)

    def _replication_quotas(self, dynamic: DynamicConfigManager, topic_configs: dict) -> ReplicationQuotas:
        """Replication throttles from the broker's rates in force and every topic's throttled replicas
        (Kafka's DynamicConfigManager applies all stored entity configs at start-up); later changes
        come through the dynamic config manager."""
        quotas = ReplicationQuotas.from_config(self.config, self.broker_id)
        quotas.apply_broker_config(dynamic.effective_config)
        for topic, overrides in topic_configs.items():
            quotas.apply_topic_config(topic, overrides)
        dynamic.replication_quotas = quotas
        return quotas

    def _start_replication(self, zk: KafkaZkClient) -> None:
        """Replica fetchers (follower side) and the ISR manager (leader side) of the replica manager."""
        rm = self.replica_manager
        assert rm is not None
        self.fetcher_manager = ReplicaFetcherManager(rm, FetcherSettings.from_config(self.config, self.broker_id),
                                                     self.config.inter_broker_listener_name)
        self.isr_manager = IsrManager(zk, self.broker_id, rm.clock, on_isr_changed=rm.on_isr_changed)
        rm.attach_replication(self.fetcher_manager, self.isr_manager)

    # -- background work --------------------------------------------------------------------------

    def _start_periodic_tasks(self) -> None:
        cfg, lm = self.config, self.log_manager
        assert lm is not None
        jobs: list[tuple[str, int, Callable[[], Any]]] = [
            ("recovery-point-checkpoint", cfg.get("log.flush.offset.checkpoint.interval.ms"),
             lm.checkpoint_recovery_points),
            ("log-start-offset-checkpoint", cfg.get("log.flush.start.offset.checkpoint.interval.ms"),
             lm.checkpoint_log_start_offsets),
            ("highwatermark-checkpoint", cfg.get("replica.high.watermark.checkpoint.interval.ms"),
             lm.checkpoint_high_watermarks),
        ]
        flush_ms = cfg.get("log.flush.scheduler.interval.ms")
        if flush_ms < _NEVER_MS:
            jobs.append(("log-flusher", flush_ms, lm.flush_dirty_logs))
        jobs.append(("producer-expiration", PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, lm.remove_expired_producers))
        free_space = FreeSpaceMonitor(lambda: lm.live_log_dirs, cfg.get("odradek.log.dir.free.space.warning.bytes"))
        jobs.append(("log-dir-free-space", FREE_SPACE_CHECK_INTERVAL_MS, free_space.check))
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._every(name, ms, fn), name=name) for name, ms, fn in jobs]
        self._tasks.append(loop.create_task(self._every_on_loop(
            "log-retention", cfg.get("log.retention.check.interval.ms"), self._cleanup_logs), name="log-retention"))
        # ISR jobs run on the loop (they touch partitions); Kafka checks lag every replica.lag.time.max.ms / 2.
        rm, isr = self.replica_manager, self.isr_manager
        assert rm is not None and isr is not None
        lag_ms = cfg.get("replica.lag.time.max.ms")
        self._tasks.append(loop.create_task(self._every_on_loop(
            "isr-expiration", max(1, lag_ms // 2), lambda: rm.shrink_lagging_isrs(lag_ms)), name="isr-expiration"))
        self._tasks.append(loop.create_task(self._every_on_loop(
            "isr-change-propagation", PROPAGATION_CHECK_INTERVAL_MS, isr.propagate_due_changes),
            name="isr-change-propagation"))
        # objects of partitions created since start-up out of full collections too (memory_tuning)
        refreezer = Refreezer(len(rm.partitions), time.monotonic())
        self._tasks.append(loop.create_task(self._every_on_loop(
            "gc-refreeze", REFREEZE_CHECK_MS, lambda: refreezer.check(len(rm.partitions), time.monotonic())),
            name="gc-refreeze"))
        groups = self.group_coordinator
        assert groups is not None
        self._tasks.append(loop.create_task(self._every_on_loop(
            "group-metadata-cleanup", cfg.get("offsets.retention.check.interval.ms"), groups.cleanup_group_metadata),
            name="group-metadata-cleanup"))
        txn = self.transaction_coordinator
        assert txn is not None
        for name, key, job in (
                ("transaction-abort", "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                 txn.abort_timed_out_transactions),
                ("transactionalId-expiration", "transaction.remove.expired.transaction.cleanup.interval.ms",
                 txn.remove_expired_transactional_ids)):
            self._tasks.append(loop.create_task(self._every_on_loop(name, cfg.get(key), job), name=name))

    async def _every_on_loop(self, name: str, period_ms: int, fn: Callable[[], Any]) -> None:
        while True:
            await asyncio.sleep(period_ms / 1000.0)
            try:
                result = fn()
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                log.exception("Periodic task %s failed", name)

    async def _cleanup_logs(self) -> None:
        """Retention, off the loop; fetch sessions then hear of the log start offsets it moved."""
        lm, rm = self.log_manager, self.replica_manager
        assert lm is not None and rm is not None
        before = {(log_.topic, log_.partition): log_.log_start_offset for log_ in lm.all_logs()}
        await self._blocking(lm.cleanup_logs)
        for log_ in lm.all_logs():
            key = (log_.topic, log_.partition)
            if before.get(key) != log_.log_start_offset:
                rm.note_change(key)

    async def _every(self, name: str, period_ms: int, fn: Callable[[], Any]) -> None:
        while True:
            await asyncio.sleep(period_ms / 1000.0)
            try:
                # On the log scheduler's background.threads workers, as Kafka's KafkaScheduler jobs.
                await asyncio.get_running_loop().run_in_executor(self.log_manager.scheduler.executor, fn)
            except Exception:
                log.exception("Periodic task %s failed", name)

    # -- shutdown ---------------------------------------------------------------------------------

    async def shutdown(self) -> None:
        log.info("[KafkaServer id=%d] shutting down", self.broker_id)
        phases = _Phases()  # one timing line at the end: where a shutdown's seconds went
        if self.zk is not None and self.broker_epoch >= 0 and self.controller is not None:
            # Controlled shutdown first, while this broker still serves (it may be the controller and
            # answer its own request): leadership moves away before the sockets close (Kafka's order).
            self.broker_state = BrokerState.PENDING_CONTROLLED_SHUTDOWN
            await phases.run("controlled shutdown", controlled_shutdown(
                self.config, self.zk, self.broker_id, lambda: self.broker_epoch, inter_broker_connect(self.config)))
        self.broker_state = BrokerState.SHUTTING_DOWN
        for task in self._tasks:
            task.cancel()
        await phases.run("periodic tasks", asyncio.gather(*self._tasks, return_exceptions=True))
        if self.controller is not None:
            await phases.run("controller", self.controller.shutdown())
        if self.dynamic_config is not None:
            await phases.run("config watches", self.dynamic_config.shutdown())
        if self.authorizer is not None:
            await phases.run("authorizer", self._blocking(self.authorizer.close))
        if self.socket_server is not None:
            await phases.run("sockets", self.socket_server.stop())
        if self.fetcher_manager is not None:
            await phases.run("replica fetchers", self.fetcher_manager.shutdown())
        if self.isr_manager is not None:
            await phases.run("ISR manager", self.isr_manager.shutdown())
        if self.group_coordinator is not None:
            await phases.run("group coordinator", _now(self.group_coordinator.shutdown))
        if self.transaction_coordinator is not None:
            await phases.run("transaction coordinator", self.transaction_coordinator.shutdown())
        if self.replica_manager is not None:
            await phases.run("replica manager", _now(self.replica_manager.shutdown))
        if self.log_manager is not None:
            # its shutdown writes the high watermarks with the other checkpoints (once: Kafka's replica manager
            # writes them and its log manager the recovery points and log start offsets)
            await phases.run("logs", self._blocking(self.log_manager.shutdown))
        if self.zk is not None:
            await phases.run("ZooKeeper", self._blocking(self.zk.close))
        state_change_log.close()
        self.broker_state = BrokerState.NOT_RUNNING
        cleaner_log.close()
        await phases.run("metrics", self.metrics.stop())
        log.info("[KafkaServer id=%d] shutdown phases: %s", self.broker_id, phases)
        log.info("[KafkaServer id=%d] shut down completed", self.broker_id)
        self._stopped.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()


def build_socket_server(config: KafkaConfig, apis: KafkaApis, credentials: CredentialCache | None = None,
                        metrics: RequestMetrics | None = None) -> SocketServer:
    """The network side, and the request handler pool between its channel and ``apis`` (num.io.threads)."""
    pool = KafkaRequestHandlerPool(RequestChannel(config.queued_max_requests), apis.dispatch, config.num_io_threads)
    pool.metrics = metrics
    return SocketServer(config, pool, apis.handlers, credentials=credentials)


async def _quietly(awaitable: Any) -> None:
    try:
        await awaitable
    except Exception:
        log.exception("Error during shutdown")


async def _now(fn: Callable[[], Any]) -> None:
    fn()


class _Phases:
    """The shutdown's steps, each run quietly and timed: ``str()`` lists the ones that took 1 ms or more."""

    def __init__(self) -> None:
        self.began = time.monotonic()
        self.took: list[tuple[str, float]] = []

    async def run(self, name: str, awaitable: Any) -> None:
        began = time.monotonic()
        await _quietly(awaitable)
        self.took.append((name, time.monotonic() - began))

    def __str__(self) -> str:
        steps = ", ".join(f"{name} {s * 1000:.0f} ms" for name, s in self.took if s >= 0.001)
        return f"{steps or 'none took 1 ms'}; total {(time.monotonic() - self.began) * 1000:.0f} ms"


# -- command line ---------------------------------------------------------------------------------

def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="odradek-server", description="Start an Odradek broker.")
    parser.add_argument("config", help="server.properties file")
    parser.add_argument("--override", action="append", default=[], metavar="key=value",
                        help="override a property of the file (repeatable)")
    return parser.parse_args(argv)


def setup_logging() -> None:
    # ODRADEK_LOG_LEVEL, ODRADEK_LOG_FORMAT=json, ODRADEK_LOG_LEVELS / KAFKA_LOG4J_LOGGERS (metrics/log_format.py)
    _setup_logging(os.environ)


async def serve(config: KafkaConfig) -> int:
    server = KafkaServer(config)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    starting = loop.create_task(server.startup())
    stopping = loop.create_task(stop.wait())
    await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():  # a signal during start-up (e.g. still waiting for ZooKeeper): give up now
        log.info("Start-up interrupted by a signal")
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        try:
            async with asyncio.timeout(5):
                await server.shutdown()
        except TimeoutError:
            pass
        # A blocking ZooKeeper connect may still hold an executor thread, which the loop would wait
        # for on exit: leave without it (nothing was registered or written yet).
        logging.shutdown()
        os._exit(0)
    exc = starting.exception()
    if exc is not None:
        log.error("Fatal error during KafkaServer startup: %s", exc,
                  exc_info=not isinstance(exc, (OSError, *ONE_LINE_STARTUP_ERRORS)))
        stopping.cancel()
        await server.shutdown()
        return 1
    log.info("%d objects built by start-up frozen out of the garbage collector's full collections",
             collect_and_freeze())
    await stopping
    await server.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        config, warnings = load_config(args.config, args.override, os.environ)
        config.listener_security()  # key and trust stores load now: a bad one is a one-line error
    except ConfigError as exc:
        print(f"odradek-server: {exc}", file=sys.stderr)
        return 1
    setup_logging()
    for warning in warnings:
        log.warning("%s", warning)
    soft, raised = raise_descriptor_limit()  # as many servers do; segment files stay within it (file_handles)
    HANDLES.configure(budget_for(raised))
    log.info("Open-file limit (ulimit -n) %d%s; up to %d segment files kept open", raised,
             f", raised from {soft}" if raised != soft else "", HANDLES.budget)
    if keep_freed_buffers():  # read and request buffers reuse the heap (memory_tuning)
        log.info("malloc: blocks up to %d MiB come from the heap, %d MiB of free heap kept for reuse",
                 MMAP_THRESHOLD >> 20, TRIM_THRESHOLD >> 20)
    # The event loop shares the GIL with kazoo's threads and the leader epoch checkpoint writers; with
    # Python's 5 ms switch interval each of their wake-ups can wait that long behind a busy loop, which
    # made thousands of checkpoint writes several times slower (benchmarks/bench_scale.py).
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    import uvloop
    return uvloop.run(_serve_then_exit(config))


async def _serve_then_exit(config: KafkaConfig) -> int:
    """``serve``, then leave at once: everything is closed, flushed and checkpointed by then. The event loop's
    and the interpreter's teardown (cancelling what is left, joining executor threads, freeing the objects of
    every partition one by one) took 12 s at 10,000 partitions; a JVM's exit does not walk its heap either."""
    code = await serve(config)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
