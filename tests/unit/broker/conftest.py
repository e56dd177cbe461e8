"""Fixtures of the broker unit tests."""

import pytest

from tests.fakes.replica_manager import ReplicaManagers


@pytest.fixture
def replica_managers(tmp_path):
    """``replica_managers.make(broker_id, ...)`` builds real ReplicaManagers on the test's tmp_path; every one
    is shut down after the test."""
    managers = ReplicaManagers(tmp_path)
    yield managers
    managers.shutdown()
