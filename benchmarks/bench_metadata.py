"""The Metadata handler in one process: how long an all-topics answer holds the event loop at many partitions.

    python benchmarks/bench_metadata.py [--topics 3336] [--partitions 3] [--version 9] [--runs 15]

A MetadataCache of 3 brokers is filled by one UpdateMetadata request (through the codec, as a broker gets it)
with ``--topics`` topics of ``--partitions`` partitions (RF 3; 3,336 x 3 is the 10,000 partitions of the spread
rows). The Metadata API is registered on a KafkaApis as the broker does, with the request metrics' error count
that runs on every answer, and an all-topics Metadata request is dispatched and its response encoded, as sent.
Three cases, median milliseconds per answer of ``--runs``:

- first answer: a new handler each time (nothing kept from an earlier answer);
- again: the same request again, nothing changed in between;
- after an update: an UpdateMetadata naming one topic (a new leader epoch) before each answer.

Nothing goes over a socket: this is the loop's own cost. Run it with two checkouts' interpreters to compare.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from types import SimpleNamespace

from odradek.broker.apis import metadata
from odradek.broker.apis.authorization import AuthHelper
from odradek.broker.config import KafkaConfig
from odradek.broker.kafka_apis import KafkaApis
from odradek.broker.metadata_cache import MetadataCache
from odradek.broker.metrics.request_metrics import RequestMetrics
from odradek.broker.network.request_channel import Request
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.header import RequestHeader, decode_request, encode_request
from odradek.protocol.messages import MetadataRequest, UpdateMetadataRequest

BROKERS = (0, 1, 2)
UPDATE_VERSION = 7
_Broker = UpdateMetadataRequest.UpdateMetadataBroker
_Endpoint = _Broker.UpdateMetadataEndpoint
_Topic = UpdateMetadataRequest.UpdateMetadataTopicState
_State = _Topic.UpdateMetadataPartitionState


class Connection:
    id = "bench"
    listener = "PLAINTEXT"


def update_metadata(topics: list[tuple[str, uuid.UUID]], partitions: int, leader_epoch: int) -> UpdateMetadataRequest:
    brokers = [_Broker(id=b, rack=None, endpoints=[_Endpoint(port=9092 + b, host="localhost", listener="PLAINTEXT",
                                                             security_protocol=0)]) for b in BROKERS]
    states = [_Topic(topic_name=name, topic_id=topic_id, partition_states=[
        _State(topic_name=name, partition_index=p, controller_epoch=1, leader=(i + p) % len(BROKERS),
               leader_epoch=leader_epoch, isr=list(BROKERS), zk_version=leader_epoch, replicas=list(BROKERS),
               offline_replicas=[]) for p in range(partitions)]) for i, (name, topic_id) in enumerate(topics)]
    body = UpdateMetadataRequest(controller_id=0, controller_epoch=1, broker_epoch=1, live_brokers=brokers,
                                 topic_states=states)
    _, decoded = decode_request(encode_request(body, UPDATE_VERSION, 1, "controller")[4:])
    return decoded


def switchboard(cache: MetadataCache) -> KafkaApis:
    apis = KafkaApis()
    apis.on_response = RequestMetrics().record_errors  # the error count every answer gets in the broker
    metadata.register(apis, SimpleNamespace(metadata_cache=cache, config=KafkaConfig({"zookeeper.connect": "zk:2181"}),
                                            auth=AuthHelper(), admin=None))
    return apis


def answer_ms(apis: KafkaApis, version: int) -> tuple[float, int]:
    header = RequestHeader(ApiKey.METADATA, version, 1, "bench")
    body = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    start = time.perf_counter()
    response = apis.dispatch(Request(header, body, Connection()))
    elapsed = (time.perf_counter() - start) * 1000
    return elapsed, sum(len(part) for part in response.parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=3336)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--version", type=int, default=9)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    topics = [(f"spread-{i:05d}", uuid.uuid4()) for i in range(args.topics)]
    cache = MetadataCache(0)
    cache.update(update_metadata(topics, args.partitions, 0), UPDATE_VERSION)
    cache.cluster_id = "bench"
    size = 0
    cases: dict[str, list[float]] = {"first answer": [], "again": [], "after an update": []}
    kept = switchboard(cache)
    answer_ms(kept, args.version)
    for run in range(args.runs):
        elapsed, size = answer_ms(switchboard(cache), args.version)
        cases["first answer"].append(elapsed)
        cases["again"].append(answer_ms(kept, args.version)[0])
        cache.update(update_metadata(topics[run:run + 1], args.partitions, run + 1), UPDATE_VERSION)
        cases["after an update"].append(answer_ms(kept, args.version)[0])
    print(f"Metadata v{args.version}, all topics: {args.topics:,} topics x {args.partitions} partitions, "
          f"{size:,} bytes; median ms of {args.runs} (handler, error count, encoding)")
    for name, times in cases.items():
        print(f"  {name:<16} {statistics.median(times):8.2f} ms   (min {min(times):.2f}, max {max(times):.2f})")


if __name__ == "__main__":
    main()
