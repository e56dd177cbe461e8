"""The log cleaner against a real broker and real clients: a compacted topic read back by confluent-kafka,
kafka-python and our consumer holds exactly the latest value of each key; tombstones go after
delete.retention.ms; aborted transactional data goes while read_committed results stay; an idempotent
producer keeps producing across cleanings; the cleaner's keys work through odradek-configs, also
log.cleaner.threads as a cluster-wide dynamic config; its metrics carry Kafka's JMX-exporter names.

ODRADEK_CLEANER_UPDATES sets the size of the big test (default 1,000,000 updates over 10,000 keys)."""

from __future__ import annotations

import os
import time
import urllib.request
import uuid

import pytest

from odradek.clients import Admin, NewTopic, Producer
from odradek.tools.local_cluster import LocalCluster

from ..compat.client_drivers import read_confluent_kafka, read_kafka_python
from ..conftest import TEST_BROKER_OVERRIDES
from .compaction import (
    CLEANER_OVERRIDES, cleaner_checkpoint, create_compacted, latest, partition_files, produce_sentinel,
    produce_updates, read_ours, wait_cleaned,
)
from .helpers import IdempotentProducerLoad, console_tool, wait_until
from .log_inspection import stored_key_values

UPDATES = int(os.environ.get("ODRADEK_CLEANER_UPDATES", "1000000"))
KEYS = 10_000


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("cleaner"), 1, zookeeper=zookeeper, base_port=0,
                           chroot=f"/odradek-{uuid.uuid4().hex}", metrics_base_port=0,
                           broker_overrides={**TEST_BROKER_OVERRIDES, **CLEANER_OVERRIDES,
                                             # __transaction_state in small segments, so that it gets cleaned
                                             "transaction.state.log.num.partitions": "1",
                                             "transaction.state.log.segment.bytes": "1024"})
    cluster.start()
    yield cluster
    cluster.stop(timeout=15.0)


def create(cluster, topic: str, **configs: str) -> None:
    create_compacted(cluster.bootstrap_servers, topic, **configs)


@pytest.mark.slow
def test_a_compacted_topic_ends_with_exactly_the_latest_value_of_each_key(cluster):
    bootstrap = cluster.bootstrap_servers
    create(cluster, "updates")
    started = time.monotonic()
    expected = produce_updates(bootstrap, "updates", UPDATES, KEYS)
    produced = time.monotonic()
    end = produce_sentinel(bootstrap, "updates")
    assert end == UPDATES
    broker = cluster.brokers[0]
    wait_cleaned(cluster, "updates", 0, end)
    cleaned = time.monotonic()
    print(f"\n{UPDATES} updates of {KEYS} keys produced in {produced - started:.1f} s, cleaned "
          f"{cleaned - produced:.1f} s later; {partition_files(broker.log_dirs, 'updates', 0)[:6]}")
    for name, records in (
            ("ours", read_ours(bootstrap, "updates", end + 1)),
            ("kafka-python", [(r.offset, r.key, r.value) for r in read_kafka_python(bootstrap, "updates", {0: end + 1})[0]]),
            ("confluent-kafka", [(r.offset, r.key, r.value) for r in read_confluent_kafka(bootstrap, "updates", {0: end + 1})[0]])):
        data = [r for r in records if r[1] != b"~sentinel"]
        assert len(data) == KEYS, (name, len(data))  # one record per key: every older value is gone
        assert latest(data) == expected, name
        assert [o for o, _, _ in records] == sorted(o for o, _, _ in records)


def send_all(bootstrap: str, topic: str, records) -> None:
    """(key, value) records with our producer in small batches (segments here are a few KB); every send acked."""
    with Producer(bootstrap_servers=bootstrap, linger_ms=0, batch_size=2048) as producer:
        futures = [producer.send(topic, value, key=key) for key, value in records]
        for future in futures:
            future.get(timeout=60)


