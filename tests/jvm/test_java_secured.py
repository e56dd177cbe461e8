"""The Java client over SSL and SASL_SSL/SCRAM with the ACL authorizer on, as an ordinary user holding exactly
the ACLs it needs (tests/jvm/secured_cluster.py), on one 3-broker cluster shared by the module.

Each (client version, listener) runs the "secure" group (src/main/java/.../SecureScenarios.java) in one JVM:
the plain suite's producer (idempotent, transactional with group offsets, zombie fencing) and consumer
(cooperative-sticky group, static membership, read_committed) scenarios as alice, AdminClient's ACL, SCRAM
(KIP-554) and authorized-operations calls, and calls outside her ACLs, which must fail with the exception
Apache Kafka's broker causes (Topic-, Group-, TransactionalId-, ClusterAuthorizationException). As in
test_java_clients.py, a scenario also fails on any WARN/ERROR line of the client that jvm.BENIGN_LOG_LINES
(or, for the refusals it provokes, DENIED_LOG_LINES) does not explain.

Versions: each of the suite's clients (2.8.2, 3.9.2, 4.4.0), on both listeners (over SSL the scenarios whose
outcome the listener's principal decides; SSL_SCENARIOS). The six JVMs run at once.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections import Counter

import pytest

from odradek.clients import NewTopic, Producer, TopicPartition
from tests.conftest import new_cluster, running
from tests.integration.helpers import wait_until

from . import jvm
from .mixed_group import JavaMember, Member, confluent_member, kafka_python_member, odradek_member
from .secured_cluster import PREFIX, SSL_LISTENER_OVERRIDES, WAIT_S, TwoListenerCluster, prepare

pytestmark = [pytest.mark.jvm, pytest.mark.timeout(900)]

VERSIONS = jvm.CLIENT_VERSIONS
SCENARIOS = ["idempotent-default", "transactional-offsets", "fencing-zombie", "group-cooperative-sticky",
             "static-membership", "read-committed-aborted", "acls-create-describe-delete",
             "scram-credentials-as-user", "authorized-operations", "denied-topic", "denied-group",
             "denied-transactional-id", "denied-cluster"]
# Over SSL what depends on the listener: the principal its certificate maps to holds alice's ACLs (and no
# more) for the producer, a transaction with a group's offsets, the admin calls; the rest as over SASL_SSL.
SSL_SCENARIOS = ["idempotent-default", "transactional-offsets", "acls-create-describe-delete",
                 "authorized-operations", "denied-topic", "denied-group", "denied-cluster"]
CASES = [(version, listener, SCENARIOS if listener == "SASL_SSL" else SSL_SCENARIOS)
         for version in VERSIONS for listener in ("SASL_SSL", "SSL")]


def scenarios_of(version: str, listener: str) -> list[str]:
    return next(scenarios for v, l, scenarios in CASES if (v, l) == (version, listener))


def run_prefix(version: str, listener: str) -> str:
    """What begins the names a run makes: alice's prefix, then its own (the runs share the cluster)."""
    return f"{PREFIX}j{version.replace('.', '')}-{listener.lower().replace('_', '')}"


# What the client logs when the broker refuses it, as Apache Kafka's would: the refusals the denied-*
# scenarios provoke and the wrong password of scram-credentials-as-user (also the logins tried while the
# brokers have not yet learnt a new user's credentials from ZooKeeper).
DENIED_LOG_LINES: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"=TOPIC_AUTHORIZATION_FAILED\}"), "metadata of a topic without Describe"),
    (re.compile(r"Topic authorization failed for topics \[denied-topic\]"), "the producer's metadata"),
    (re.compile(r"Not authorized to access topics: \[denied-topic\]"), "the consumer's metadata"),
    (re.compile(r"Not authorized to access group: denied-group"), "joining a group without Read"),
    (re.compile(r"TransactionalIdAuthorizationException"), "initTransactions without Write on the id"),
    (re.compile(r"failed authentication due to: Authentication failed during authentication due to invalid "
                r"credentials with SASL mechanism SCRAM-SHA-512"), "a wrong or not yet known password"),
    # the admin after that refusal: 2.8 and 3.x say the second, 4.x the first
    (re.compile(r"AdminClient clientId=\S+\] (Fatal error during metadata update|Metadata update failed due to "
                r"authentication error)"), "the admin after that refusal"),
)
ALLOWED = {"denied-topic": DENIED_LOG_LINES, "denied-group": DENIED_LOG_LINES,
           "denied-transactional-id": DENIED_LOG_LINES, "scram-credentials-as-user": DENIED_LOG_LINES}


