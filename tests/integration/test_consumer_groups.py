"""Our Consumer as a group member (clients/group/): sharing partitions with range and roundrobin, rebalancing
when a member leaves or dies, listeners, static membership, auto-commit, and a mixed group with kafka-python
and confluent-kafka that consumes every record exactly once across rebalances."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")

from kafka import KafkaAdminClient, KafkaProducer  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402

from odradek.clients.group.listener import ConsumerRebalanceListener  # noqa: E402
from odradek.clients.group.offsets import CommitFailedError  # noqa: E402
from odradek.clients.consumer.sync_consumer import Consumer  # noqa: E402
from odradek.clients.types import OffsetAndMetadata, TopicPartition  # noqa: E402
from tests.integration.helpers import wait_until  # noqa: E402

GROUP_OVERRIDES = {"offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0"}
FAST = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500}  # 6 s: the broker's minimum session timeout


def names() -> tuple[str, str]:
    return f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, partitions: int, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i, value in enumerate(values):
        producer.send(topic, value=value, partition=i % partitions)
    producer.flush()
    producer.close()


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset[int]]] = []

    def on_partitions_revoked(self, revoked):
        self.events.append(("revoked", frozenset(tp.partition for tp in revoked)))

    def on_partitions_assigned(self, assigned):
        self.events.append(("assigned", frozenset(tp.partition for tp in assigned)))


class Member(threading.Thread):
    """Polls in its own thread; ``handle(record)`` processes each record; remembers the assignment."""

    def __init__(self, poll, assignment, close, handle=None) -> None:
        super().__init__(daemon=True)
        self._poll, self._assignment, self._close, self._handle = poll, assignment, close, handle
        self.stop = threading.Event()
        self.assigned: frozenset[int] = frozenset()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                for record in self._poll():
                    if self._handle is not None:
                        self._handle(record)
                self.assigned = frozenset(self._assignment())
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            self._close()


def our_member(consumer: Consumer, handle=None) -> Member:
    def poll():
        return [r for records in consumer.poll(200, max_records=1 if handle else None).values() for r in records]
    return Member(poll, lambda: {tp.partition for tp in consumer.assignment()}, consumer.close, handle)


def our_consumer(bootstrap: str, topic: str, group: str, listener=None, **configs) -> Consumer:
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                        **{**FAST, **configs})
    consumer.subscribe([topic], listener=listener)
    return consumer


def wait_for_shares(members: dict[str, Member], expected: set[frozenset[int]] | None = None,
                    partitions: int = 6, timeout: float = 90.0) -> dict[str, frozenset[int]]:
    """Until the members' shares are disjoint, cover every partition and (``expected``) split as given."""
    def settled():
        shares = {k: m.assigned for k, m in members.items()}
        flat = sorted(p for s in shares.values() for p in s)
        if flat == list(range(partitions)) and all(shares.values()) and \
                (expected is None or set(shares.values()) == expected):
            return shares
        return None
    try:
        return wait_until(settled, timeout, "the group to settle")
    except AssertionError:
        raise AssertionError(f"no stable assignment: {[(k, sorted(m.assigned)) for k, m in members.items()]}, "
                             f"errors {[m.error for m in members.values()]}") from None


def stop_all(members) -> None:
    for member in members:
        member.stop.set()
    for member in members:
        member.join(60)


