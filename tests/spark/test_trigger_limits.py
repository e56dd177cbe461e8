"""minOffsetsPerTrigger / maxTriggerDelay / maxOffsetsPerTrigger on a running query (Spark 3.3+ Kafka source
semantics): a trigger with fewer new offsets than the minimum runs no batch, unless maxTriggerDelay passed
since the last batch; the first trigger of a query is never held (Spark starts its delay clock at 0); a
batch never takes more than maxOffsetsPerTrigger. Every record reaches the sink exactly once.

That a trigger *saw* records and still ran no batch is observed, not slept on: with no-data progress events
every 100 ms, each event's ``sources[0].latestOffset`` is what that trigger's latestOffset found."""

from __future__ import annotations

import pytest

from tests.integration.helpers import wait_until
from .helpers import create_topic, produce, source_latest_total, start_memory_stream

SCHEMA = "partition int, offset bigint, value string"


# No-data progress events every 100 ms, and enough of them kept that a test's first batch stays in view.
PROGRESS_CONFS = {"spark.sql.streaming.noDataProgressEventInterval": "100ms",
                  "spark.sql.streaming.numRecentProgressUpdates": "5000"}


@pytest.fixture(scope="module")
def servers(single_broker_cluster, spark):
    previous = {key: spark.conf.get(key, None) for key in PROGRESS_CONFS}
    for key, value in PROGRESS_CONFS.items():
        spark.conf.set(key, value)
    yield single_broker_cluster.bootstrap_servers
    for key, value in previous.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def data_batches(query) -> list[tuple[int, int]]:
    """(batchId, numInputRows) of every batch that read something."""
    return sorted({(p["batchId"], p["numInputRows"]) for p in query.recentProgress if p["numInputRows"]})


def wait_until_seen_and_held(query, latest_total: int) -> None:
    """Until a trigger whose latestOffset found ``latest_total`` offsets in all ran no batch."""
    def held():
        return any(p["numInputRows"] == 0 and source_latest_total(p) == latest_total for p in query.recentProgress)
    wait_until(held, 120, what=f"a trigger that saw {latest_total} offsets and ran no batch")


def assert_exactly_once(spark, name: str, expected: dict[int, int]) -> None:
    """The memory table holds offsets 0..n-1 of each partition p (n = expected[p]), each once."""
    rows = [(r.partition, r.offset) for r in spark.table(name).collect()]
    assert sorted(rows) == sorted((p, o) for p, n in expected.items() for o in range(n))


def test_min_offsets_hold_batches_and_max_offsets_cap_them(spark, servers, tmp_path):
    topic, name, out = "trigger-min-max", "trigger_min_max", tmp_path / "out"
    create_topic(servers, topic, 2)
    produce(servers, topic, [(i % 2, None, f"a{i}".encode()) for i in range(4)])

    def start():
        return start_memory_stream(spark, servers, topic, name, tmp_path / "cp", parquet=out,
                                   minOffsetsPerTrigger="10", maxOffsetsPerTrigger="15", maxTriggerDelay="1h")

    def written():
        return spark.read.schema(SCHEMA).parquet(str(out)).count() if out.exists() else 0

    query = start()
    try:
        # The first trigger is not held (Spark's delay clock starts at 0): the 4 waiting records are read.
        wait_until(lambda: written() == 4, 120, what="the first batch")
        assert [rows for _, rows in data_batches(query)] == [4]

        # 5 new records < minOffsetsPerTrigger: triggers see them and run no batch.
        produce(servers, topic, [(i % 2, None, f"b{i}".encode()) for i in range(5)])
        wait_until_seen_and_held(query, 9)
        assert written() == 4
        assert [rows for _, rows in data_batches(query)] == [4]

        # 26 more: 31 wait; batches of 10 to 15 records while at least 10 wait, then fewer than 10 are held
        # (all 26 usually show at once: batches of 15 and 15, 1 held).
        produce(servers, topic, [(i % 2, None, f"c{i}".encode()) for i in range(26)])
        wait_until_seen_and_held(query, 35)
        sizes = [rows for _, rows in data_batches(query)]
        read = written()
        assert sizes[0] == 4 and all(10 <= size <= 15 for size in sizes[1:]), sizes
        assert sum(sizes) == read and 35 - read < 10, sizes
        assert query.exception() is None
    finally:
        query.stop()
    # The held records are read by the restarted query (its first trigger is not held), once.
    query = start()
    try:
        wait_until(lambda: written() == 35, 120, what="the held records")
    finally:
        query.stop()
    rows = spark.read.schema(SCHEMA).parquet(str(out)).collect()
    assert sorted((r.partition, r.offset) for r in rows) == sorted(
        (p, o) for p in range(2) for o in (range(18) if p == 0 else range(17)))
    assert len({r.value for r in rows}) == 35


def test_max_trigger_delay_lets_a_small_batch_through(spark, servers, tmp_path):
    topic, name = "trigger-delay", "trigger_delay"
    create_topic(servers, topic, 1)
    produce(servers, topic, [(0, None, f"a{i}".encode()) for i in range(3)])
    query = start_memory_stream(spark, servers, topic, name, tmp_path / "cp", minOffsetsPerTrigger="1000",
                                maxTriggerDelay="2s")
    try:
        wait_until(lambda: spark.table(name).count() == 3, 120, what="the first batch")
        produce(servers, topic, [(0, None, f"b{i}".encode()) for i in range(2)])
        # Far fewer than 1000 records, yet a batch runs once 2 s passed since the last one.
        wait_until(lambda: spark.table(name).count() == 5, 120, what="the delayed batch")
        assert [rows for _, rows in data_batches(query)] == [3, 2]
        assert_exactly_once(spark, name, {0: 5})
        assert query.exception() is None
    finally:
        query.stop()


def test_available_now_ignores_min_offsets(spark, servers, tmp_path):
    """Trigger.AvailableNow ends at the offsets latest at its start; holding a small remainder back for
    minOffsetsPerTrigger would end the run without it, so the minimum does not apply there."""
    topic, name = "trigger-available-now", "trigger_available_now"
    create_topic(servers, topic, 2)
    produce(servers, topic, [(i % 2, None, f"a{i}".encode()) for i in range(23)])
    query = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", servers)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("minOffsetsPerTrigger", "8").option("maxOffsetsPerTrigger", "10").load()
             .selectExpr("partition", "offset", "CAST(value AS STRING) AS value").writeStream.format("memory")
             .queryName(name).option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None
    assert [rows for _, rows in data_batches(query)] == [10, 10, 3]
    assert_exactly_once(spark, name, {0: 12, 1: 11})
