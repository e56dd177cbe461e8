"""The group coordinator with real brokers and real clients: committed offsets (simple consumers and
groups), persistence across a coordinator restart, and a mixed group of three client libraries."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
import uuid

import pytest

kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")
aiokafka = pytest.importorskip("aiokafka")

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402
from kafka.structs import OffsetAndMetadata  # noqa: E402

from tests.integration.helpers import kafka_python_group_consumer  # noqa: E402

GROUP_OVERRIDES = {"offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0"}


def create_topic(bootstrap: str, topic: str, partitions: int, records: int = 0) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()
    if records:
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        for i in range(records):
            producer.send(topic, value=b"v%d" % i, partition=i % partitions)
        producer.flush()
        producer.close()


def kp_commit(bootstrap: str, group: str, topic: str, offsets: dict[int, tuple[int, str]]) -> None:
    """A kafka-python simple consumer (assign, no subscription): generation -1 commits."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(o, m, -1) for p, (o, m) in offsets.items()})
    finally:
        consumer.close(autocommit=False)


def kp_committed(bootstrap: str, group: str, topic: str, partitions: list[int]) -> dict[int, tuple]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        found = {p: consumer.committed(TopicPartition(topic, p), metadata=True) for p in partitions}
    finally:
        consumer.close(autocommit=False)
    return {p: (om.offset, om.metadata) if om is not None else (-1, "") for p, om in found.items()}


def test_simple_consumer_commits_round_trip_and_survive_a_coordinator_kill(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 2)
    kp_commit(bootstrap, group, topic, {0: (42, "meta-0"), 1: (7, "")})
    assert kp_committed(bootstrap, group, topic, [0, 1]) == {0: (42, "meta-0"), 1: (7, "")}
    kp_commit(bootstrap, group, topic, {0: (43, "later")})  # the last commit wins, also after a reload
    cluster.restart_broker(0, sig=signal.SIGKILL)  # the new process loads __consumer_offsets from its log
    deadline = time.monotonic() + 60
    while True:
        try:
            found = kp_committed(bootstrap, group, topic, [0, 1])
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    assert found == {0: (43, "later"), 1: (7, "")}


def test_confluent_kafka_consumer_subscribes_reads_and_commits(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 2, records=10)
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen = []
    deadline = time.monotonic() + 60
    while len(seen) < 10 and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            seen.append(message.value())
    consumer.commit(asynchronous=False)
    committed = consumer.committed([confluent_kafka.TopicPartition(topic, p) for p in (0, 1)], timeout=10)
    consumer.close()
    assert sorted(seen) == sorted(b"v%d" % i for i in range(10))
    assert {tp.partition: tp.offset for tp in committed} == {0: 5, 1: 5}


def test_kafka_python_group_consumer_commits_and_a_new_member_resumes(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1, records=6)

    def consume(limit: int) -> list[bytes]:
        consumer = kafka_python_group_consumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                               auto_offset_reset="earliest", enable_auto_commit=False,
                                               consumer_timeout_ms=15000, max_poll_records=limit)
        values = []
        for message in consumer:
            values.append(message.value)
            if len(values) == limit:
                break
        consumer.commit()
        consumer.close(autocommit=False)
        return values

    assert consume(4) == [b"v0", b"v1", b"v2", b"v3"]
    assert consume(2) == [b"v4", b"v5"]


class _Member(threading.Thread):
    """Polls in its own thread and records the partitions it was last assigned."""

    def __init__(self, poll, assignment, close) -> None:
        super().__init__(daemon=True)
        self._poll, self._assignment, self._close = poll, assignment, close
        self.stop = threading.Event()
        self.assigned: set[int] = set()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self._poll()
                self.assigned = self._assignment()
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            self._close()


