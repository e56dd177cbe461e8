"""Moving replicas between the log dirs of one broker while they serve (AlterReplicaLogDirs, Kafka's KIP-113), on
real brokers: 2 brokers, broker 0 with two log dirs (``a`` and ``b``), RF 2.

``odradek-reassign-partitions --execute`` with ``log_dirs`` moves broker 0's replica of two partitions, one it leads
and one it follows, to its other dir, with several MB in each, while confluent-kafka's idempotent acks=all producer
writes to both and a consumer reads both throughout. Expected, as Kafka 2.8: every acknowledged record read exactly
once at contiguous offsets, no delivery error, the data ends in the new dir and the old one is removed,
DescribeLogDirs and ``--verify`` show the replicas there. The closing note prints the move time and what the
consumer saw (its longest wait between records while the producer wrote).
Then broker 0 is SIGKILLed right after accepting the move of a partition it alone holds: the restart resumes the
move from its future log and every record is read back from the new dir. Last, a move throttled with
``--replica-alter-log-dirs-throttle`` waits for its quota until the rate is raised, and ``--verify`` clears it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from odradek.clients.admin.client import Admin, ConfigResource, ConfigResourceType, NewTopic
from odradek.clients.admin.log_dirs import ReplicaInfo, TopicPartitionReplica
from odradek.protocol import errors
from odradek.tools.local_cluster import LocalCluster
from odradek.tools.reassign_partitions import LOG_DIR_RATE
from tests.conftest import module_cluster

from .helpers import IdempotentProducerLoad, console_tool, wait_until

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

TOPIC = "jbod-move"
FILL_MB = 6  # per partition, before the move
WAIT_S = 90.0  # an upper bound for the cluster to converge, never a speed assertion


class TwoDirCluster(LocalCluster):
    """Broker 0's log.dirs are ``a`` and ``b`` beside the cluster's data dir (a later --override wins)."""

    def broker_command(self, broker):
        command = super().broker_command(broker)
        if broker.broker_id == 0:
            parent = self.data_dir.parent
            command += ["--override", f"log.dirs={parent / 'a'},{parent / 'b'}"]
        return command


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    root = tmp_path_factory.mktemp("jbod")
    yield from module_cluster(zookeeper, root / "cluster", 2, {"log.segment.delete.delay.ms": "300"},
                              cluster_class=TwoDirCluster)


def broker_0_dirs(cluster) -> tuple[Path, Path]:
    parent = cluster.data_dir.parent
    return parent / "a", parent / "b"


class ConsumerLoad:
    """confluent-kafka's consumer reading every partition of the topic from offset 0 in a thread until told to
    stop at the given end offsets: (partition, offset, value) of each record, errors, and while ``busy`` (the
    producer writing) each wait between two records, with when it ended."""

    def __init__(self, bootstrap: str, partitions: int) -> None:
        from confluent_kafka import Consumer, TopicPartition as CTP
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "jbod-reader",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        self.consumer.assign([CTP(TOPIC, p, 0) for p in range(partitions)])
        self.records: list[tuple[int, int, bytes]] = []
        self.errors: list[str] = []
        self.ends: dict[int, int] | None = None
        self.busy = threading.Event()
        self.waits: list[tuple[float, float]] = []  # (when it ended, seconds)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._positions = {p: 0 for p in range(partitions)}

    def _run(self) -> None:
        last = time.monotonic()
        deadline = None
        while not self._stop.is_set():
            ends = self.ends
            if ends is not None:
                deadline = deadline or time.monotonic() + WAIT_S
                if all(self._positions[p] >= ends[p] for p in ends) or time.monotonic() > deadline:
                    return
            for msg in self.consumer.consume(500, timeout=0.2):
                if msg.error() is not None:
                    self.errors.append(str(msg.error()))
                    continue
                self.records.append((msg.partition(), msg.offset(), msg.value()))
                self._positions[msg.partition()] = msg.offset() + 1
                now = time.monotonic()
                if self.busy.is_set():
                    self.waits.append((now, now - last))
                last = now

    def __enter__(self) -> "ConsumerLoad":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:  # the test failed: stop reading now
            self._stop.set()
            self._thread.join(30)
            self.consumer.close()

    def finish(self, ends: dict[int, int]) -> None:
        """Read on up to ``ends``, then close."""
        self.ends = ends
        self._thread.join(WAIT_S + 30)
        self.consumer.close()


def fill(bootstrap: str, partitions: int, topic: str = TOPIC) -> int:
    """FILL_MB of 1 KiB records in each partition (acks=all); returns how many records."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                         "batch.size": 1 << 20, "enable.idempotence": True})
    count = FILL_MB * 1024
    for n in range(count * partitions):
        while True:
            try:
                producer.produce(topic, value=b"fill-%08d-" % n + b"x" * 1010, partition=n % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    del producer
    return count * partitions


def end_offsets(bootstrap: str, partitions: int, topic: str = TOPIC) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition as CTP
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "jbod-ends"})
    try:
        return {p: consumer.get_watermark_offsets(CTP(topic, p), timeout=30)[1] for p in range(partitions)}
    finally:
        consumer.close()