@pytest.fixture(scope="module")
def secured(zookeeper, tmp_path_factory):
    work = tmp_path_factory.mktemp("java-secured")
    cluster = new_cluster(work / "cluster", zookeeper, 3, SSL_LISTENER_OVERRIDES, security="sasl_ssl",
                          cluster_class=TwoListenerCluster)
    with running(cluster):
        secured = prepare(cluster, work)
        with secured.admin() as admin:  # a topic alice may not touch
            admin.create_topics([NewTopic("denied-topic", 1, 3)])
        yield secured


@pytest.fixture(scope="module")
def secure_runs(secured, tmp_path_factory):
    """``runs(version, listener)``: the results of that JVM. All of them start at once: their scenarios mostly
    wait (for rebalances, transactions, the brokers' ZooKeeper notifications), so together they take about
    as long as the longest alone. Their output goes to files: a JVM must never block on a full pipe."""
    work = tmp_path_factory.mktemp("java-secured-runs")
    started: dict[tuple[str, str], subprocess.Popen] = {}
    runs: dict[tuple[str, str], jvm.GroupRun] = {}

    def get(version: str, listener: str) -> jvm.GroupRun:
        if not started:
            for v, l, scenarios in CASES:
                prefix = run_prefix(v, l)
                command = jvm.client_command(v, jvm.MAIN_CLASS, "secure", secured.profiles[l].bootstrap, prefix,
                                             *scenarios, client_config=secured.properties[l])
                with open(work / f"{prefix}.out", "w") as out, open(work / f"{prefix}.err", "w") as err:
                    started[v, l] = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        if (version, listener) not in runs:
            process = started[version, listener]
            process.wait(timeout=jvm.GROUP_TIMEOUT)
            prefix = run_prefix(version, listener)
            runs[version, listener] = jvm.group_results(scenarios_of(version, listener),
                                                        (work / f"{prefix}.out").read_text(),
                                                        (work / f"{prefix}.err").read_text(), process.returncode)
        return runs[version, listener]

    yield get
    for process in started.values():
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize(("version", "listener", "scenario"),
                         [(v, l, scenario) for v, l, scenarios in CASES for scenario in scenarios])
def test_java_client_as_an_ordinary_user(secure_runs, version, listener, scenario):
    run = secure_runs(version, listener)
    assert run.client_version == version, "the class path holds another kafka-clients"
    result = run.results[scenario]
    assert result.ok, result.error
    troubling = jvm.troubling(result.log_lines, ALLOWED.get(scenario, ()))
    assert not troubling, "the Java client logged:\n" + "\n".join(troubling)


# -- one consumer group, four client families --------------------------------------------------------------------

def produce(secured, topic: str, partitions: int, start: int, count: int) -> None:
    with Producer(bootstrap_servers=secured.cluster.bootstrap_servers, acks="all",
                  **secured.cluster.security.client_kwargs()) as producer:
        for n in range(start, start + count):
            producer.send(topic, b"m-%d" % n, partition=n % partitions)
        producer.flush()


def balanced(members: list[Member], partitions: int) -> bool:
    """Every live member holds partitions, none twice, all of them held."""
    held = [m.assignment for m in members]
    return all(held) and sum(map(len, held)) == partitions and frozenset().union(*held) == set(range(partitions))


def wait_for_all(members: list[Member], count: int, what: str) -> None:
    wanted = {b"m-%d" % n for n in range(count)}
    wait_until(lambda: {v for m in members for _, _, v in m.consumed()} >= wanted, WAIT_S, what)


def check_exactly_once(secured, group: str, topic: str, partitions: int, members: list[Member], count: int) -> None:
    for member in members:
        assert not member.errors, f"{member.name}: {member.errors}"
        if isinstance(member, JavaMember):
            troubling = jvm.troubling(member.log_lines)
            assert not troubling, f"{member.name} logged:\n" + "\n".join(troubling)
    read = Counter(v for m in members for _, _, v in m.consumed())
    twice = sorted(v for v, n in read.items() if n > 1)
    assert not twice, f"{len(twice)} records read by two members: {twice[:10]}"
    assert set(read) == {b"m-%d" % n for n in range(count)}
    with secured.admin() as admin:
        committed = admin.list_consumer_group_offsets(group)
        ends = admin.list_offsets({TopicPartition(topic, p): -1 for p in range(partitions)})
    assert {tp.partition: o.offset for tp, o in committed.items()} == \
           {tp.partition: offset for tp, offset in ends.items()}, "the group's commits end where the log does"