def _aiokafka_member(bootstrap: str, topic: str, group: str) -> _Member:
    """aiokafka on an event loop of the member's thread (its consumer is created there)."""
    loop = asyncio.new_event_loop()
    holder = {}

    async def start():
        holder["c"] = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                                auto_offset_reset="earliest", session_timeout_ms=10000,
                                                heartbeat_interval_ms=1000)
        await holder["c"].start()

    def poll():
        if "c" not in holder:
            loop.run_until_complete(start())
        loop.run_until_complete(holder["c"].getmany(timeout_ms=200))

    def close():
        if "c" in holder:
            loop.run_until_complete(holder["c"].stop())
        loop.close()

    return _Member(poll, lambda: {tp.partition for tp in holder["c"].assignment()} if "c" in holder else set(),
                   close)


def test_three_client_libraries_share_a_group_and_rebalance_when_one_leaves(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 6)
    kp = kafka_python_group_consumer(topic, bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=10000,
                                     heartbeat_interval_ms=1000, partition_assignment_strategy=[
                                         kafka.coordinator.assignors.range.RangePartitionAssignor,
                                         kafka.coordinator.assignors.roundrobin.RoundRobinPartitionAssignor])
    ck = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                   "partition.assignment.strategy": "range,roundrobin",
                                   "session.timeout.ms": 10000})
    ck.subscribe([topic])
    members = {
        "kp": _Member(lambda: kp.poll(200), lambda: {tp.partition for tp in kp.assignment()}, kp.close),
        "ck": _Member(lambda: ck.poll(0.2), lambda: {tp.partition for tp in ck.assignment()}, ck.close),
        "aio": _aiokafka_member(bootstrap, topic, group),
    }
    for member in members.values():
        member.start()
    try:
        shares = _wait_for_shares(members, 3)
        assert sorted(p for s in shares.values() for p in s) == list(range(6))
        assert all(len(s) == 2 for s in shares.values())  # roundrobin, the one protocol all support
        members["ck"].stop.set()
        members["ck"].join(30)
        rest = {k: m for k, m in members.items() if k != "ck"}
        shares = _wait_for_shares(rest, 2)
        assert sorted(p for s in shares.values() for p in s) == list(range(6))
    finally:
        for member in members.values():
            member.stop.set()
        for member in members.values():
            member.join(30)
    assert all(m.error is None for m in members.values()), [m.error for m in members.values()]


def _wait_for_shares(members: dict[str, _Member], count: int, timeout: float = 90.0,
                     require_all: bool = True) -> dict[str, set[int]]:
    """Until each member has partitions and (``require_all``) together they hold all 6, once each."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shares = {k: set(m.assigned) for k, m in members.items()}
        flat = [p for s in shares.values() for p in s]
        if len(shares) == count and all(shares.values()) and \
                (sorted(flat) == list(range(6)) or not require_all and len(set(flat)) == len(flat)):
            return shares
        time.sleep(0.2)
    raise AssertionError(f"no stable assignment: {shares}")


def test_admin_lists_describes_and_deletes_groups_and_their_offsets(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, active, idle = f"t-{uuid.uuid4().hex[:8]}", f"a-{uuid.uuid4().hex[:8]}", f"i-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 2, records=2)
    kp_commit(bootstrap, idle, topic, {0: (1, ""), 1: (2, "")})
    consumer = kafka_python_group_consumer(topic, bootstrap_servers=bootstrap, group_id=active,
                                           auto_offset_reset="earliest", client_id="member-client")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(200)
        names = {g["group_id"] for g in admin.list_groups()}
        assert {active, idle} <= names
        described = admin.describe_groups([active, idle])
        assert described[active]["group_state"] == "Stable" and described[active]["protocol_data"] == "range"
        assert [m["client_id"] for m in described[active]["members"]] == ["member-client"]
        assert described[idle]["group_state"] == "Empty" and described[idle]["members"] == []
        # An empty group's offsets can be deleted one partition at a time.
        deleted = admin.delete_group_offsets(idle, [TopicPartition(topic, 0)])
        assert [e.__name__ for e in deleted.values()] == ["NoError"]
        assert kp_committed(bootstrap, idle, topic, [0, 1]) == {0: (-1, ""), 1: (2, "")}
        # ... an active group's offsets of topics it subscribes to cannot.
        in_use = admin.delete_group_offsets(active, [TopicPartition(topic, 0)])
        assert [e.__name__ for e in in_use.values()] == ["GroupSubscribedToTopicError"]
        assert dict(admin.delete_groups([active, idle])) == {active: "NonEmptyGroupError", idle: "OK"}
        assert admin.describe_groups([idle])[idle]["group_state"] == "Dead"
    finally:
        consumer.close()
        admin.close()



def test_commits_survive_a_sigkill_of_the_coordinator_in_a_three_broker_cluster(odradek_cluster_factory):
    from odradek.broker.coordinator.group.metadata_manager import kafka_partition_for

    cluster = odradek_cluster_factory(3, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    kp_commit(bootstrap, group, topic, {0: (11, "before-kill")})
    partition = kafka_partition_for(group, 3)
    coordinator = _offsets_leader(cluster, partition)
    cluster.kill_broker(coordinator)
    deadline = time.monotonic() + 90
    while True:
        try:
            found = kp_committed(bootstrap, group, topic, [0])
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    new_leader = _offsets_leader(cluster, partition)
    assert new_leader not in (coordinator, -1)
    assert found == {0: (11, "before-kill")}


def _offsets_leader(cluster, partition: int) -> int:
    with cluster.client() as client:
        return client.metadata(topics=["__consumer_offsets"]).topics["__consumer_offsets"].partitions[partition].leader


_DYING_MEMBER = """
import sys, confluent_kafka
consumer = confluent_kafka.Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                                     "session.timeout.ms": 10000, "partition.assignment.strategy": "roundrobin"})
consumer.subscribe([sys.argv[3]])
while True:
    consumer.poll(0.2)
    if consumer.assignment():
        print("assigned", flush=True)