SPLITS = {
    "range": ({frozenset({0, 1, 2}), frozenset({3, 4, 5})},
              {frozenset({0, 1}), frozenset({2, 3}), frozenset({4, 5})}),
    "roundrobin": ({frozenset({0, 2, 4}), frozenset({1, 3, 5})},
                   {frozenset({0, 3}), frozenset({1, 4}), frozenset({2, 5})}),
}


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_our_consumers_share_a_topic_and_rebalance_when_one_joins_and_leaves(odradek_cluster_factory, strategy):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = names()
    create_topic(bootstrap, topic, 6)
    two, three = SPLITS[strategy]
    listeners = {name: Recorder() for name in ("a", "b", "c")}
    members = {name: our_member(our_consumer(bootstrap, topic, group, listeners[name],
                                             partition_assignment_strategy=[strategy]))
               for name in ("a", "b")}
    for member in members.values():
        member.start()
    try:
        wait_for_shares(members, two)
        members["c"] = our_member(our_consumer(bootstrap, topic, group, listeners["c"],
                                               partition_assignment_strategy=[strategy]))
        members["c"].start()
        wait_for_shares(members, three)
        leaving = members.pop("c")
        leaving.stop.set()
        leaving.join(60)  # close(): LeaveGroup, so the others rebalance without waiting for a session timeout
        wait_for_shares(members, two)
    finally:
        stop_all(members.values())
    assert all(m.error is None for m in [*members.values(), leaving]), [m.error for m in members.values()]
    # c was assigned two partitions and revoked them when it closed; a and b went through three generations
    assert listeners["c"].events[0][0] == "assigned" and listeners["c"].events[-1] == ("revoked", leaving.assigned)
    kinds = [kind for kind, _ in listeners["a"].events]
    assert kinds.count("assigned") >= 3 and kinds.count("revoked") >= 3
    assert all(kinds[i] != kinds[i + 1] for i in range(len(kinds) - 1)), kinds  # eager: revoke, assign, ...


_OUR_DYING_MEMBER = """
import sys, time
from odradek.clients.consumer.sync_consumer import Consumer
bootstrap, group, topic = sys.argv[1:4]
consumer = Consumer(bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=6000, heartbeat_interval_ms=500,
                    partition_assignment_strategy=["roundrobin"])
consumer.subscribe([topic])
announced = False
while True:
    consumer.poll(200)
    if consumer.assignment() and not announced:
        print("assigned", flush=True)
        announced = True
"""


