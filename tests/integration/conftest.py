"""Fixtures for tests against real servers: one ZooKeeper per test session, one chroot per test."""

from __future__ import annotations

import uuid

import pytest

from odradek.clients.cli.local_zookeeper import LocalZooKeeper


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
