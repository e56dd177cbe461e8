"""Third-party clients against real Odradek brokers (issue 3, "Verified by"): one broker, then three.

kafka-python, confluent-kafka, aiokafka and kcat each produce ``RECORDS_PER_PRODUCER`` records with keys and
headers to a topic of their own whose partition i carries codec ``CODECS[i]`` (with three brokers the
partitions, replication factor 1, are spread over all of them). Then:

- the log on disk must hold exactly the planned records, in order, in batches of the producer's codec with valid
  CRCs (librdkafka < 2.11.1 silently drops compression unless the broker's Produce range starts at 0);
- the idempotent producers (kafka-python by default, confluent-kafka with enable.idempotence) must have written
  producer ids and gap-free sequences, and no duplicates;
- every client reads every producer's topic from earliest with assign() and must see exactly the records on disk:
  offsets, timestamps, keys, values (null ones too), headers, order per partition;
- ``kcat -L`` must list the brokers, the controller, the topics and their leaders as Metadata has them.

There is no group coordinator yet: readers use assign() and commit nothing.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from odradek.clients.simple_client import SimpleClient
from odradek.protocol.records import Compression, compress, iter_batches

from .client_drivers import CODECS, PRODUCE, PRODUCERS, READ, READERS, Planned, Read, kcat_metadata, plan

pytestmark = pytest.mark.timeout(900)

RECORDS_PER_PRODUCER = 10_000
PER_PARTITION = RECORDS_PER_PRODUCER // len(CODECS)
IDEMPOTENT_PRODUCERS = ("kafka-python", "confluent-kafka")


def topic_of(producer: str) -> str:
    return f"compat-{producer}"


# ---------------------------------------------------------------------------------------------------------------
# One cluster per parameter; its topics are created once and each producer's records written once (lazily, by
# the first test that needs them; a failure is remembered and reported again to the tests that depend on it).

@dataclass
class Produced:
    planned: dict[int, list[Planned]]       # partition -> records as sent
    batches: dict[int, list] = field(default_factory=dict)   # partition -> RecordBatchViews on disk
    on_disk: dict[int, list[Read]] = field(default_factory=dict)


class Workload:
    def __init__(self, cluster):
        self.cluster = cluster
        self.bootstrap = cluster.bootstrap_servers
        self._produced: dict[str, Produced | Exception] = {}
        asyncio.run(self._create_topics())

    async def _create_topics(self) -> None:
        async with SimpleClient(self.bootstrap) as client:
            results = await client.create_topics({topic_of(p): (len(CODECS), 1) for p in PRODUCERS})
            assert set(results.values()) == {0}, results
            for producer in PRODUCERS:
                await client.wait_for_leaders(topic_of(producer))
            self.metadata = await client.metadata()

    def produced(self, producer: str) -> Produced:
        if producer not in self._produced:
            try:
                self._produced[producer] = self._produce(producer)
            except Exception as exc:  # not pytest's skip (kcat missing), which every kcat test repeats
                self._produced[producer] = exc
                raise
        result = self._produced[producer]
        if isinstance(result, Exception):
            pytest.fail(f"{producer} could not produce its records: {result!r}")
        return result

    def _produce(self, producer: str) -> Produced:
        plans = {p: (codec, plan(producer, codec, PER_PARTITION)) for p, codec in enumerate(CODECS)}
        PRODUCE[producer](self.bootstrap, topic_of(producer), plans)
        produced = Produced({p: records for p, (_, records) in plans.items()})
        for partition in plans:
            produced.batches[partition] = self.batches_on_disk(topic_of(producer), partition)
            produced.on_disk[partition] = [
                Read(r.offset, r.timestamp, r.key, r.value, tuple(r.headers))
                for batch in produced.batches[partition] for r in batch.records()]
        return produced

    def batches_on_disk(self, topic: str, partition: int) -> list:
        """The batches of the partition's segments, from the log directory of the broker hosting it."""
        dirs = [b.log_dirs / f"{topic}-{partition}" for b in self.cluster.brokers
                if (b.log_dirs / f"{topic}-{partition}").is_dir()]
        assert len(dirs) == 1, f"{topic}-{partition} should live on exactly one broker (RF 1): {dirs}"
        batches = []
        for segment in sorted(dirs[0].glob("*.log")):
            batches += iter_batches(bytearray(segment.read_bytes()), allow_partial=False)
        return batches

    def end_offsets(self, producer: str) -> dict[int, int]:
        produced = self.produced(producer)
        return {p: len(records) for p, records in produced.on_disk.items()}


@pytest.fixture(scope="module", params=["one-broker", "three-brokers"])
def workload(request) -> Workload:
    name = "single_broker_cluster" if request.param == "one-broker" else "three_broker_cluster"
    return Workload(request.getfixturevalue(name))


# ---------------------------------------------------------------------------------------------------------------

