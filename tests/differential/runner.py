"""Run one scenario against both brokers of a test module and fail with every unexplained difference."""

from __future__ import annotations

import asyncio

import pytest

from odradek.tools.local_cluster import LocalCluster

from .coverage import note_covered
from .harness import Scenario, Side, compare, load_accepted, run_both


def sides(kafka: LocalCluster, odradek: LocalCluster) -> tuple[Side, Side]:
    first_kafka, first_odradek = kafka.brokers[0], odradek.brokers[0]
    return (Side("kafka", first_kafka.host, first_kafka.port), Side("odradek", first_odradek.host, first_odradek.port))


def check_scenario(scenario: Scenario, kafka: LocalCluster, odradek: LocalCluster) -> None:
    theirs, ours = sides(kafka, odradek)
    asyncio.run(run_both(scenario, theirs, ours))
    note_covered((e.api_key, e.version) for e in theirs.transcript)
    problems = compare(theirs.transcript, ours.transcript, load_accepted())
    if problems:
        pytest.fail(f"{len(problems)} difference(s) from Kafka 2.8.2:\n" + "\n".join(problems), pytrace=False)
