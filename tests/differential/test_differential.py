"""Request by request against Apache Kafka 2.8.2 and Odradek: every hand-written scenario (discovery, topic
administration, the data path, groups, transactions) runs against one Kafka broker and one Odradek broker with
the same settings, and the decoded answers must match field by field (tests/differential/harness.py says what
is blanked; ACCEPTED.md lists what we deliberately answer otherwise)."""

from __future__ import annotations

import pytest

from . import scenarios_data, scenarios_groups, scenarios_topics, scenarios_txn
from .generated import generated_scenarios
from .coverage import advertised, covered
from .runner import check_scenario

pytestmark = pytest.mark.jvm

# In this order: later scenarios use the topics earlier ones made (each also makes what it needs).
SCENARIOS = {f"{module.__name__.rsplit('_', 1)[-1]}.{name}": scenario
             for module in (scenarios_topics, scenarios_data, scenarios_groups, scenarios_txn)
             for name, scenario in module.SCENARIOS.items()}
SCENARIOS.update(generated_scenarios())  # last: they only read what the others made, or fail to change it


# Generated sequences whose differences are not fixed yet: listed, with their causes, in ACCEPTED.md under
# "Open". strict: a fix makes the test pass, and then it must leave this set.
OPEN: set[str] = set()


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(
    strict=True, reason="open differences, see ACCEPTED.md")) if name in OPEN else name for name in SCENARIOS])
def test_same_answers(name, kafka_broker, odradek_broker):
    check_scenario(SCENARIOS[name], kafka_broker, odradek_broker)


def test_every_advertised_version_was_compared():
    """Runs last: the scenarios above sent every (api key, version) we advertise to both brokers."""
    missing = sorted(advertised() - covered())
    assert not missing, f"{len(missing)} advertised (api key, version) pairs no scenario compared: {missing}"