def broker_0_replicas(admin, topic: str = TOPIC) -> dict[int, dict[str, ReplicaInfo]]:
    """partition -> {log dir: ReplicaInfo} of broker 0's replicas of the topic, from DescribeLogDirs."""
    found: dict[int, dict[str, ReplicaInfo]] = {}
    for log_dir, description in admin.describe_log_dirs({topic: [0, 1]}, brokers=[0])[0].items():
        for tp, info in description.replicas.items():
            found.setdefault(tp.partition, {})[log_dir] = info
    return found


def longest_wait(waits: list[tuple[float, float]], start: float, end: float) -> float:
    """The longest wait between two records (ending) in [start, end)."""
    return max((seconds for when, seconds in waits if start <= when < end), default=0.0)


def move_seconds(cluster, partition: int) -> float:
    """From broker 0's log: the time from the move's start to the swap (each line's timestamp)."""
    stamps = {}
    for line in cluster.broker_log(0).read_text().splitlines():
        for what, text in (("start", f"Moving {TOPIC}-{partition} from"),
                           ("end", f"The current replica of {TOPIC}-{partition} is replaced")):
            if text in line:
                stamps[what] = datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f")
    return (stamps["end"] - stamps["start"]).total_seconds()


def test_replicas_move_to_the_other_dir_while_a_producer_and_a_consumer_run(cluster, tmp_path, capsys):
    bootstrap = cluster.bootstrap_servers
    a, b = broker_0_dirs(cluster)
    with Admin(bootstrap_servers=bootstrap) as admin:
        # broker 0 leads partition 0 and follows partition 1
        admin.create_topics([NewTopic(TOPIC, replica_assignments={0: [0, 1], 1: [1, 0]})])
        filled = fill(bootstrap, 2)
        source = {p: next(iter(dirs)) for p, dirs in broker_0_replicas(admin).items()}  # where each was placed
        assert set(source) == {0, 1} and set(source.values()) <= {str(a), str(b)}
        target = {p: str(b) if d == str(a) else str(a) for p, d in source.items()}
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": TOPIC, "partition": 0, "replicas": [0, 1], "log_dirs": [target[0], "any"]},
            {"topic": TOPIC, "partition": 1, "replicas": [1, 0], "log_dirs": ["any", target[1]]}]}))

        with ConsumerLoad(bootstrap, 2) as consumer:
            with IdempotentProducerLoad(bootstrap, TOPIC, 2, timeout_s=60) as load:
                wait_until(lambda: len(load.acked) >= 500 and len(consumer.records) > filled, WAIT_S,
                           "the producer and the consumer to get going")
                consumer.busy.set()
                wait_until(lambda: len(consumer.waits) >= 1000, WAIT_S, "a baseline: records read before any move",
                           interval=0.05)
                began = time.monotonic()
                # partition 0 through the Admin API (at once, so DescribeLogDirs may catch the future replica), then
                # the tool for both: partition 0 is moving or moved there already, which is no error
                assert admin.alter_replica_log_dirs({TopicPartitionReplica(TOPIC, 0, 0): target[0]}) == {
                    TopicPartitionReplica(TOPIC, 0, 0): None}
                seen_future: dict[int, int] = {}  # partition -> the offset lag DescribeLogDirs gave its future replica

                def moved() -> bool:
                    replicas = broker_0_replicas(admin)
                    for p, dirs in replicas.items():
                        if any(info.is_future for info in dirs.values()):
                            assert {d: info.is_future for d, info in dirs.items()} == {source[p]: False,
                                                                                      target[p]: True}, dirs
                            seen_future.setdefault(p, dirs[target[p]].offset_lag)
                    return all({d: info.is_future for d, info in replicas[p].items()} == {target[p]: False}
                               for p in target)
                moved()
                started = console_tool("reassign-partitions", "--bootstrap-server", bootstrap, "--execute",
                                       "--reassignment-json-file", str(plan))
                assert f"Successfully started log directory moves for: {TOPIC}-0-0,{TOPIC}-1-0" in started.stdout
                wait_until(moved, WAIT_S, "both replicas in their new dirs", interval=0.02)
                move_s = time.monotonic() - began
                moved_at = time.monotonic()
                verify = console_tool("reassign-partitions", "--bootstrap-server", bootstrap, "--verify",
                                      "--reassignment-json-file", str(plan))
                for p in (0, 1):
                    assert f"Reassignment of replica {TOPIC}-{p}-0 completed successfully." in verify.stdout
                acked_at_move = len(load.acked)
                wait_until(lambda: len(load.acked) >= acked_at_move + 500, WAIT_S, "the producer to go on after the move")
                consumer.busy.clear()
            assert not load.failed and not load.fatal, (load.failed[:5], load.fatal)
            ends = end_offsets(bootstrap, 2)
            consumer.finish(ends)

    # every record once, at contiguous offsets, and every acknowledged one among them
    assert not consumer.errors, consumer.errors[:5]
    for p in (0, 1):
        offsets = [o for q, o, _ in consumer.records if q == p]
        assert offsets == list(range(ends[p])), f"partition {p}: offsets not contiguous"
    values = [v for _, _, v in consumer.records]
    assert len(values) == len(set(values)) and load.acked <= set(values)
    # the data is in the new dirs; the old dirs keep nothing of the partitions (the -delete dirs go after 300 ms)
    for p in (0, 1):
        assert (Path(target[p]) / f"{TOPIC}-{p}").is_dir()

    def old_dirs_gone() -> bool:
        renamed = [n for d in (a, b) for n in os.listdir(d) if n.startswith(TOPIC) and n.endswith(("-delete", "-future"))]
        return not renamed and not any((Path(source[p]) / f"{TOPIC}-{p}").exists() for p in (0, 1))
    wait_until(old_dirs_gone, WAIT_S, "the old replicas to be removed")
    with capsys.disabled():
        print(f"\n[jbod] moved 2 replicas of {FILL_MB}+ MB each between log dirs while serving: the led one in "
              f"{move_seconds(cluster, 0):.2f} s, the followed one in {move_seconds(cluster, 1):.2f} s (from the "
              f"broker's log; {move_s:.2f} s from the first request to DescribeLogDirs showing both moved, the tool's start-up included); future replicas seen in DescribeLogDirs (partition: offset lag) {seen_future}; "
              f"producer acknowledged {len(load.acked)} records, none failed; the consumer read {len(values)} "
              f"records once each, longest wait between records while "
              f"producing: {longest_wait(consumer.waits, 0, began):.2f} s before the moves, "
              f"{longest_wait(consumer.waits, began, moved_at):.2f} s during them, "
              f"{longest_wait(consumer.waits, moved_at, float('inf')):.2f} s after")