def one_leaves(secured, members: list[Member], leaving: Member, topic: str, partitions: int, written: int,
               more: int) -> int:
    """``leaving`` closes; the others take its partitions and read ``more`` records written after; returns
    how many the topic holds then."""
    leaving.stop()
    staying = [m for m in members if m is not leaving]
    wait_until(lambda: balanced(staying, partitions), WAIT_S, f"the others taking {leaving.name}'s partitions")
    produce(secured, topic, partitions, written, more)
    wait_for_all(members, written + more, f"the others to read the records written after {leaving.name} left")
    return written + more


@contextlib.contextmanager
def closed_at_end(members: list[Member]):
    try:
        yield members
    finally:
        for member in members:
            member.stop()


def test_one_group_of_java_librdkafka_kafka_python_and_ours(secured):
    """Range, the assignor all four families have: each member leads or follows, reads its share, commits;
    when kafka-python leaves, the others take its partitions and go on from its commits."""
    topic, group, partitions = f"{PREFIX}mixed-range", f"{PREFIX}mixed-range-group", 6
    with secured.admin() as admin:
        admin.create_topics([NewTopic(topic, partitions, 3)])
    produce(secured, topic, partitions, 0, 300)
    sasl = secured.profiles["SASL_SSL"]
    with closed_at_end([JavaMember("java", jvm.CLIENT_VERSIONS[-1], sasl, secured.properties["SASL_SSL"], topic,
                                   group, "range")]) as members:
        members += [confluent_member("librdkafka", sasl, topic, group, "range"),
                    kafka_python_member("kafka-python", sasl, topic, group, "range"),
                    odradek_member("odradek", sasl, topic, group, "range")]
        wait_until(lambda: balanced(members, partitions), WAIT_S, "the four members sharing the six partitions")
        with secured.admin() as admin:
            [description] = admin.describe_consumer_groups([group])
        assert (description.state, description.partition_assignor, len(description.members)) == ("Stable", "range", 4)
        produce(secured, topic, partitions, 300, 120)
        wait_for_all(members, 420, "the four members to read every record")
        assert all(m.consumed() for m in members), [m.name for m in members if not m.consumed()]
        written = one_leaves(secured, members, members[2], topic, partitions, 420, 120)
    check_exactly_once(secured, group, topic, partitions, members, written)


def test_a_cooperative_group_of_two_java_versions_and_librdkafka(secured):
    """cooperative-sticky, which only the Java client and librdkafka have (kafka-python and ours are eager):
    members of 2.8.2, the newest Java client and librdkafka join one by one, then the 2.8.2 one leaves."""
    topic, group, partitions = f"{PREFIX}mixed-coop", f"{PREFIX}mixed-coop-group", 6
    with secured.admin() as admin:
        admin.create_topics([NewTopic(topic, partitions, 3)])
    produce(secured, topic, partitions, 0, 120)
    sasl, properties = secured.profiles["SASL_SSL"], secured.properties["SASL_SSL"]
    with closed_at_end([]) as members:
        for version in (jvm.CLIENT_VERSIONS[0], jvm.CLIENT_VERSIONS[-1]):
            members.append(JavaMember(f"java-{version}", version, sasl, properties, topic, group, "cooperative-sticky"))
            wait_until(lambda: balanced(members, partitions), WAIT_S, f"{len(members)} members sharing the partitions")
        members.append(confluent_member("librdkafka", sasl, topic, group, "cooperative-sticky"))
        wait_until(lambda: balanced(members, partitions), WAIT_S, "three members sharing the partitions")
        with secured.admin() as admin:
            [description] = admin.describe_consumer_groups([group])
        assert (description.state, description.partition_assignor) == ("Stable", "cooperative-sticky")
        produce(secured, topic, partitions, 120, 120)
        wait_for_all(members, 240, "the three members to read every record")
        written = one_leaves(secured, members, members[0], topic, partitions, 240, 60)
    check_exactly_once(secured, group, topic, partitions, members, written)
