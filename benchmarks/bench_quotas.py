"""Client quotas: what a throttled client gets, and what quota accounting costs the request path.

    python benchmarks/bench_quotas.py              # full run: Kafka's 11 x 1 s quota window, 30 s per client
    python benchmarks/bench_quotas.py --quick      # smoke run: a 2 x 1 s window, 8 s per client

1. Request path: ApiVersions v3 round trips/s through SocketServer on uvloop (8 connections pipelining 100,
   as bench_network.py), without client quotas and with a ``<default>`` user ``request_percentage`` so
   large that nothing is throttled but every request is measured (the cost of the sensors).
2. Throttled clients: one broker (``LocalCluster``); confluent-kafka producers and ours (``Producer``, which
   waits out each throttle as Java's client does) of 10 kB records with client ids under
   ``producer_byte_rate`` quotas, and one of each without, run one after the other; then kafka-python
   consumers and ours under ``consumer_byte_rate`` read a prefilled topic. The rate is taken over the
   second half of each run (the first half lets the quota window fill: Kafka's Rate lets a young client
   burst up to (window.num - 1) windows' worth), with the throttles the client was told of (ours: its
   produce-/fetch-throttle-time-max metric).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_network import serve_and_measure  # noqa: E402

from odradek.broker.config import KafkaConfig  # noqa: E402
from odradek.broker.kafka_apis import KafkaApis  # noqa: E402
from odradek.broker.quota.client_quotas import ClientQuotas  # noqa: E402


# -- 1. the request path ------------------------------------------------------------------------------------

async def round_trips(with_quotas: bool, seconds: float) -> float:
    apis = KafkaApis()
    if with_quotas:
        quotas = ClientQuotas.from_config(KafkaConfig({"zookeeper.connect": "localhost:2181"}))
        quotas.apply_entity_config("users", "<default>", {"request_percentage": "1000000"})
        apis.throttle = quotas.throttle_response
    return await serve_and_measure(8, 100, seconds, 8, apis)


def request_path(runs: int, seconds: float) -> None:
    print(f"ApiVersions v3 round trips/s, 8 connections pipelining 100 (median of {runs} x {seconds:g} s, "
          "alternating)")
    samples: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(runs):
        for with_quotas in (False, True):
            samples[with_quotas].append(uvloop.run(round_trips(with_quotas, seconds)))
    rates = {k: statistics.median(v) for k, v in samples.items()}
    print(f"  {'no client quotas':<24} {rates[False]:>10,.0f}/s")
    print(f"  {'every request measured':<24} {rates[True]:>10,.0f}/s")
    print(f"  measured / unmeasured    {rates[True] / rates[False]:>10.2f}x")


# -- 2. throttled clients -------------------------------------------------------------------------------------

def set_quota(servers: str, client_id: str, key: str, value: float) -> None:
    from odradek.clients.admin.client import Admin, ClientQuotaAlteration, ClientQuotaEntity
    with Admin(servers) as admin:
        admin.alter_client_quotas([ClientQuotaAlteration(ClientQuotaEntity({"client-id": client_id}),
                                                         [ClientQuotaAlteration.Op(key, value)])])


def produce_for(servers: str, topic: str, client_id: str, seconds: float) -> tuple[float, int, float]:
    """(B/s acknowledged over the second half, throttle events, longest throttle in ms)."""
    from confluent_kafka import Producer

    acked: list[tuple[float, int]] = []
    throttles: list[float] = []
    producer = Producer({"bootstrap.servers": servers, "client.id": client_id, "linger.ms": 5,
                         "queue.buffering.max.kbytes": 4096,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    value = os.urandom(10_000)

    def delivered(err, msg) -> None:
        if err is None:
            acked.append((time.monotonic(), len(msg.value())))

    started = time.monotonic()
    deadline = started + seconds
    while time.monotonic() < deadline:
        try:
            producer.produce(topic, value, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.purge()
    producer.flush(30)
    half = started + seconds / 2
    second_half = sum(size for at, size in acked if at >= half)
    return second_half / (seconds / 2), len(throttles), max(throttles, default=0.0) * 1000


def produce_ours_for(servers: str, topic: str, client_id: str, seconds: float) -> tuple[float, float]:
    """(B/s acknowledged over the second half, longest throttle in ms) of our Producer, at most 4 MB queued."""
    from odradek.clients.producer.sync_producer import Producer

    acked: list[tuple[float, int]] = []
    producer = Producer(bootstrap_servers=servers, client_id=client_id, linger_ms=5, batch_size=1_000_000)
    value = os.urandom(10_000)
    queued: collections.deque = collections.deque()

    def delivered(future) -> None:
        if future.exception() is None:
            acked.append((time.monotonic(), len(value)))

    started = time.monotonic()
    deadline = started + seconds
    while time.monotonic() < deadline:
        if len(queued) >= 400:  # 4 MB of 10 kB records, as confluent-kafka's queue.buffering.max.kbytes above
            try:
                queued.popleft().exception(max(deadline - time.monotonic(), 0.001))
            except concurrent.futures.TimeoutError:
                break
            continue
        future = producer.send(topic, value)
        future.add_done_callback(delivered)
        queued.append(future)
    throttle = producer.metrics()["producer-metrics"]["produce-throttle-time-max"]
    producer.close(timeout=0)  # what is still queued fails; only acknowledgements before the deadline count
    half = started + seconds / 2
    second_half = sum(size for at, size in acked if half <= at < deadline)
    return second_half / (seconds / 2), throttle


def consume_for(servers: str, topic: str, client_id: str, seconds: float,
                ours: bool = False) -> tuple[float, float]:
    """(B/s read over the second half, longest throttle in ms) of a kafka-python consumer, or of ours."""
    if ours:
        from odradek.clients.consumer.sync_consumer import Consumer
        from odradek.clients.types import TopicPartition

        consumer = Consumer(bootstrap_servers=servers, client_id=client_id, enable_auto_commit=False)
    else:
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=servers, client_id=client_id, enable_auto_commit=False,
                                 fetch_max_bytes=50_000_000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    started = time.monotonic()
    half, deadline = started + seconds / 2, started + seconds
    second_half = 0
    while time.monotonic() < deadline:
        got = sum(len(r.value) for records in consumer.poll(timeout_ms=200).values() for r in records)
        if time.monotonic() >= half:
            second_half += got
    if ours:
        throttle = consumer.metrics()["consumer-fetch-manager-metrics"]["fetch-throttle-time-max"]
    else:
        throttle = max((v for m in consumer.metrics().values() for k, v in m.items() if k == "throttle-time-max"),
                       default=0.0)
    consumer.close()
    return second_half / (seconds / 2), throttle


def quota_rows(servers: str, key: str, prefix: str, quotas_mb: list[float],
               measure: Callable[[str], tuple]) -> Iterator[tuple[str, tuple]]:
    """(label, ``measure(client_id)``) for a client id under each quota, then for one without."""
    for quota_mb in quotas_mb + [None]:
        client_id = f"{prefix}-{quota_mb}"
        if quota_mb is not None:
            set_quota(servers, client_id, key, quota_mb * 1e6)
            time.sleep(1)  # the change notification reaches the broker
        yield (f"{quota_mb:g} MB/s" if quota_mb is not None else "none"), measure(client_id)


def throttled_clients(window_num: int, seconds: float, quotas_mb: list[float]) -> None:
    from odradek.tools.local_cluster import LocalCluster
    from odradek.clients.simple_client import SyncSimpleClient

    with tempfile.TemporaryDirectory(prefix="bench-quotas-") as data_dir:
        cluster = LocalCluster(data_dir, 1, base_port=0, zookeeper_port=0,
                               broker_overrides={"quota.window.num": str(window_num)}).start()
        try:
            servers = cluster.bootstrap_servers
            with SyncSimpleClient(servers) as client:
                client.create_topics({"bench-quotas": 1})
                client.wait_for_leaders("bench-quotas")
            topic = "bench-quotas"
            consumer_head = f"  {'consumer_byte_rate':>18}  {'achieved':>12}  {'longest throttle':>16}"
            print(f"\nconfluent-kafka producers, 10 kB records, {seconds:g} s each, rate over the last "
                  f"{seconds / 2:g} s (quota.window.num={window_num}, window 1 s)")
            print(f"  {'producer_byte_rate':>18}  {'achieved':>12}  {'throttles':>9}  {'longest':>9}")
            for label, (rate, events, longest) in quota_rows(servers, "producer_byte_rate", "producer", quotas_mb,
                                                             lambda c: produce_for(servers, topic, c, seconds)):
                print(f"  {label:>18}  {rate / 1e6:>8.2f} MB/s  {events:>9}  {longest:>6.0f} ms")
            print("\nour Producer, the same records and runs (linger_ms=5, batch_size 1 MB as librdkafka's, "
                  "at most 4 MB queued)")
            print(f"  {'producer_byte_rate':>18}  {'achieved':>12}  {'longest throttle':>16}")
            for label, (rate, longest) in quota_rows(servers, "producer_byte_rate", "our-producer", quotas_mb,
                                                     lambda c: produce_ours_for(servers, topic, c, seconds)):
                print(f"  {label:>18}  {rate / 1e6:>8.2f} MB/s  {longest:>13.0f} ms")
            for ours, heading in ((False, f"kafka-python consumers of the same topic, {seconds:g} s each"),
                                  (True, "our Consumer, the same topic and runs")):
                print(f"\n{heading}\n{consumer_head}")
                for label, (rate, longest) in quota_rows(
                        servers, "consumer_byte_rate", "our-consumer" if ours else "consumer", quotas_mb,
                        lambda c, ours=ours: consume_for(servers, topic, c, seconds, ours)):
                    print(f"  {label:>18}  {rate / 1e6:>8.2f} MB/s  {longest:>13.0f} ms")
        finally:
            cluster.stop(timeout=15.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs with a 2-sample quota window")
    parser.add_argument("--seconds", type=float, help="per client (default 30, quick 8)")
    parser.add_argument("--window-num", type=int, help="quota.window.num (default 11, quick 2)")
    parser.add_argument("--quotas-mb", default="1,5", help="quotas to try, MB/s (comma-separated)")
    opts = parser.parse_args()
    seconds = opts.seconds or (8.0 if opts.quick else 30.0)
    window_num = opts.window_num or (2 if opts.quick else 11)
    request_path(1 if opts.quick else 3, 1.0 if opts.quick else 3.0)
    throttled_clients(window_num, seconds, [float(q) for q in opts.quotas_mb.split(",")])


if __name__ == "__main__":
    main()