def test_tombstones_go_after_delete_retention_ms(cluster):
    bootstrap = cluster.bootstrap_servers
    create(cluster, "tombstones", **{"delete.retention.ms": "2000", "segment.bytes": "8192"})
    send_all(bootstrap, "tombstones", [(b"key-%d" % i, b"v" * 300) for i in range(40)] +
             [(b"key-%d" % i, None) for i in range(0, 40, 2)])  # delete the even keys
    end = produce_sentinel(bootstrap, "tombstones")
    wait_cleaned(cluster, "tombstones", 0, end)
    # Cleaned once: the tombstones are still there (for consumers that saw the deleted values)
    first = read_ours(bootstrap, "tombstones", end)
    assert sorted(k for _, k, v in first if v is None) == sorted(b"key-%d" % i for i in range(0, 40, 2))
    assert len(first) == 40
    # Newer segments come, the tombstones' segment grows older than delete.retention.ms behind them, and a
    # later cleaning drops them (Kafka 2.8's delete horizon: the newest clean segment's time - retention).
    deadline = time.monotonic() + 120
    n = 0
    while True:
        send_all(bootstrap, "tombstones", [(b"later-%d" % (i % 30), b"w" * 300) for i in range(n, n + 15)])
        n += 15
        end = produce_sentinel(bootstrap, "tombstones")
        wait_cleaned(cluster, "tombstones", 0, end)
        now = read_ours(bootstrap, "tombstones", end)
        if not [k for _, k, v in now if v is None]:
            break
        assert time.monotonic() < deadline, "the tombstones never went"
        time.sleep(1.0)
    assert {k: v for k, v in latest(now).items() if k.startswith(b"key-")} == \
        {b"key-%d" % i: b"v" * 300 for i in range(1, 40, 2)}
    assert not {k for _, k, _ in now} & {b"key-%d" % i for i in range(0, 40, 2)}


def test_aborted_data_goes_and_read_committed_results_stay(cluster):
    bootstrap = cluster.bootstrap_servers
    create(cluster, "txn-compacted", **{"segment.bytes": "2048"})
    with Producer(bootstrap_servers=bootstrap, transactional_id="cleaner-txn") as producer:
        producer.init_transactions()
        for round_ in range(12):
            producer.begin_transaction()
            for i in range(5):
                producer.send("txn-compacted", b"round-%d" % round_, key=b"key-%d" % i)
            if round_ % 3 == 2:
                producer.abort_transaction()
            else:
                producer.commit_transaction()
    end = produce_sentinel(bootstrap, "txn-compacted")
    committed_before = latest(read_ours(bootstrap, "txn-compacted", end, isolation_level="read_committed"))
    assert committed_before[b"key-0"] == b"round-10"
    wait_cleaned(cluster, "txn-compacted", 0, end)
    uncommitted = read_ours(bootstrap, "txn-compacted", end)
    assert b"round-11" not in {v for _, _, v in uncommitted}  # the last round was aborted: gone
    assert latest(uncommitted) == committed_before
    assert latest(read_ours(bootstrap, "txn-compacted", end, isolation_level="read_committed")) == committed_before
    librdkafka = [(r.offset, r.key, r.value) for r in read_confluent_kafka(bootstrap, "txn-compacted", {0: end})[0]
                  if r.offset < end]
    assert latest(librdkafka) == committed_before
    # __transaction_state is cleaned too: of the dozens of states the coordinator wrote, few stay
    log_dir = cluster.brokers[0].log_dirs
    written = 3 * 12  # at least Ongoing, Prepare* and Complete* per transaction
    wait_until(lambda: (cleaner_checkpoint(log_dir, "__transaction_state", 0) or 0) > written // 2, 60,
               "__transaction_state to be cleaned")
    states = [r for r in stored_key_values(log_dir, "__transaction_state", 0)]
    assert len(states) < written // 2, len(states)


