"""odradek-replica-verification against a real 3-broker cluster (RF 3).

The tool fetches every replica with replica id -2 (brokers let it read followers below their high
watermark): with all replicas in step it reports max lag 0; with a follower SIGSTOPped while records are
produced the lag grows, and returns to 0 after SIGCONT; a follower whose segment holds a different (valid)
batch at the same offsets is reported as an unmatched checksum.
"""

from __future__ import annotations

import queue
import re
import signal
import struct
import subprocess
import sys
import threading
import time
import uuid

import pytest

from odradek.clients import Producer
from odradek.clients.admin.client import Admin, NewTopic
from odradek.protocol.records.batch import CRC_OFFSET, iter_batches

pytestmark = pytest.mark.timeout(300)

_LAG = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}: max lag is (-?\d+) for partition (\S+) at offset (-?\d+) "
                  r"among (\d+) partitions$")


class Tool:
    """The tool as a subprocess, its stdout lines collected by a thread."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "odradek.tools.replica_verification", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, predicate, timeout: float = 90.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                assert self.proc.poll() is None or not self.lines.empty(), \
                    f"the tool exited ({self.proc.returncode}): {self.seen} {self.proc.stderr.read()}"
                continue
            self.seen.append(line)
            if predicate(line):
                return line
        raise AssertionError(f"no matching line within {timeout} s; saw {self.seen[-10:]}")

    def wait_for_lag(self, predicate, timeout: float = 90.0, at_offset: int | None = None
                     ) -> tuple[int, str, int, int]:
        """The first report whose lag meets ``predicate`` (and whose verified offset is ``at_offset``: with
        acks=1 a lag of 0 is also reported before the followers fetched, while the high watermark is 0)."""
        def matches(line: str) -> bool:
            m = _LAG.match(line)
            return m is not None and predicate(int(m.group(1))) and at_offset in (None, int(m.group(3)))
        line = self.wait_for(matches, timeout)
        m = _LAG.match(line)
        assert m is not None
        return int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(30)


@pytest.fixture
def tools():
    started: list[Tool] = []
    yield lambda *args: started.append(Tool(*args)) or started[-1]
    for tool in started:
        tool.stop()


def produce(cluster, topic: str, count: int, prefix: str = "record", partitions: int = 2) -> None:
    producer = Producer(bootstrap_servers=cluster.bootstrap_servers, acks=1)
    try:
        for i in range(count):
            producer.send(topic, value=f"{prefix}-{i}".encode(), partition=i % partitions)
        producer.flush(60)
    finally:
        producer.close()


def leaders_and_replicas(cluster, topic: str) -> dict[int, tuple[int, list[int]]]:
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        [description] = admin.describe_topics([topic])
    return {p.partition: (p.leader, list(p.replicas)) for p in description.partitions}


@pytest.fixture
def cluster(odradek_cluster_factory):
    # a short replica.lag.time.max.ms: a stopped follower leaves the ISR soon, so the leader's high
    # watermark moves on without it
    return odradek_cluster_factory(3, {"replica.lag.time.max.ms": "3000"})


def create_topic(cluster, topic: str, partitions: int = 2) -> None:
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=3)])


def test_lag_is_zero_in_step_grows_while_a_follower_is_stopped_and_recovers(cluster, tools):
    topic = f"verify-{uuid.uuid4().hex[:6]}"
    create_topic(cluster, topic)
    produce(cluster, topic, 200)
    tool = tools("--broker-list", cluster.bootstrap_servers, "--topic-white-list", "verify-.*",
                 "--time", "-2", "--report-interval-ms", "200", "--max-wait-ms", "300")
    tool.wait_for(lambda line: line.endswith(": verification process is started."))
    lag, _, offset, count = tool.wait_for_lag(lambda lag: lag == 0, at_offset=100)
    assert count == 2 and offset == 100  # both partitions verified to their end (100 records each)

    leader, replicas = leaders_and_replicas(cluster, topic)[0]
    follower = next(r for r in replicas if r != leader)
    cluster.kill_broker(follower, signal.SIGSTOP)
    try:
        producing = threading.Thread(target=produce, args=(cluster, topic, 400, "during"))
        producing.start()
        first, tp, _, _ = tool.wait_for_lag(lambda lag: lag > 0, timeout=120)
        producing.join(120)
        produce(cluster, topic, 200, "more")
        grown, _, _, _ = tool.wait_for_lag(lambda lag: lag > first, timeout=120)
        assert grown > first
    finally:
        cluster.kill_broker(follower, signal.SIGCONT)
    tool.wait_for_lag(lambda lag: lag == 0, timeout=120)  # the follower caught up: verified to the end again
    assert tool.proc.poll() is None  # no mismatch


def corrupt_first_batch_value(segment, old: bytes, new: bytes) -> int:
    """Replace ``old`` by ``new`` (same length) inside the first batch holding it and give that batch a
    valid CRC again: a different but well-formed batch at the same offsets. Returns its last offset."""
    data = bytearray(segment.read_bytes())
    position = 0
    for batch in iter_batches(bytes(data)):
        size = len(batch.buffer)
        raw = bytes(data[position:position + size])
        if old in raw:
            at = position + raw.index(old)
            data[at:at + len(new)] = new
            view = next(iter_batches(memoryview(data)[position:position + size]))
            struct.pack_into(">I", data, position + CRC_OFFSET, view.compute_crc())
            segment.write_bytes(bytes(data))
            return batch.last_offset
        position += size
    raise AssertionError(f"{old!r} not found in {segment}")


def test_a_follower_with_a_different_batch_is_reported(cluster, tools):
    topic = f"verify-{uuid.uuid4().hex[:6]}"
    create_topic(cluster, topic, partitions=1)
    produce(cluster, topic, 50, partitions=1)
    leader, replicas = leaders_and_replicas(cluster, topic)[0]
    follower = next(r for r in replicas if r != leader)
    tool = tools("--broker-list", cluster.bootstrap_servers, "--topic-white-list", topic, "--time", "-2",
                 "--report-interval-ms", "200", "--max-wait-ms", "300")
    tool.wait_for_lag(lambda lag: lag == 0, at_offset=50)  # all replicas hold the 50 records
    tool.stop()

    cluster.stop_broker(follower)  # clean: no recovery on start, the edited batch stays as it is
    segment = cluster.brokers[follower].log_dirs / f"{topic}-0" / "00000000000000000000.log"
    last_offset = corrupt_first_batch_value(segment, b"record-7", b"RECORD-7")
    cluster.start_broker(follower)

    tool = tools("--broker-list", cluster.bootstrap_servers, "--topic-white-list", topic, "--time", "-2",
                 "--report-interval-ms", "200", "--max-wait-ms", "300")
    line = tool.wait_for(lambda l: "unmatched checksum" in l)
    assert re.fullmatch(rf"\d{{4}}-.*,\d{{3}}: partition {topic}-0 has unmatched checksum at offset {last_offset}; "
                        r"replica \d+'s checksum \d+; replica \d+'s checksum \d+", line), line
    assert str(follower) in line.split("; ", 1)[1]
    tool.wait_for_lag(lambda lag: lag == 0)  # a checksum difference is reported, verification goes on


def test_usage_errors(tools):
    for args, message in (([], 'Missing required argument "[broker-list]"'),
                          (["--broker-list", "nohostport"], "Please provide valid host:port"),
                          (["--broker-list", "h:1", "--topic-white-list", "("], "( is an invalid regex."),
                          (["--broker-list", "h:1", "--fetch-size", "big"], "--fetch-size 'big': expected an integer"),
                          (["--broker-list", "h:1", "--time", "-5"], "--time '-5': expected an integer >= -2")):
        result = subprocess.run([sys.executable, "-m", "odradek.tools.replica_verification", *args],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 1 and message in result.stderr and result.stderr.count("\n") == 1, result.stderr