"""


def test_a_member_that_dies_is_expired_after_its_session_timeout_and_the_rest_take_over(odradek_cluster_factory):
    import subprocess
    import sys

    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 6)
    kp = kafka_python_group_consumer(topic, bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=10000,
                                     heartbeat_interval_ms=1000)
    members = {"kp": _Member(lambda: kp.poll(200), lambda: {tp.partition for tp in kp.assignment()}, kp.close),
               "aio": _aiokafka_member(bootstrap, topic, group)}
    for member in members.values():
        member.start()
    dying = subprocess.Popen([sys.executable, "-c", _DYING_MEMBER, bootstrap, group, topic], stdout=subprocess.PIPE)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        assert dying.stdout.readline().strip() == b"assigned"
        deadline = time.monotonic() + 60
        while len(admin.describe_groups([group])[group]["members"]) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        _wait_for_shares(members, 2, require_all=False)  # each has a share; the third holds the rest
        dying.kill()  # no LeaveGroup: only the session timeout can remove it
        shares = _wait_for_shares(members, 2)
        assert sorted(p for s in shares.values() for p in s) == list(range(6))
        assert len(admin.describe_groups([group])[group]["members"]) == 2
    finally:
        dying.kill()
        dying.wait()
        admin.close()
        for member in members.values():
            member.stop.set()
        for member in members.values():
            member.join(30)


def test_a_static_member_restarting_takes_its_old_place(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 2)

    def assigned_consumer():
        consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                             "group.instance.id": "instance-1", "session.timeout.ms": 30000})
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        return consumer

    first = assigned_consumer()
    assert {tp.partition for tp in first.assignment()} == {0, 1}
    first.close()  # a static member leaves no LeaveGroup behind: its place waits for it
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        before = admin.describe_groups([group])[group]["members"]
        second = assigned_consumer()
        after = admin.describe_groups([group])[group]["members"]
        assert {tp.partition for tp in second.assignment()} == {0, 1}
        second.close()
    finally:
        admin.close()
    assert [m["group_instance_id"] for m in before] == ["instance-1"]
    assert [m["group_instance_id"] for m in after] == ["instance-1"]
    assert after[0]["member_id"] != before[0]["member_id"]