def test_the_errors_kafka_answers(cluster):
    a, _ = broker_0_dirs(cluster)
    broker_1_dir = str(cluster.brokers[1].log_dirs)
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("jbod-only-0", replica_assignments={0: [0]})])
        wait_until(lambda: broker_0_replicas_of(admin, "jbod-only-0"), WAIT_S, "the replica on broker 0")
        results = admin.alter_replica_log_dirs({
            TopicPartitionReplica("jbod-only-0", 0, 0): "/not/a/log/dir",
            TopicPartitionReplica("no-such-topic", 0, 0): str(a),
            TopicPartitionReplica("jbod-only-0", 0, 1): broker_1_dir,  # not on broker 1 (yet)
        })
    assert {r.topic + f"@{r.broker_id}": type(e) for r, e in results.items()} == {
        "jbod-only-0@0": errors.LogDirNotFoundError, "no-such-topic@0": errors.UnknownTopicOrPartitionError,
        "jbod-only-0@1": errors.ReplicaNotAvailableError}


def broker_0_replicas_of(admin, topic: str) -> bool:
    return any(tp.topic == topic for d in admin.describe_log_dirs({topic: [0]}, brokers=[0])[0].values()
               for tp in d.replicas)


def test_a_move_cut_by_a_crash_resumes_after_the_restart(cluster, capsys):
    """Broker 0 is SIGKILLed right after it accepted the move of its only replica of a partition (RF 1, so nothing
    else holds the data): after the restart the move resumes from its future log (or, had it finished before the
    kill, stays done), and every record is there, in the new dir."""
    topic = "jbod-crash"
    bootstrap = cluster.bootstrap_servers
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(topic, replica_assignments={0: [0]})])
        filled = fill(bootstrap, 1, topic)
        [source] = broker_0_replicas(admin, topic)[0]
        target = next(str(d) for d in broker_0_dirs(cluster) if str(d) != source)
        assert admin.alter_replica_log_dirs({TopicPartitionReplica(topic, 0, 0): target}) == {
            TopicPartitionReplica(topic, 0, 0): None}
    cluster.kill_broker(0)
    futures = [n for n in os.listdir(target) if n.startswith(f"{topic}-0.") and n.endswith("-future")]
    cluster.start_broker(0)
    with Admin(bootstrap_servers=bootstrap) as admin:
        wait_until(lambda: {d: i.is_future for d, i in broker_0_replicas(admin, topic).get(0, {}).items()}
                   == {target: False}, WAIT_S, "the replica in its new dir")
    assert end_offsets(bootstrap, 1, topic) == {0: filled}
    from confluent_kafka import Consumer, TopicPartition as CTP
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "jbod-crash", "enable.auto.commit": False})
    consumer.assign([CTP(topic, 0, 0)])
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + WAIT_S
        while len(values) < filled and time.monotonic() < deadline:
            values += [m.value() for m in consumer.consume(1000, timeout=1.0) if m.error() is None]
    finally:
        consumer.close()
    assert [v[:14] for v in values] == [b"fill-%08d-" % n for n in range(filled)]
    with capsys.disabled():
        print(f"\n[jbod] broker killed {'during' if futures else 'after'} a move of {FILL_MB} MB: after the restart "
              f"all {filled} records were read back from the new dir")