def test_a_member_killed_without_leaving_is_expired_and_the_others_take_over(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = names()
    create_topic(bootstrap, topic, 6)
    members = {name: our_member(our_consumer(bootstrap, topic, group, partition_assignment_strategy=["roundrobin"]))
               for name in ("a", "b")}
    for member in members.values():
        member.start()
    dying = subprocess.Popen([sys.executable, "-c", _OUR_DYING_MEMBER, bootstrap, group, topic],
                             stdout=subprocess.PIPE)
    try:
        assert dying.stdout.readline().strip() == b"assigned"
        wait_until(lambda: all(len(m.assigned) == 2 for m in members.values()), what="three members")
        dying.send_signal(signal.SIGKILL)  # no LeaveGroup: only the session timeout removes it
        shares = wait_for_shares(members, SPLITS["roundrobin"][0])
    finally:
        dying.kill()
        dying.wait()
        stop_all(members.values())
    assert sorted(p for s in shares.values() for p in s) == list(range(6))
    assert all(m.error is None for m in members.values())


def test_a_static_member_restarting_within_its_session_keeps_its_partitions_without_a_rebalance(
        odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = names()
    create_topic(bootstrap, topic, 4)
    other_listener = Recorder()
    static = {"group_instance_id": "instance-1", "session_timeout_ms": 30000, "heartbeat_interval_ms": 500}
    members = {"dynamic": our_member(our_consumer(bootstrap, topic, group, other_listener)),
               "static": our_member(our_consumer(bootstrap, topic, group, **static))}
    for member in members.values():
        member.start()
    try:
        before = wait_for_shares(members, partitions=4)
        events_before = list(other_listener.events)
        restarting = members.pop("static")
        restarting.stop.set()
        restarting.join(60)  # a static member sends no LeaveGroup on close
        restarted_listener = Recorder()
        members["static"] = our_member(our_consumer(bootstrap, topic, group, restarted_listener, **static))
        members["static"].start()
        wait_until(lambda: restarted_listener.events, what="the restarted static member's assignment")
        after = wait_for_shares(members, partitions=4)
        time.sleep(2)  # heartbeats of both members go on: a rebalance would show in the listener now
        events_after = list(other_listener.events)
    finally:
        stop_all(members.values())
    assert after == before
    assert restarted_listener.events[0] == ("assigned", before["static"])
    assert events_after == events_before  # the dynamic member saw no rebalance


def test_auto_commit_commits_consumed_positions_and_committed_reflects_them_after_close(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = names()
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, 2, [b"v%d" % i for i in range(10)])
    consumer = our_consumer(bootstrap, topic, group, auto_commit_interval_ms=300)
    checker = Consumer(bootstrap_servers=bootstrap, group_id=group)  # no subscription: just reads offsets
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    try:
        seen = []
        wait_until(lambda: seen.extend(r for rs in consumer.poll(200).values() for r in rs) or len(seen) == 10,
                   what="ten records")
        # the interval commit, while the consumer is still open
        wait_until(lambda: [checker.committed(tp) for tp in tps] == [OffsetAndMetadata(5, "")] * 2,
                   what="the auto-commit")
        produce(bootstrap, topic, 2, [b"w%d" % i for i in range(4)])
        wait_until(lambda: seen.extend(r for rs in consumer.poll(200).values() for r in rs) or len(seen) == 14,
                   what="four more records")
        consumer.close()  # commits the last positions before leaving
        assert [checker.committed(tp) for tp in tps] == [OffsetAndMetadata(7, "")] * 2
    finally:
        consumer.close()
        checker.close()
    assert sorted(r.value for r in seen) == sorted([b"v%d" % i for i in range(10)] + [b"w%d" % i for i in range(4)])


def test_a_commit_with_a_stale_generation_fails_and_the_member_rejoins(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = names()
    create_topic(bootstrap, topic, 2)
    consumer = our_consumer(bootstrap, topic, group, enable_auto_commit=False)
    try:
        wait_until(lambda: consumer.poll(100) is not None and consumer.assignment(), what="an assignment")
        coordinator = consumer._consumer._group
        good = coordinator.generation
        consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(0, "")})
        from odradek.clients.group.offsets import Generation
        coordinator.generation = Generation(good.generation_id + 5, good.member_id, good.protocol)
        with pytest.raises(CommitFailedError):
            consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(1, "")})
        wait_until(lambda: consumer.poll(100) is not None and coordinator.generation.generation_id > good.generation_id
                   and coordinator.generation.generation_id != good.generation_id + 5 and consumer.assignment(),
                   what="the member to rejoin")
        assert consumer.committed(TopicPartition(topic, 0)) == OffsetAndMetadata(0, "")
    finally:
        consumer.close()


# --- the headline test: ours, kafka-python and confluent-kafka in one group ------------------------------

_KAFKA_PYTHON_MEMBER = """
import os, sys, time
from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.structs import OffsetAndMetadata
bootstrap, group, topic, freeze_file = sys.argv[1:5]

class Announce(ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked):
        print("revoked", flush=True)
    def on_partitions_assigned(self, assigned):
        print("assigned " + ",".join(str(tp.partition) for tp in sorted(assigned)), flush=True)

consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                         enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500)
consumer.subscribe([topic], listener=Announce())  # kafka-python's default strategy: range, roundrobin
consumer.topics()  # its metadata before it joins (helpers.kafka_python_group_consumer says why)
while not consumer.partitions_for_topic(topic):
    consumer.topics()

def freeze_if_asked():
    if os.path.exists(freeze_file):  # stop between two records: all it reported is committed
        print("frozen", flush=True)
        time.sleep(3600)

while True:
    freeze_if_asked()
    for tp, records in consumer.poll(200).items():
        for record in records:
            time.sleep(0.02)  # "processing": slow enough to be stopped with records still unprocessed
            consumer.commit({tp: OffsetAndMetadata(record.offset + 1, "", -1)})  # synchronous
            print("record %d %d %s" % (record.partition, record.offset, record.value.decode()), flush=True)
            freeze_if_asked()
"""


