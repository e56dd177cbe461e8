"""Fixtures for tests against real servers (integration and compat): one ZooKeeper per test session, one chroot per test, and
clusters of real broker processes (each with a chroot of its own on that ZooKeeper)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from odradek.tools.local_cluster import LocalCluster
from odradek.tools.local_zookeeper import LocalZooKeeper

# A short ZooKeeper session so a SIGKILLed broker's registration vanishes in seconds (Kafka's default is 18 s)
# and a short controlled-shutdown backoff so stopping a whole cluster at once (teardown) takes seconds.
TEST_BROKER_OVERRIDES = {"zookeeper.session.timeout.ms": "6000", "controlled.shutdown.retry.backoff.ms": "500"}
_CLUSTERS = pytest.StashKey[list]()


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory):
    """A real standalone ZooKeeper shared by the session's integration tests."""
    server = LocalZooKeeper(tmp_path_factory.mktemp("zookeeper"))
    server.start(timeout=60)
    yield server
    server.stop()


@pytest.fixture
def zk_chroot(zookeeper) -> str:
    """A connect string with a chroot of its own (``host:port/test-<uuid>``), so tests never share znodes."""
    return f"{zookeeper.connect_string}/test-{uuid.uuid4().hex}"


@pytest.fixture
def zk_client_factory(zk_chroot):
    """Build started ``KafkaZkClient``s on the test's chroot; they are closed after the test."""
    from odradek.controller.zk_client import KafkaZkClient

    clients = []

    def make(connect: str | None = None, session_timeout_ms: int = 6000, **kwargs) -> KafkaZkClient:
        client = KafkaZkClient(connect or zk_chroot, session_timeout_ms=session_timeout_ms,
                               connection_timeout_ms=10000, **kwargs)
        client.start()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def new_cluster(data_dir: Path, zookeeper: LocalZooKeeper, brokers: int = 1,
                overrides: dict | None = None, **options) -> LocalCluster:
    """A (not yet started) cluster on free ports with a chroot of its own on ``zookeeper``; ``options`` go
    to LocalCluster (e.g. ``metrics_base_port=0``)."""
    return LocalCluster(data_dir, brokers, zookeeper=zookeeper, base_port=0,
                        chroot=f"/odradek-{uuid.uuid4().hex}",
                        broker_overrides={**TEST_BROKER_OVERRIDES, **(overrides or {})}, **options)


@pytest.fixture
def odradek_cluster_factory(zookeeper, tmp_path, request):
    """``make(brokers=1, overrides=None, timeout=60.0)`` starts a cluster of real broker processes and returns
    the ``LocalCluster``; every cluster is stopped after the test, and its broker logs are printed if it fails."""
    clusters: list[LocalCluster] = []
    request.node.stash[_CLUSTERS] = clusters

    def make(brokers: int = 1, overrides: dict | None = None, timeout: float = 60.0) -> LocalCluster:
        cluster = new_cluster(tmp_path / f"cluster-{len(clusters)}", zookeeper, brokers, overrides)
        clusters.append(cluster)
        return cluster.start(timeout)

    yield make
    for cluster in clusters:
        cluster.stop(timeout=15.0)  # SIGKILLs what does not stop in time, so nothing outlives the test


def module_cluster(zookeeper: LocalZooKeeper, data_dir: Path, brokers: int, overrides: dict | None = None):
    """A module fixture's body: ``yield from module_cluster(...)`` starts the cluster and stops it after."""
    cluster = new_cluster(data_dir, zookeeper, brokers, overrides)
    try:
        yield cluster.start()
    finally:
        cluster.stop(timeout=15.0)


@pytest.fixture(scope="module")
def single_broker_cluster(zookeeper, tmp_path_factory):
    """One broker, shared by a module's tests (compatibility tests)."""
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("single-broker"), 1)


@pytest.fixture(scope="module")
def three_broker_cluster(zookeeper, tmp_path_factory):
    """Three brokers, shared by a module's tests (compatibility tests)."""
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("three-brokers"), 3)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach the broker logs of the test's clusters to its failure report."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    clusters = list(item.stash.get(_CLUSTERS, []))
    clusters += [value for value in getattr(item, "funcargs", {}).values()
                 if isinstance(value, LocalCluster) and value not in clusters]
    for cluster in clusters:
        report.sections.append((f"broker logs of {cluster!r}", cluster.log_tails()))


@pytest.fixture(params=["pure", "compiled"])
def each_codec(request):
    """Runs the test once with each record codec (``codec.use``); the compiled one must be built."""
    from odradek.protocol.records import codec

    module = codec.pure_codec if request.param == "pure" else codec.compiled_module()
    if module is None:
        pytest.fail("the compiled record codec is not built (pip install -e . needs gcc and python3-dev)")
    previous = codec.use(module)
    yield module
    codec.use(previous)