def test_a_replica_added_by_a_reassignment_is_created_in_the_dir_asked_for(cluster, tmp_path):
    """Kafka's executeMoves: the new replica's broker answers REPLICA_NOT_AVAILABLE until the controller has it
    create the replica, which it then places in the remembered dir (or moves there, had it been created first)."""
    topic = "jbod-new-replica"
    bootstrap = cluster.bootstrap_servers
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(topic, replica_assignments={0: [1]})])
        wait_until(lambda: admin.describe_log_dirs({topic: [0]}, brokers=[1])[1], WAIT_S, "the replica on broker 1")
        # the dir broker 0's fewest-logs rule would not pick
        counts = {str(d): len(os.listdir(d)) for d in broker_0_dirs(cluster)}
        target = max(counts, key=lambda d: (counts[d], d))
        plan = tmp_path / "add.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": topic, "partition": 0, "replicas": [1, 0], "log_dirs": ["any", target]}]}))
        started = console_tool("reassign-partitions", "--bootstrap-server", bootstrap, "--execute",
                               "--reassignment-json-file", str(plan))
        assert f"Successfully started log directory move for: {topic}-0-0" in started.stdout
        wait_until(lambda: {d: i.is_future for d, i in broker_0_replicas(admin, topic).get(0, {}).items()}
                   == {target: False}, WAIT_S, "broker 0's new replica in the dir asked for")

    def verified() -> str | None:
        # the replica is in place before it has caught up and joined the ISR, which completes the reassignment
        out = console_tool("reassign-partitions", "--bootstrap-server", bootstrap, "--verify",
                           "--reassignment-json-file", str(plan)).stdout
        return out if f"Reassignment of partition {topic}-0 is complete." in out else None

    verify = wait_until(verified, WAIT_S, "the reassignment to complete")
    assert f"Reassignment of replica {topic}-0-0 completed successfully." in verify


