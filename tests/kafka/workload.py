"""Loads and checks shared by the mixed-cluster and rolling-migration tests: an idempotent acks=all producer
of sequence-numbered records on a thread, a poll for a condition, reading a topic back whole, a preferred
leader election."""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterable

from odradek.clients import Producer
from odradek.protocol.errors import NONE, ElectionNotNeededError, for_code  # type: ignore[attr-defined]
from odradek.protocol.messages import ElectLeadersRequest


def wait_until(condition: Callable[[], object], what: str, timeout: float = 90.0) -> object:
    """Poll ``condition`` until it is true (an exception counts as false: a broker may be restarting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except Exception:
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(0.2)


class Load:
    """An idempotent acks=all producer sending numbered records (``prefix`` + 8 digits) to ``topic`` from a
    thread until stopped; ``acked`` holds the values the brokers acknowledged."""

    def __init__(self, bootstrap: str, topic: str, prefix: bytes = b""):
        self.topic = topic
        self.prefix = prefix
        self.producer = Producer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                                 retries=1_000_000, delivery_timeout_ms=120_000, request_timeout_ms=10_000,
                                 linger_ms=5)
        self.acked: set[bytes] = set()
        self.failed = 0
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"load-{topic}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            futures = []
            for _ in range(50):
                value = self.prefix + b"%08d" % self.sent
                self.sent += 1
                future = self.producer.send(self.topic, value, key=value)
                future.add_callback(lambda _metadata, v=value: self.acked.add(v))
                future.add_errback(lambda _error: self._failed())
                futures.append(future)
            try:
                futures[-1].get(timeout=150)  # keeps at most one burst in flight
            except Exception:
                pass

    def _failed(self) -> None:
        self.failed += 1

    def wait_for_more(self, count: int = 300) -> None:
        target = len(self.acked) + count
        wait_until(lambda: len(self.acked) >= target, f"{count} more acknowledged records", 120.0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(200)
        self.producer.flush(timeout=150)
        self.producer.close()


def consume_all(cluster, topic: str, partitions: Iterable[int]) -> list[bytes]:
    """Every record value of ``topic``'s ``partitions`` from offset 0 to the high watermark (uncommitted
    transactional records and control batches aside: the client returns data records only)."""
    values = []
    with cluster.client(timeout=10.0) as client:
        for partition in partitions:
            offset = 0
            while True:
                fetched = client.fetch(topic, partition, offset, max_wait_ms=0, max_bytes=1 << 20)
                if not fetched.records:
                    assert offset >= fetched.high_watermark, "the fetch stopped below the high watermark"
                    break
                values += [r.value for r in fetched.records]
                offset = fetched.records[-1].offset + 1
    return values


def elect_preferred(cluster, topic: str, partitions: Iterable[int], timeout: float = 90.0) -> float:
    """Ask the controller for a preferred leader election of ``topic``'s ``partitions`` (ElectLeaders v1) until
    each one is elected or needed none; returns the seconds it took.

    Kafka holds the answer until its own metadata cache shows the new leaders (DelayedElectLeader), up to the
    request's ``timeout_ms``, and answers a partition it could not elect yet with a retriable error (the
    preferred replica not yet back in the ISR, a controller move, the request's own time-out): those are asked
    again, as kafka-leader-election.sh's users would. Kafka 2.8 can miss the UpdateMetadata that completes
    its wait (it looks for waiting elections before this one is counted as waiting) and then holds the answer
    the whole ``timeout_ms``: hence 10 s per request rather than 30."""
    started = time.monotonic()
    pending = set(partitions)
    last_errors: dict[int, object] = {}  # partition -> error code (-1: the request failed)
    while pending:
        left = timeout - (time.monotonic() - started)
        if left <= 0:
            raise AssertionError(f"preferred leaders of {topic} not elected within {timeout:g} s: {last_errors}")
        request_ms = int(min(10.0, left) * 1000)
        try:
            with cluster.client() as client:
                boss = client.metadata(topics=[]).controller_id
                answer = client.send(boss, ElectLeadersRequest(election_type=0, timeout_ms=request_ms,
                                                               topic_partitions=[ElectLeadersRequest.TopicPartitions(
                                                                   topic=topic, partitions=sorted(pending))]),
                                     version=1, timeout=request_ms / 1000.0 + 10.0)
        except (OSError, TimeoutError) as exc:  # the controller moving or restarting
            last_errors = {-1: repr(exc)}
            time.sleep(0.2)
            continue
        last_errors = {p.partition_id: p.error_code for result in answer.replica_election_results
                       for p in result.partition_result if p.error_code not in (NONE, ElectionNotNeededError.code)}
        unretriable = {p: e for p, e in last_errors.items() if not for_code(e).retriable}
        assert not unretriable, f"preferred leader election of {topic} refused: {unretriable}"
        pending = set(last_errors)
        if pending:
            time.sleep(0.2)
    return time.monotonic() - started