def test_partitions_are_spread_over_the_brokers(workload):
    brokers = set(workload.metadata.brokers)
    assert brokers == {b.broker_id for b in workload.cluster.brokers}
    for producer in PRODUCERS:
        leaders = {p.leader for p in workload.metadata.topics[topic_of(producer)].partitions.values()}
        assert leaders == brokers, f"{topic_of(producer)}: five partitions should have a leader on every broker"


_KCAT_BROKER = re.compile(r"^\s+broker (\d+) at (\S+):(\d+)( \(controller\))?$")
_KCAT_TOPIC = re.compile(r'^\s+topic "([^"]+)" with (\d+) partitions:$')
_KCAT_PARTITION = re.compile(r"^\s+partition (\d+), leader (-?\d+), replicas: ([\d,]*), isrs: ([\d,]*)")


def test_kcat_lists_brokers_topics_and_leaders(workload):
    listing = kcat_metadata(workload.bootstrap)
    brokers, controller, topics, topic = {}, None, {}, None
    for line in listing.splitlines():
        if m := _KCAT_BROKER.match(line):
            brokers[int(m[1])] = (m[2], int(m[3]))
            controller = int(m[1]) if m[4] else controller
        elif m := _KCAT_TOPIC.match(line):
            topic = topics.setdefault(m[1], {"count": int(m[2]), "partitions": {}})
        elif m := _KCAT_PARTITION.match(line):
            topic["partitions"][int(m[1])] = (int(m[2]), [int(x) for x in m[3].split(",") if x])

    md = workload.metadata
    assert brokers == {i: (b.host, b.port) for i, b in md.brokers.items()}, listing
    assert brokers == {b.broker_id: (workload.cluster.host, b.port) for b in workload.cluster.brokers}, listing
    assert controller == md.controller_id and controller in brokers, listing
    for producer in PRODUCERS:
        expected = {p: (info.leader, info.replicas) for p, info in md.topics[topic_of(producer)].partitions.items()}
        assert topics[topic_of(producer)] == {"count": len(CODECS), "partitions": expected}, listing


@pytest.mark.parametrize("producer", PRODUCERS)
def test_producer_writes_exactly_its_records_with_its_codecs(workload, producer):
    produced = workload.produced(producer)
    for partition, codec in enumerate(CODECS):
        batches = produced.batches[partition]
        assert batches, f"{producer} wrote nothing to partition {partition}"
        for b in batches:
            if b.compression == Compression.NONE and codec != "none":
                # kafka-python and librdkafka (kcat, confluent-kafka) send a batch uncompressed when compressing
                # would not shrink it (a record or two)
                raw = bytes(b.records_data)
                assert len(compress(Compression[codec.upper()], raw)) >= len(raw) * 0.9, (
                    f"{producer}, partition {partition}: an uncompressed batch that {codec} would have shrunk")
                continue
            assert Compression(b.compression).name.lower() == codec, (
                f"{producer}, partition {partition}: batches should all be {codec}")
        assert all(b.verify_crc() for b in batches)
        on_disk = produced.on_disk[partition]
        assert [r.offset for r in on_disk] == list(range(len(on_disk)))
        assert [Planned(r.key, r.value, r.headers) for r in on_disk] == produced.planned[partition], (
            f"{producer}, partition {partition} ({codec}): the log differs from what was sent")


@pytest.mark.parametrize("producer", IDEMPOTENT_PRODUCERS)
def test_idempotent_producer_writes_sequences_without_duplicates(workload, producer):
    produced = workload.produced(producer)
    for partition, batches in produced.batches.items():
        producer_ids = {(b.producer_id, b.producer_epoch) for b in batches}
        assert len(producer_ids) == 1 and min(producer_ids)[0] >= 0 and min(producer_ids)[1] >= 0, (
            f"{producer}, partition {partition}: one idempotent producer id per partition, got {producer_ids}")
        sequences = [(b.base_sequence, b.base_sequence + b.last_offset_delta) for b in batches]
        expected_next = 0
        for first, last in sequences:
            assert first == expected_next, f"{producer}, partition {partition}: sequence gap or repeat {sequences}"
            expected_next = last + 1
        assert expected_next == PER_PARTITION  # and the records match the plan: no duplicates (test above)
        assert len(produced.on_disk[partition]) == PER_PARTITION


@pytest.mark.parametrize("producer", PRODUCERS, ids=lambda p: f"from-{p}")
@pytest.mark.parametrize("reader", READERS, ids=lambda r: f"{r}-reads")
def test_reader_gets_every_record_of_producer(workload, reader, producer):
    produced = workload.produced(producer)
    got = READ[reader](workload.bootstrap, topic_of(producer), workload.end_offsets(producer))
    for partition, codec in enumerate(CODECS):
        expected = produced.on_disk[partition]
        records = got.get(partition, [])
        assert len(records) == len(expected), (
            f"{reader} read {len(records)} of {len(expected)} {codec} records from {producer}'s partition {partition}")
        for r, e in zip(records, expected):
            assert r == e, f"{reader} reading {producer}'s partition {partition} ({codec}): {r} != {e}"
