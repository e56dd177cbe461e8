"""Fixtures of the console tests: one cluster per test module (two brokers with Prometheus endpoints and an
authorizer whose super user is the PLAINTEXT clients' ANONYMOUS, so the ACL calls work), and a console
serving it from a thread of the test process."""

from __future__ import annotations

import pytest

from tests.conftest import new_cluster

from .console_process import CONSOLE_BROKER_OVERRIDES, ConsoleThread


@pytest.fixture(scope="module")
def console_cluster(zookeeper, tmp_path_factory):
    cluster = new_cluster(tmp_path_factory.mktemp("console-cluster"), zookeeper, 2, CONSOLE_BROKER_OVERRIDES,
                          metrics_base_port=0)
    try:
        yield cluster.start()
    finally:
        cluster.stop(timeout=15.0)


@pytest.fixture(scope="module")
def console(console_cluster):
    endpoints = [url.removeprefix("http://").removesuffix("/metrics") for url in console_cluster.metrics_urls]
    thread = ConsoleThread(console_cluster.bootstrap_servers, metrics=endpoints).start()
    try:
        yield thread
    finally:
        thread.stop()
