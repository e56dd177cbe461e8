"""Our producer gives up on records after ``delivery_timeout_ms`` whatever they wait for, and flush() returns
(issue 22: 10,000 records to a topic short of in-sync replicas kept flush() blocked for ever).

Two brokers (transaction and offsets topics with one replica, so stopping a broker leaves the coordinator
of the other working). Each case sends 10,000 records from the blocking Producer, idempotent (the
default), with acks=1, and transactional:

- to a topic whose ISR (one replica) is below its min.insync.replicas (2): the leader refuses every acks=all
  write with NOT_ENOUGH_REPLICAS, a retriable error, so the records are retried until delivery_timeout_ms,
  then fail, each naming NOT_ENOUGH_REPLICAS. min.insync.replicas binds only acks=all (Kafka's rule), so
  the acks=1 records are all written. Afterwards the topic is repaired and the same producer goes on:
  the idempotent one's later records are stored once each, in order; the transactional one aborts and
  commits a new transaction;
- to a topic whose leader is SIGSTOPped: the requests get no answer (request_timeout_ms), the records fail
  at delivery_timeout_ms with Java's "Expiring N record(s)" message. After SIGCONT the same producer goes
  on: the idempotent one may find some expired records written (the leader read them from its socket when
  it resumed), but never after a later record and never twice.

Plus the tools: odradek-console-producer and odradek-producer-perf-test report such failures in one line
and exit 1 instead of hanging. About 60 s in all, most of it the delivery timeouts and the SIGSTOPs.
"""

from __future__ import annotations

import signal
import time

import pytest

from odradek.clients import Admin, NewTopic, Producer
from odradek.clients.admin.client import AlterConfigOp, ConfigResource, ConfigResourceType
from odradek.clients.simple_client import SimpleClient
from odradek.clients.producer.transaction_manager import TransactionState
from odradek.protocol.errors import KafkaError, RequestTimedOutError
from odradek.protocol.messages import FindCoordinatorRequest
from tests.conftest import module_cluster
from tests.integration.helpers import console_tool, read_all, run, wait_until
from tests.integration.test_client_transactions import read_ours

pytestmark = pytest.mark.timeout(300)

RECORDS, PARTITIONS = 10_000, 3
DELIVERY_MS, REQUEST_MS = 4000, 1500
# "Within delivery_timeout_ms plus a little": generous for a loaded 2-core machine; a hang never returns.
SLACK_S = 20.0
VARIANTS = {"idempotent": {}, "acks=1": {"acks": 1}, "transactional": {"transactional_id": None}}
NOT_MINE = (b"probe", b"warm-up")  # written by the tests' set-up, left out when stored records are checked
WARM_UP = NOT_MINE[1]
OVERRIDES = {"transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
             "offsets.topic.replication.factor": "1"}


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("delivery-timeout"), 2, OVERRIDES)


def new_producer(cluster, variant: str, topic: str) -> Producer:
    configs = dict(VARIANTS[variant])
    if "transactional_id" in configs:
        configs["transactional_id"] = f"txn-{topic}"
    return Producer(bootstrap_servers=cluster.bootstrap_servers, delivery_timeout_ms=DELIVERY_MS,
                    request_timeout_ms=REQUEST_MS, linger_ms=5, **configs)


def create(cluster, topic: str, configs: dict | None = None, on: int | None = None) -> None:
    with Admin(cluster.bootstrap_servers) as admin:
        if on is None:
            admin.create_topics([NewTopic(topic, PARTITIONS, 1, topic_configs=configs)])
        else:
            admin.create_topics([NewTopic(topic, replica_assignments={p: [on] for p in range(PARTITIONS)})])


def set_min_isr(cluster, topic: str, value: str) -> None:
    with Admin(cluster.bootstrap_servers) as admin:
        admin.incremental_alter_configs(
            {ConfigResource(ConfigResourceType.TOPIC, topic): [AlterConfigOp("min.insync.replicas", value)]})

    async def accepted() -> bool:  # the leaders applied it: an acks=all write goes through
        async with SimpleClient(cluster.bootstrap_servers) as client:
            codes = [(await client.produce(topic, p, [(None, b"probe")], acks=-1)).error_code for p in range(PARTITIONS)]
            return not any(codes)
    wait_until(lambda: run(accepted()), 60, f"min.insync.replicas={value} applied on {topic}", interval=0.5)