class _Processed:
    """Every record a member processed and committed: (partition, offset, value), from every member."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: list[tuple[int, int, bytes, str]] = []

    def add(self, partition: int, offset: int, value: bytes, who: str) -> None:
        with self.lock:
            self.records.append((partition, offset, value, who))

    def count(self) -> int:
        with self.lock:
            return len(self.records)


def test_ours_kafka_python_and_confluent_share_a_group_on_roundrobin_and_consume_each_record_once(
        odradek_cluster_factory, tmp_path):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = names()
    create_topic(bootstrap, topic, 6)
    processed = _Processed()
    per_batch = 120

    # ours: offers roundrobin first; commits each record synchronously after processing it
    ours = our_consumer(bootstrap, topic, group, partition_assignment_strategy=["roundrobin", "range"],
                        enable_auto_commit=False)

    def our_handle(record):
        try:
            ours.commit({TopicPartition(record.topic, record.partition): OffsetAndMetadata(record.offset + 1, "")})
        except CommitFailedError:
            return  # the group moved on: the record's next owner processes it
        processed.add(record.partition, record.offset, record.value, "ours")

    # confluent-kafka: only roundrobin, which makes roundrobin the one protocol all three support; with
    # rebalance callbacks librdkafka rebalances inside poll(), as the other two do
    ck_assigned: set[int] = set()
    ck = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                   "partition.assignment.strategy": "roundrobin", "session.timeout.ms": 6000,
                                   "heartbeat.interval.ms": 500, "enable.auto.commit": False,
                                   "auto.offset.reset": "earliest"})

    def ck_on_assign(consumer, partitions):
        ck_assigned.clear()
        ck_assigned.update(tp.partition for tp in partitions)

    def ck_on_revoke(consumer, partitions):
        ck_assigned.clear()

    ck.subscribe([topic], on_assign=ck_on_assign, on_revoke=ck_on_revoke)

    def ck_poll():
        message = ck.poll(0.2)
        if message is None or message.error() is not None:
            return []
        try:
            ck.commit(message=message, asynchronous=False)
        except confluent_kafka.KafkaException:
            return []
        processed.add(message.partition(), message.offset(), message.value(), "confluent")
        return []

    members = {"ours": our_member(ours, our_handle),
               "confluent": Member(ck_poll, lambda: set(ck_assigned), ck.close)}
    freeze_file = tmp_path / "freeze"
    kp_state = {"assigned": frozenset(), "frozen": False, "lines": []}
    kp = subprocess.Popen([sys.executable, "-c", _KAFKA_PYTHON_MEMBER, bootstrap, group, topic, str(freeze_file)],
                          stdout=subprocess.PIPE)

    def read_kp() -> None:
        for line in kp.stdout:
            words = line.decode().split()
            kp_state["lines"].append(words)
            if words[0] == "assigned":
                kp_state["assigned"] = frozenset(int(p) for p in words[1].split(",")) if len(words) > 1 else frozenset()
            elif words[0] == "revoked":
                kp_state["assigned"] = frozenset()
            elif words[0] == "record":
                processed.add(int(words[1]), int(words[2]), words[3].encode(), "kafka-python")
            elif words[0] == "frozen":
                kp_state["frozen"] = True

    reader = threading.Thread(target=read_kp, daemon=True)
    reader.start()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    for member in members.values():
        member.start()
    try:
        kp_member = SimpleNamespaceMember(kp_state)
        shares = wait_for_shares({**members, "kafka-python": kp_member},
                                 SPLITS["roundrobin"][1])  # {0,3}, {1,4}, {2,5}: roundrobin, not range
        assert admin.describe_groups([group])[group]["protocol_data"] == "roundrobin"

        def produce_batch(n: int) -> None:
            produce(bootstrap, topic, 6, [f"batch{n}-{i}".encode() for i in range(per_batch)])

        produce_batch(1)
        wait_until(lambda: processed.count() >= per_batch, what="the first batch")
        by_member = {who for _, _, _, who in processed.records}
        assert by_member == {"ours", "confluent", "kafka-python"}

        produce_batch(2)
        leaving = members.pop("confluent")
        leaving.stop.set()
        leaving.join(60)  # confluent-kafka closes: LeaveGroup, the other two rebalance at once
        two = wait_for_shares({**members, "kafka-python": kp_member})
        wait_until(lambda: processed.count() >= 2 * per_batch, what="the second batch")

        produce_batch(3)
        wait_until(lambda: any(w[0] == "record" and w[3].startswith("batch3") for w in kp_state["lines"]),
                   what="kafka-python to process part of the third batch")
        freeze_file.write_text("stop")
        wait_until(lambda: kp_state["frozen"], what="kafka-python to stop between two records")
        kp.send_signal(signal.SIGKILL)  # no LeaveGroup: the session timeout hands its partitions to ours
        wait_until(lambda: len(members["ours"].assigned) == 6, what="ours to take over every partition")
        wait_until(lambda: processed.count() >= 3 * per_batch, what="the third batch")
        time.sleep(1)  # anything processed twice would show up now
    finally:
        kp.kill()
        kp.wait()
        admin.close()
        stop_all(members.values())
    assert all(m.error is None for m in members.values()), [m.error for m in members.values()]
    assert sum(len(s) for s in two.values()) == 6
    records = processed.records
    keys = [(p, o) for p, o, _, _ in records]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    assert not duplicates, f"processed more than once: {duplicates}"
    assert sorted(keys) == sorted((p, o) for p in range(6) for o in range(3 * per_batch // 6))
    assert sorted(v for _, _, v, _ in records) == sorted(
        f"batch{n}-{i}".encode() for n in (1, 2, 3) for i in range(per_batch))


class SimpleNamespaceMember:
    """A member run elsewhere (a subprocess) whose assignment is reported to ``state``."""

    def __init__(self, state: dict) -> None:
        self.state = state
        self.error = None

    @property
    def assigned(self) -> frozenset[int]:
        return self.state["assigned"]


def test_sticky_members_keep_their_partitions_when_a_member_joins(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = names()
    create_topic(bootstrap, topic, 6)
    members = {name: our_member(our_consumer(bootstrap, topic, group, partition_assignment_strategy=["sticky"]))
               for name in ("a", "b")}
    for member in members.values():
        member.start()
    try:
        before = wait_for_shares(members)
        members["c"] = our_member(our_consumer(bootstrap, topic, group, partition_assignment_strategy=["sticky"]))
        members["c"].start()
        after = wait_until(lambda: (lambda s: s if sorted(len(x) for x in s.values()) == [2, 2, 2] else None)(
            wait_for_shares(members)), what="three shares of two")
    finally:
        stop_all(members.values())
    assert after["a"] <= before["a"] and after["b"] <= before["b"]  # only what c needed moved


def test_pattern_subscription_follows_new_topics_and_partition_growth_with_an_async_listener(odradek_cluster_factory):
    import asyncio

    from kafka.admin import NewPartitions

    from odradek.clients.consumer.consumer import AIOConsumer

    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    prefix, group = names()
    create_topic(bootstrap, f"{prefix}-a", 2)
    create_topic(bootstrap, f"x{prefix}-a", 1)  # does not match: the pattern matches whole names
    events: list[tuple[str, set]] = []

    class AsyncListener:
        async def on_partitions_revoked(self, revoked):
            events.append(("revoked", set(revoked)))

        async def on_partitions_assigned(self, assigned):
            events.append(("assigned", set(assigned)))

    async def main():
        async with AIOConsumer(bootstrap_servers=bootstrap, group_id=group, metadata_max_age_ms=500,
                               auto_offset_reset="earliest", **FAST) as consumer:
            await consumer.subscribe(pattern=f"{prefix}-.*", listener=AsyncListener())

            async def assigned(expected):
                for _ in range(600):
                    await consumer.getmany(timeout_ms=100)
                    if consumer.assignment() == expected:
                        return
                raise AssertionError(f"assignment {consumer.assignment()} never became {expected}")

            await assigned({TopicPartition(f"{prefix}-a", 0), TopicPartition(f"{prefix}-a", 1)})
            await asyncio.to_thread(create_topic, bootstrap, f"{prefix}-b", 1)
            await assigned({TopicPartition(f"{prefix}-a", 0), TopicPartition(f"{prefix}-a", 1),
                            TopicPartition(f"{prefix}-b", 0)})
            assert consumer.subscription() == {f"{prefix}-a", f"{prefix}-b"}

            def grow():
                admin = KafkaAdminClient(bootstrap_servers=bootstrap)
                try:
                    admin.create_partitions({f"{prefix}-a": NewPartitions(3)})
                finally:
                    admin.close()
            await asyncio.to_thread(grow)
            await assigned({TopicPartition(f"{prefix}-a", p) for p in range(3)} | {TopicPartition(f"{prefix}-b", 0)})

    asyncio.run(asyncio.wait_for(main(), 200))
    assert [kind for kind, _ in events][:1] == ["assigned"]
    final = {TopicPartition(f"{prefix}-a", p) for p in range(3)} | {TopicPartition(f"{prefix}-b", 0)}
    assert events[-2:] == [("assigned", final), ("revoked", final)]  # the last one: closing leaves the group
    assert len([e for e in events if e[0] == "assigned"]) >= 3


def test_a_member_that_stops_polling_leaves_after_max_poll_interval_and_rejoins_when_it_polls(
        odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = names()
    create_topic(bootstrap, topic, 4)
    idle_listener = Recorder()
    idle = our_consumer(bootstrap, topic, group, idle_listener, max_poll_interval_ms=4000)
    busy = None
    try:
        wait_until(lambda: idle.poll(100) is not None and len(idle.assignment()) == 4, what="the first member")
        busy = our_member(our_consumer(bootstrap, topic, group))
        busy.start()
        # idle does not poll: it cannot rejoin for busy, and leaves when max_poll_interval_ms runs out
        wait_until(lambda: len(busy.assigned) == 4, what="the polling member to get every partition")
        assert idle_listener.events == [("assigned", frozenset(range(4)))]  # nothing happens outside poll
        wait_until(lambda: idle.poll(100) is not None and len(idle.assignment()) == 2, what="the idle member's return")
        wait_until(lambda: len(busy.assigned) == 2, what="the polling member to share again")
    finally:
        if busy is not None:
            busy.stop.set()
            busy.join(60)
        idle.close()
    assert idle_listener.events[1][0] == "revoked" and idle_listener.events[2][0] == "assigned"
    assert busy.error is None


def test_a_sync_listener_may_commit_through_the_consumer_when_its_partitions_are_revoked(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, GROUP_OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    topic, group = names()
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, 2, [b"v%d" % i for i in range(6)])
    holder: dict = {}

    class CommitOnRevoke(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            holder["consumer"].commit()  # blocking call from the listener: must not deadlock the loop
            holder["committed"] = sorted(revoked)

    first = holder["consumer"] = our_consumer(bootstrap, topic, group, CommitOnRevoke(), enable_auto_commit=False)
    second = None
    try:
        seen = []
        wait_until(lambda: seen.extend(r for rs in first.poll(200).values() for r in rs) or len(seen) == 6,
                   what="six records")
        second = our_consumer(bootstrap, topic, group)
        wait_until(lambda: first.poll(100) is not None and second.poll(100) is not None and "committed" in holder
                   and len(first.assignment()) == 1, what="the rebalance")
        committed = [second.committed(TopicPartition(topic, p)) for p in (0, 1)]
    finally:
        first.close()
        if second is not None:
            second.close()
    assert committed == [OffsetAndMetadata(3, "")] * 2
