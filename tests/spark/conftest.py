"""One local SparkSession (local[2]) for the whole test session, and helpers for the Spark tests."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from .helpers import local_session

    session = local_session("odradek-tests", tmp_path_factory.mktemp("warehouse"))
    yield session
    session.stop()
