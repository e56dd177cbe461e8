"""Micro-benchmark of the wire codec: prints medians, asserts nothing.

    python benchmarks/bench_protocol.py

Cases (the issue's goals in brackets):
- Produce request, 1 topic x 4 partitions x 16 KiB records: decode [< 10 us] and encode, at v9
  (flexible) and v7 (what librdkafka sends), and the same v7 bytes parsed with `construct`
  [ours >= 20x faster], interpreted and compiled;
- Fetch response of the same size (v11 and v12): decode and encode;
- Metadata response, 3 brokers and 1 topic with 100 partitions (v9): decode and encode;
- CRC-32C over a 1 MiB record batch [< 0.2 ms].
"""

from __future__ import annotations

import statistics
import struct
import sys
import time

import construct as c

from odradek.protocol import header
from odradek.protocol.messages import FetchResponse, MetadataResponse, ProduceRequest
from odradek.protocol.records import RecordBatchBuilder, RecordBatchView

PARTITIONS = 4
RECORD_BYTES = 16 * 1024


def measure(fn, *, inner: int = 200, rounds: int = 25) -> float:
    """Median time of one call in microseconds (medians of ``rounds`` batches of ``inner`` calls)."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter_ns() - start) / inner / 1000)
    return statistics.median(samples)


def records_blob(size: int) -> bytes:
    builder = RecordBatchBuilder()
    builder.append(timestamp=1_700_000_000_000, key=b"key", value=bytes(size - 80))
    return builder.build()


def produce_request() -> ProduceRequest:
    blob = records_blob(RECORD_BYTES)
    partitions = [ProduceRequest.TopicProduceData.PartitionProduceData(index=i, records=blob)
                  for i in range(PARTITIONS)]
    return ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000,
                          topic_data=[ProduceRequest.TopicProduceData(name="bench-topic", partition_data=partitions)])


def fetch_response() -> FetchResponse:
    blob = records_blob(RECORD_BYTES)
    part = FetchResponse.FetchableTopicResponse.PartitionData
    partitions = [part(partition_index=i, error_code=0, high_watermark=1000, last_stable_offset=1000,
                       log_start_offset=0, aborted_transactions=None, records=blob) for i in range(PARTITIONS)]
    return FetchResponse(throttle_time_ms=0, error_code=0, session_id=0,
                         responses=[FetchResponse.FetchableTopicResponse(topic="bench-topic", partitions=partitions)])


def metadata_response() -> MetadataResponse:
    broker = MetadataResponse.MetadataResponseBroker
    topic = MetadataResponse.MetadataResponseTopic
    partition = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
    partitions = [partition(error_code=0, partition_index=i, leader_id=i % 3, leader_epoch=5,
                            replica_nodes=[0, 1, 2], isr_nodes=[0, 1, 2], offline_replicas=[])
                  for i in range(100)]
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=[broker(node_id=i, host="127.0.0.1", port=9092 + i, rack=None) for i in range(3)],
        cluster_id="Vh7zG3-kQ2yJc8n1Xr4bWA", controller_id=0,
        topics=[topic(error_code=0, name="bench-topic", is_internal=False, partitions=partitions)])


# The same Produce v7 request, declared with construct (as one would without a generated codec).
KafkaString = c.PascalString(c.Int16sb, "utf8")
ProduceV7Construct = c.Struct(
    "api_key" / c.Int16sb, "api_version" / c.Int16sb, "correlation_id" / c.Int32sb,
    "client_id" / KafkaString,
    "transactional_id" / c.Int16sb,  # -1: null (a nullable string needs an If; null in this bench)
    "acks" / c.Int16sb, "timeout_ms" / c.Int32sb,
    "topic_data" / c.PrefixedArray(c.Int32sb, c.Struct(
        "name" / KafkaString,
        "partition_data" / c.PrefixedArray(c.Int32sb, c.Struct(
            "index" / c.Int32sb,
            "records" / c.Prefixed(c.Int32sb, c.GreedyBytes),
        )),
    )),
)


def main() -> None:
    rows: list[tuple[str, float]] = []
    request = produce_request()
    for version in (9, 7):
        frame = header.encode_request(request, version, 1, "bench", framed=False)
        view = memoryview(frame)
        rows.append((f"Produce v{version} request decode (header + body, {len(frame)} B)",
                     measure(lambda: header.decode_request(view))))
        rows.append((f"Produce v{version} request encode", measure(lambda: header.encode_request(request, version, 1, "bench"))))
    frame_v7 = header.encode_request(request, 7, 1, "bench", framed=False)
    parsed = ProduceV7Construct.parse(frame_v7)
    assert len(parsed.topic_data[0].partition_data) == PARTITIONS
    compiled = ProduceV7Construct.compile()
    ours_v7 = measure(lambda: header.decode_request(memoryview(frame_v7)))
    construct_plain = measure(lambda: ProduceV7Construct.parse(frame_v7), inner=20)
    construct_compiled = measure(lambda: compiled.parse(frame_v7), inner=50)
    rows.append(("Produce v7 request parsed with construct", construct_plain))
    rows.append(("Produce v7 request parsed with construct (compiled)", construct_compiled))

    response = fetch_response()
    for version in (12, 11):
        encoded = FetchResponse.MESSAGE.encode(response, version)
        rows.append((f"Fetch v{version} response decode ({len(encoded)} B)",
                     measure(lambda: FetchResponse.decode(encoded, version))))
        rows.append((f"Fetch v{version} response encode (parts, no join)",
                     measure(lambda: header.encode_response_parts(response, version, 1))))

    metadata = metadata_response()
    encoded = MetadataResponse.MESSAGE.encode(metadata, 9)
    rows.append((f"Metadata v9 response decode, 100 partitions ({len(encoded)} B)",
                 measure(lambda: MetadataResponse.decode(encoded, 9), inner=50)))
    rows.append(("Metadata v9 response encode, 100 partitions", measure(lambda: MetadataResponse.MESSAGE.encode(metadata, 9), inner=50)))

    batch = bytearray(records_blob(1024 * 1024 + 128))  # just over 1 MiB
    view = RecordBatchView(batch)
    assert view.verify_crc()
    rows.append((f"CRC-32C check of a {len(batch) // 1024} KiB record batch", measure(view.verify_crc, inner=20)))

    width = max(len(name) for name, _ in rows)
    print(f"python {sys.version.split()[0]}, medians of 25 rounds")
    for name, micros in rows:
        print(f"{name:<{width}}  {micros:10.2f} us")
    print(f"{'construct / ours (Produce v7 decode)':<{width}}  {construct_plain / ours_v7:10.1f} x")
    print(f"{'compiled construct / ours (Produce v7 decode)':<{width}}  {construct_compiled / ours_v7:10.1f} x")


if __name__ == "__main__":
    main()