def test_an_idempotent_producer_keeps_producing_across_cleanings(cluster):
    bootstrap = cluster.bootstrap_servers
    create(cluster, "idempotent-compacted", **{"segment.bytes": "16384"})
    # batches well below segment.bytes (a larger one is RECORD_LIST_TOO_LARGE, as in Kafka)
    with IdempotentProducerLoad(bootstrap, "idempotent-compacted", 1, keys=20, config={"batch.size": 4096}) as load:
        wait_until(lambda: (cleaner_checkpoint(cluster.brokers[0].log_dirs, "idempotent-compacted", 0) or 0) > 20000,
                   120, "several cleanings while producing")
    assert load.failed == []  # no OUT_OF_ORDER_SEQUENCE (nor anything else) across the cleanings
    end = produce_sentinel(bootstrap, "idempotent-compacted")
    values = {v for _, _, v in read_ours(bootstrap, "idempotent-compacted", end)}
    newest = sorted(load.acked)[-20:]  # the last value of each of the 20 keys
    assert set(newest) <= values


def test_the_cleaner_keys_work_through_odradek_configs_and_its_metrics_are_exported(cluster):
    bootstrap = cluster.bootstrap_servers
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic("becomes-compacted", 1, 1,
                                      topic_configs={"segment.bytes": "8192", "segment.ms": "600000"})])
    send_all(bootstrap, "becomes-compacted", [(b"key-%d" % (i % 3), b"x" * 100) for i in range(300)])
    end = produce_sentinel(bootstrap, "becomes-compacted")
    time.sleep(0.5)
    assert cleaner_checkpoint(cluster.brokers[0].log_dirs, "becomes-compacted", 0) is None  # delete policy
    console_tool("configs", "--bootstrap-server", bootstrap, "--entity-type", "topics", "--entity-name",
                 "becomes-compacted", "--alter", "--add-config", "cleanup.policy=compact,min.cleanable.dirty.ratio=0.1")
    wait_cleaned(cluster, "becomes-compacted", 0, end)
    assert len(read_ours(bootstrap, "becomes-compacted", end)) == 3
    # log.cleaner.threads, cluster-wide: Kafka's limits (at most double), then the change restarts the threads
    refused = console_tool("configs", "--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-default",
                           "--alter", "--add-config", "log.cleaner.threads=3", check=False)
    assert refused.returncode == 1 and "cannot be increased to more than double the current value 1" in refused.stderr
    console_tool("configs", "--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-default",
                 "--alter", "--add-config", "log.cleaner.threads=2")
    text = ""
    url = cluster.metrics_urls[0]

    def threads_restarted() -> bool:
        nonlocal text
        text = urllib.request.urlopen(url, timeout=10).read().decode()
        return "kafka_log_logcleaner_deadthreadcount 0.0" in text and _log_mentions(cluster, "Reconfiguring")
    wait_until(threads_restarted, 60, "the cleaner threads restarted")
    for name in ("kafka_log_logcleaner_max_buffer_utilization_percent", "kafka_log_logcleaner_cleaner_recopy_percent",
                 "kafka_log_logcleaner_max_clean_time_secs", "kafka_log_logcleaner_max_compaction_delay_secs",
                 "kafka_log_logcleanermanager_max_dirty_percent", "kafka_log_logcleanermanager_time_since_last_run_ms",
                 "kafka_log_logcleanermanager_uncleanable_partitions_count{logDirectory=",
                 "kafka_log_logcleanermanager_uncleanable_bytes{logDirectory="):
        assert name in text, name
    console_tool("configs", "--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-default",
                 "--alter", "--delete-config", "log.cleaner.threads")


def _log_mentions(cluster, text: str) -> bool:
    path = os.path.join(os.path.dirname(str(cluster.brokers[0].log_dirs)), "log-cleaner.log")
    return os.path.exists(path) and text in open(path, encoding="utf-8").read()