def test_a_throttled_move_waits_for_its_quota_and_verify_or_cancel_clears_it(cluster, tmp_path, capsys):
    """``--replica-alter-log-dirs-throttle`` (Kafka's replica.alter.log.dirs.io.max.bytes.per.second on the brokers
    given a log dir): at 1 B/s broker 0 copies at most one step of the move and then waits; resubmitted with
    ``--additional`` and a high rate the move completes and ``--verify`` clears the rate. A second move held the
    same way is sent back by ``--cancel`` (Kafka's cancelAssignment), which clears the rate too."""
    topic = "jbod-throttled"
    bootstrap = cluster.bootstrap_servers
    broker_0 = ConfigResource(ConfigResourceType.BROKER, "0")
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(topic, replica_assignments={0: [0]})])
        fill(bootstrap, 1, topic)
        [source] = broker_0_replicas(admin, topic)[0]
        target = next(str(d) for d in broker_0_dirs(cluster) if str(d) != source)

        def rate() -> str | None:
            entry = admin.describe_configs([broker_0])[broker_0].get(LOG_DIR_RATE)
            return None if entry is None else entry.value

        def reassign(*args: str) -> str:
            return console_tool("reassign-partitions", "--bootstrap-server", bootstrap, *args).stdout

        def start_held_move(to: str) -> tuple[Path, list[tuple[int, int]]]:
            """Move the replica to ``to`` at 1 B/s; the sizes (current, future) seen while it is held."""
            # The rate in force on broker 0 before the move starts, so that no step runs ahead of it (the tool
            # writes it just before asking for the move, and a broker applies it when ZooKeeper tells it).
            console_tool("configs", "--bootstrap-server", bootstrap, "--alter", "--entity-type", "brokers",
                         "--entity-name", "0", "--add-config", f"{LOG_DIR_RATE}=1")
            wait_until(lambda: rate() == "1", WAIT_S, "broker 0 applying the move throttle")
            plan = tmp_path / f"to-{Path(to).name}.json"
            plan.write_text(json.dumps({"version": 1, "partitions": [
                {"topic": topic, "partition": 0, "replicas": [0], "log_dirs": [to]}]}))
            started = reassign("--execute", "--reassignment-json-file", str(plan),
                               "--replica-alter-log-dirs-throttle", "1")
            assert "You must run --verify periodically" in started
            assert "The replica-alter-dir throttle limit was set to 1 B/s" in started
            here = next(d for d in (source, target) if d != to)

            def sizes() -> tuple[int, int]:
                found = broker_0_replicas(admin, topic)[0]
                assert found.keys() == {here, to} and found[to].is_future, f"the move was not held: {found}"
                return found[here].size, found[to].size

            # The copy's first step takes at most one batch of the fill (1 MiB) or 256 KiB (nothing if the bytes
            # of an earlier move are still in the quota's 11 s window); after it the rate is far above 1 B/s, so
            # each of these looks (each a request the broker's loop answers between steps) finds the copy where
            # it stopped.
            looks = [sizes() for _ in range(5)]
            assert all(copied <= (1 << 20) + (64 << 10) < whole for whole, copied in looks), looks
            return plan, looks

        plan, looks = start_held_move(target)
        verify = reassign("--verify", "--reassignment-json-file", str(plan))
        assert f"Reassignment of replica {topic}-0-0 is still in progress." in verify
        assert "Clearing broker-level throttles" not in verify and rate() == "1"
        raised = reassign("--execute", "--additional", "--reassignment-json-file", str(plan),
                          "--replica-alter-log-dirs-throttle", "100000000")
        assert "The replica-alter-dir throttle limit was set to 100000000 B/s" in raised

        def verified() -> str | None:
            out = reassign("--verify", "--reassignment-json-file", str(plan))
            return out if f"Reassignment of replica {topic}-0-0 completed successfully." in out else None

        done = wait_until(verified, WAIT_S, "the throttled move to complete once the rate was raised")
        assert "Clearing broker-level throttles on brokers 0,1" in done
        wait_until(lambda: rate() is None, WAIT_S, "broker 0 dropping the move throttle")
        assert {d: i.is_future for d, i in broker_0_replicas(admin, topic)[0].items()} == {target: False}

        back, _ = start_held_move(source)
        cancelled = reassign("--cancel", "--reassignment-json-file", str(back))
        assert "None of the specified partition reassignments are active." in cancelled
        assert f"Successfully started log directory move for: {topic}-0-0" in cancelled
        assert "Clearing broker-level throttles on brokers 0,1" in cancelled
        wait_until(lambda: rate() is None, WAIT_S, "broker 0 dropping the move throttle")
        wait_until(lambda: {d: i.is_future for d, i in broker_0_replicas(admin, topic)[0].items()} == {target: False},
                   WAIT_S, "the cancelled move's future replica gone")
    with capsys.disabled():
        print(f"\n[jbod] a move throttled to 1 B/s held at {max(c for _, c in looks)} of {looks[0][0]} bytes "
              f"through {len(looks)} looks and a --verify; raised to 100 MB/s it completed; a second one was "
              f"cancelled")
