"""The Fetch handler in one process: consumer fetches answered per second, with and without a fetch quota.

    python benchmarks/bench_fetch_handler.py [--seconds 2] [--runs 5] [--partitions 1,100] [--version 11]
    python benchmarks/bench_fetch_handler.py --fetches 20000 --partitions 1 --cases quota   # a fixed amount of work

One leader ReplicaManager on a temporary LogManager holds topic ``t`` (each partition filled with
``--batches`` batches of 10 records of 100 bytes); the Fetch API is registered on a KafkaApis as the
broker does, and a sessionless consumer Fetch of every partition from offset 0 (max_wait_ms 0) is
dispatched again and again, the response encoded as it would be sent. "quota" gives the consumer's user a
``consumer_byte_rate`` so large that nothing is throttled, so every fetch records its response size (the
fetch quota path). Nothing goes over a socket: this is the handler's own cost. Prints the median of the
runs of each case; with ``--fetches N`` each case instead answers N fetches once and prints its CPU seconds,
so that the whole process does a fixed amount of work (to be timed from outside, two checkouts side by side).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from types import SimpleNamespace

from odradek.broker.apis import fetch
from odradek.broker.apis.authorization import AuthHelper
from odradek.broker.config import KafkaConfig
from odradek.broker.kafka_apis import KafkaApis
from odradek.broker.log import LogManager
from odradek.broker.metadata_cache import MetadataCache
from odradek.broker.network.request_channel import Request
from odradek.broker.quota.client_quotas import ClientQuotas
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.security.principal import KafkaPrincipal
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.header import RequestHeader
from odradek.protocol.messages import FetchRequest
from odradek.protocol.records import RecordBatchBuilder

BROKER = 1
TOPIC = "t"


class Connection:
    id = "bench"
    listener = "PLAINTEXT"
    principal = KafkaPrincipal("User", "bench")

    def throttle(self, seconds: float, on_done) -> bool:  # never reached: the quota is never violated
        raise AssertionError("a fetch was throttled")


def leader_state(partition: int) -> SimpleNamespace:
    return SimpleNamespace(partition_index=partition, controller_epoch=1, leader=BROKER, leader_epoch=0,
                           isr=[BROKER], partition_epoch=0, replicas=[BROKER], is_new=True)


def batch(base: int) -> bytearray:
    builder = RecordBatchBuilder()
    for i in range(10):
        builder.append(value=b"%08d" % (base + i) + b"v" * 92, key=None, timestamp=1_700_000_000_000 + i)
    return bytearray(builder.build())


def fetch_request(partitions: int, version: int) -> FetchRequest:
    topic = FetchRequest.FetchTopic(topic=TOPIC, partitions=[
        FetchRequest.FetchTopic.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1 << 20)
        for p in range(partitions)])
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=50 << 20, isolation_level=0,
                        session_id=0, session_epoch=-1, topics=[topic], forgotten_topics_data=[])


def measure(apis: KafkaApis, body: FetchRequest, version: int, seconds: float) -> float:
    done = 0
    header = RequestHeader(ApiKey.FETCH, version, 1, "bench-consumer")
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(20):
            response = apis.dispatch(Request(header, body, Connection()))
            assert response.parts, response
        done += 20
        now = time.perf_counter()
        if now >= deadline:
            return done / (now - start)


def fixed_work(apis: KafkaApis, body: FetchRequest, version: int, fetches: int) -> float:
    header = RequestHeader(ApiKey.FETCH, version, 1, "bench-consumer")
    start = time.process_time()
    for _ in range(fetches):
        response = apis.dispatch(Request(header, body, Connection()))
        assert response.parts, response
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--partitions", default="1,100")
    parser.add_argument("--batches", type=int, default=2, help="batches of 10 x 100-byte records per partition")
    parser.add_argument("--version", type=int, default=11)
    parser.add_argument("--cases", default="no-quota,quota")
    parser.add_argument("--fetches", type=int, default=0, help="answer this many fetches per case, once")
    args = parser.parse_args()
    counts = [int(n) for n in args.partitions.split(",")]
    config = KafkaConfig({"zookeeper.connect": "localhost:2181"})
    with tempfile.TemporaryDirectory() as tmp:
        lm = LogManager([tmp], {}, broker_id=BROKER, cluster_id="bench")
        rm = ReplicaManager(BROKER, lm, MetadataCache(BROKER))
        rm.become_leader_or_follower(1, [(TOPIC, leader_state(p)) for p in range(max(counts))], {})
        for p in range(max(counts)):
            for b in range(args.batches):
                rm.append_records(1, 1000, {(TOPIC, p): batch(10 * b)})
        cases = {}
        for quota in [name == "quota" for name in args.cases.split(",")]:
            quotas = ClientQuotas.from_config(config)
            if quota:
                quotas.apply_entity_config("users", "<default>", {"consumer_byte_rate": str(2 ** 62)})
            apis = KafkaApis()
            apis.throttle = quotas.throttle_response
            fetch.register(apis, SimpleNamespace(config=config, replica_manager=rm, auth=AuthHelper(),
                                                 client_quotas=quotas))
            cases["quota" if quota else "no-quota"] = apis
        if args.fetches:
            for partitions in counts:
                body = fetch_request(partitions, args.version)
                for name, apis in cases.items():
                    cpu = fixed_work(apis, body, args.version, args.fetches)
                    print(f"{partitions} partitions, {name}: {args.fetches} fetches in {cpu:.3f} CPU s")
        else:
            print(f"Fetch v{args.version} handler, consumer fetches/s, median of {args.runs} x {args.seconds:g} s")
        for partitions in counts if not args.fetches else ():
            body = fetch_request(partitions, args.version)
            rates: dict[str, list[float]] = {name: [] for name in cases}
            for apis in cases.values():  # warm-up: first-use compilation of the messages' codecs
                measure(apis, body, args.version, 0.2)
            for _ in range(args.runs):  # cases alternate, so a drift of the machine's speed hits both
                for name, apis in cases.items():
                    rates[name].append(measure(apis, body, args.version, args.seconds))
            for name, values in rates.items():
                print(f"  {partitions:4d} partitions  {name:9s} {statistics.median(values):10,.0f}/s")
        rm.shutdown()
        lm.shutdown()


if __name__ == "__main__":
    main()
