"""Members of one consumer group from different client families, each driven the same way: it polls, notes
every record it read (before committing), commits synchronously after each batch, and reports its assignment.

``JavaMember`` is tests/jvm's GroupMember program in a JVM of its own; the others (librdkafka through
confluent-kafka, kafka-python, and our odradek.clients Consumer) poll in a thread of this process. ``stop()``
closes the consumer, which leaves the group (a rebalance for the others).
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

from tests.integration.security_clients import Profile

from . import jvm

SESSION_MS = 10000


class Member:
    """What the test sees of a member: the records it read and its current assignment."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.records: list[tuple[int, int, bytes]] = []  # (partition, offset, value)
        self.assignment: frozenset[int] = frozenset()
        self.errors: list[str] = []
        self.closed = False
        self._lock = threading.Lock()

    def _took(self, batch: list[tuple[int, int, bytes]]) -> None:
        with self._lock:
            self.records.extend(batch)

    def consumed(self) -> list[tuple[int, int, bytes]]:
        with self._lock:
            return list(self.records)

    def stop(self) -> None:
        raise NotImplementedError


class ThreadMember(Member):
    """A Python family's consumer polled by a thread; ``open_consumer`` returns (poll, commit, assignment, close),
    poll returning [(partition, offset, value)] and assignment a set of partitions."""

    def __init__(self, name: str, open_consumer) -> None:
        super().__init__(name)
        self._stopping = threading.Event()
        self._opened = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(open_consumer,), name=f"member-{name}", daemon=True)
        self._thread.start()

    def _run(self, open_consumer) -> None:
        try:
            poll, commit, assignment, close = open_consumer()
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(f"open: {exc!r}")
            self.closed = True
            return
        try:
            while not self._stopping.is_set():
                batch = poll()
                if batch:
                    self._took(batch)
                    try:
                        commit()
                    except Exception as exc:  # noqa: BLE001 - a failed commit may hand records on twice
                        self.errors.append(f"commit: {exc!r}")
                self.assignment = frozenset(assignment())
        except Exception as exc:  # noqa: BLE001
            self.errors.append(f"poll: {exc!r}")
        finally:
            close()
            self.closed = True

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(60)


def confluent_member(name: str, profile: Profile, topic: str, group: str, strategy: str) -> ThreadMember:
    def open_consumer():
        import confluent_kafka

        consumer = confluent_kafka.Consumer({**profile.librdkafka(), "group.id": group, "client.id": name,
                                             "partition.assignment.strategy": strategy,
                                             "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                             "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 1000})
        consumer.subscribe([topic])

        def poll():
            messages = consumer.consume(num_messages=100, timeout=0.1)
            errors = [m.error() for m in messages if m.error() is not None]
            if errors:
                raise RuntimeError(f"librdkafka: {errors}")
            return [(m.partition(), m.offset(), m.value()) for m in messages]

        return (poll, lambda: consumer.commit(asynchronous=False),
                lambda: {tp.partition for tp in consumer.assignment()}, consumer.close)

    return ThreadMember(name, open_consumer)


def kafka_python_member(name: str, profile: Profile, topic: str, group: str, strategy: str) -> ThreadMember:
    def open_consumer():
        import kafka.coordinator.assignors.range as ranged
        import kafka.coordinator.assignors.roundrobin as roundrobin

        from tests.integration.helpers import kafka_python_group_consumer

        assignor = {"range": ranged.RangePartitionAssignor, "roundrobin": roundrobin.RoundRobinPartitionAssignor}
        consumer = kafka_python_group_consumer(
            topic, bootstrap_servers=profile.bootstrap, group_id=group, client_id=name,
            partition_assignment_strategy=[assignor[strategy]], enable_auto_commit=False,
            auto_offset_reset="earliest", session_timeout_ms=SESSION_MS, heartbeat_interval_ms=1000,
            **profile.kafka_python())

        def poll():
            return [(r.partition, r.offset, r.value) for records in consumer.poll(100).values() for r in records]

        return (poll, consumer.commit, lambda: {tp.partition for tp in consumer.assignment()}, consumer.close)

    return ThreadMember(name, open_consumer)


def odradek_member(name: str, profile: Profile, topic: str, group: str, strategy: str) -> ThreadMember:
    def open_consumer():
        from odradek.clients import Consumer

        consumer = Consumer(topic, bootstrap_servers=profile.bootstrap, group_id=group, client_id=name,
                            partition_assignment_strategy=[strategy], enable_auto_commit=False,
                            auto_offset_reset="earliest", session_timeout_ms=SESSION_MS,
                            heartbeat_interval_ms=1000, **profile.ours())

        def poll():
            return [(r.partition, r.offset, r.value) for records in consumer.poll(timeout_ms=100).values()
                    for r in records]

        return (poll, consumer.commit, lambda: {tp.partition for tp in consumer.assignment()}, consumer.close)

    return ThreadMember(name, open_consumer)


class JavaMember(Member):
    """odradek.jvmtests.GroupMember with kafka-clients ``version``; its WARN/ERROR lines land in ``log_lines``."""

    def __init__(self, name: str, version: str, profile: Profile, properties: Path, topic: str, group: str,
                 strategy: str) -> None:
        super().__init__(name)
        self.version = version
        self.log_lines: list[str] = []
        self.stderr: list[str] = []
        command = jvm.client_command(version, "odradek.jvmtests.GroupMember", profile.bootstrap, topic, group,
                                     strategy, name, client_config=properties)
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        for line in self._process.stdout:
            if not line.startswith("{"):
                continue
            message = json.loads(line)
            if "records" in message:
                self._took([(p, o, v.encode()) for p, o, v in message["records"]])
            elif "assigned" in message:
                self.assignment = frozenset(message["assigned"])
            elif "closed" in message:
                self.closed = True

    def _read_stderr(self) -> None:
        for line in self._process.stderr:
            self.stderr.append(line.rstrip("\n"))
        self.log_lines = jvm.log_lines("\n".join(self.stderr))

    def stop(self) -> None:
        try:
            self._process.stdin.close()
            self._process.wait(60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            self.errors.append("did not close within 60 s")
        for reader in self._readers:
            reader.join(10)
        if self._process.returncode != 0:
            self.errors.append(f"exited with {self._process.returncode}: " + " | ".join(self.stderr[-5:]))