class Sends:
    """RECORDS sends ("<prefix>-%05d", record n to partition n % PARTITIONS), with the time each ended."""

    def __init__(self, producer: Producer, topic: str, prefix: str, count: int = RECORDS) -> None:
        self.ended: list[float] = []
        self.started = time.monotonic()
        self.values = [b"%s-%05d" % (prefix.encode(), n) for n in range(count)]
        self.futures = [producer.send(topic, value, partition=n % PARTITIONS) for n, value in enumerate(self.values)]
        self.sent = time.monotonic()
        for future in self.futures:
            future.add_done_callback(lambda _: self.ended.append(time.monotonic()))
        producer.flush()
        self.flushed = time.monotonic()

    def errors(self) -> list[BaseException]:
        return [future.exception() for future in self.futures]

    def check_all_failed_in_time(self) -> None:
        """Every record failed, none before delivery_timeout_ms (they are retried until then), all and
        flush() within delivery_timeout_ms plus a little."""
        assert all(error is not None for error in self.errors()), \
            f"{sum(e is None for e in self.errors())} records were acknowledged"
        delivery_s = DELIVERY_MS / 1000
        assert min(self.ended) - self.started >= delivery_s * 0.99, "a record was given up before its time"
        assert max(self.ended) - self.sent < delivery_s + SLACK_S
        assert self.flushed - self.sent < delivery_s + SLACK_S
        print(f"{len(self.futures)} records failed {min(self.ended) - self.started:.2f}-"
              f"{max(self.ended) - self.started:.2f} s after the first send; flush returned after "
              f"{self.flushed - self.started:.2f} s")


def values_by_partition(cluster, topic: str) -> dict[int, list[bytes]]:
    stored = run(read_all(cluster.bootstrap_servers, topic, PARTITIONS))
    return {p: [bytes(r.value) for r in records if bytes(r.value) not in NOT_MINE] for p, records in stored.items()}


def check_continues_after_failures(cluster, producer: Producer, topic: str, failed: Sends) -> None:
    """The same idempotent producer writes 300 more records: all acknowledged, each stored once, after any
    of the failed ones that did get written, in send order."""
    later = Sends(producer, topic, "later", 300)
    assert all(error is None for error in later.errors()), later.errors()[:3]
    for p, values in values_by_partition(cluster, topic).items():
        mine = later.values[p::PARTITIONS]
        assert values[-len(mine):] == mine, f"partition {p}: {values[-len(mine) - 3:][:6]}"
        earlier = values[:-len(mine)]
        assert earlier == [v for v in failed.values[p::PARTITIONS] if v in set(earlier)], \
            f"partition {p}: failed records stored twice or out of order: {earlier[:6]}"


def check_transaction_aborts_and_goes_on(cluster, producer: Producer, topic: str) -> None:
    """The transaction can only be aborted (its error names the failure); after the abort the producer
    commits a new transaction, and read_committed consumers see only that one's records."""
    assert producer.transaction_state is TransactionState.ABORTABLE_ERROR
    with pytest.raises(KafkaError) as commit_error:
        producer.commit_transaction()
    print(f"commit_transaction: {commit_error.value}")
    producer.abort_transaction()
    producer.begin_transaction()
    committed = [b"committed-%02d" % n for n in range(30)]
    for n, value in enumerate(committed):
        producer.send(topic, value, partition=n % PARTITIONS)
    producer.commit_transaction()
    seen = run(read_ours(cluster.bootstrap_servers, topic, "read_committed", PARTITIONS))
    assert sorted(bytes(r.value) for r in seen if bytes(r.value) not in NOT_MINE) == committed


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_records_to_a_topic_short_of_in_sync_replicas_fail_at_the_delivery_timeout(cluster, variant):
    topic = f"short-isr-{variant.replace('=', '')}"
    create(cluster, topic, {"min.insync.replicas": "2"})
    producer = new_producer(cluster, variant, topic)
    try:
        if variant == "transactional":
            producer.init_transactions()
            producer.begin_transaction()
        sends = Sends(producer, topic, "refused")
        if variant == "acks=1":  # min.insync.replicas binds only acks=all writes (Kafka's rule)
            assert all(error is None for error in sends.errors()), sends.errors()[:3]
            return
        sends.check_all_failed_in_time()
        named = [e for e in sends.errors() if "NOT_ENOUGH_REPLICAS" in str(e)]
        assert len(named) == RECORDS, [str(e) for e in sends.errors() if e not in named][:3]
        print("e.g.", sends.errors()[0])
        set_min_isr(cluster, topic, "1")
        if variant == "transactional":
            check_transaction_aborts_and_goes_on(cluster, producer, topic)
        else:
            check_continues_after_failures(cluster, producer, topic, sends)
            assert not any(v.startswith(b"refused") for vs in values_by_partition(cluster, topic).values() for v in vs)
    finally:
        producer.close(5)


