"""The compatibility tests run against the real-cluster fixtures of tests/integration (same ZooKeeper setup,
module-scoped clusters, broker logs attached to failure reports)."""

from tests.integration.conftest import (  # noqa: F401  (pytest finds fixtures and hooks by name here)
    pytest_runtest_makereport,
    single_broker_cluster,
    three_broker_cluster,
    zookeeper,
)