def coordinator_of(cluster, transactional_id: str) -> int:
    async def find() -> int:
        async with SimpleClient(cluster.bootstrap_servers) as client:
            response = await client.send(None, FindCoordinatorRequest(key=transactional_id, key_type=1))
            assert response.error_code == 0
            return response.node_id
    return run(find())


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_records_to_a_stopped_leader_fail_at_the_delivery_timeout(cluster, variant):
    topic = f"stopped-leader-{variant.replace('=', '')}"
    producer = new_producer(cluster, variant, topic)
    try:
        victim = 1
        if variant == "transactional":
            producer.init_transactions()
            victim = 1 - coordinator_of(cluster, f"txn-{topic}")  # the coordinator stays up
        create(cluster, topic, on=victim)
        # A record to each partition first, so the producer is connected to the leader when it stops.
        if variant == "transactional":
            producer.begin_transaction()
        for future in [producer.send(topic, WARM_UP, partition=p) for p in range(PARTITIONS)]:
            future.get(30)
        if variant == "transactional":
            producer.commit_transaction()
            producer.begin_transaction()
        cluster.kill_broker(victim, signal.SIGSTOP)
        try:
            sends = Sends(producer, topic, "stalled")
        finally:
            cluster.kill_broker(victim, signal.SIGCONT)
        sends.check_all_failed_in_time()
        unexpected = [e for e in sends.errors() if not (isinstance(e, RequestTimedOutError) and "Expiring" in str(e))]
        assert not unexpected, unexpected[:3]
        print("e.g.", sends.errors()[0])

        async def leaders_back() -> None:
            async with SimpleClient(cluster.bootstrap_servers) as client:
                await client.wait_for_leaders(topic, timeout=60)
        run(leaders_back())
        if variant == "transactional":
            check_transaction_aborts_and_goes_on(cluster, producer, topic)
        elif variant == "idempotent":
            check_continues_after_failures(cluster, producer, topic, sends)
        else:
            later = Sends(producer, topic, "later", 300)
            assert all(error is None for error in later.errors()), later.errors()[:3]
    finally:
        producer.close(5)


def test_tools_report_records_they_cannot_write_in_one_line(cluster):
    topic = "short-isr-tools"
    create(cluster, topic, {"min.insync.replicas": "2"})
    boot = cluster.bootstrap_servers
    # The console producer's defaults: 3 retries, so the records fail after four attempts.
    done = console_tool("console-producer", "--bootstrap-server", boot, "--topic", topic,
                        "--request-required-acks", "all", stdin="".join(f"m{i}\n" for i in range(1000)),
                        check=False, timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 2, done.stderr
    assert "Error when sending message to topic short-isr-tools" in lines[0] and "NOT_ENOUGH_REPLICAS" in lines[0]
    assert "999 more messages to topic short-isr-tools failed" in lines[1]
    # The perf tool's records are retried (retries unbounded) until delivery.timeout.ms.
    done = console_tool("producer-perf-test", "--topic", topic, "--num-records", "2000", "--record-size", "100",
                        "--throughput", "-1", "--producer-props", f"bootstrap.servers={boot}", "acks=all",
                        f"delivery.timeout.ms={DELIVERY_MS}", f"request.timeout.ms={REQUEST_MS}",
                        check=False, timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert lines[0].startswith("2000 of 2000 records could not be sent to topic short-isr-tools")
    assert "Expiring" in lines[0] and "NOT_ENOUGH_REPLICAS" in lines[0]
    assert "0 records sent" in done.stdout
