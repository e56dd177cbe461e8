"""Client quotas with real brokers: DescribeClientQuotas / AlterClientQuotas from our Admin, kafka-python's
codec and odradek-configs; what lands in ZooKeeper; a quota set with the tool reaching every broker of
three; throttled confluent-kafka and kafka-python clients seeing throttle_time_ms while others are not
throttled; the quota metrics.

The brokers keep two quota samples of one second (``quota.window.num=2``), so rates and throttle times
follow a burst within a second or two instead of Kafka's ten. Throughput is printed, never asserted: the
assertions are on throttle times reported to the clients and on the brokers' own throttle counters.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families

from odradek.clients.admin.client import (
    Admin, ClientQuotaAlteration, ClientQuotaEntity, ClientQuotaFilter, ClientQuotaFilterComponent,
)
from odradek.tools.local_cluster import LocalCluster
from odradek.clients.simple_client import SyncSimpleClient, build_batch
from odradek.protocol import errors
from odradek.protocol.messages import ProduceRequest
from tests.conftest import module_cluster
from tests.integration.helpers import console_tool, wait_until

pytestmark = pytest.mark.timeout(300)

USER, CLIENT = ClientQuotaEntity.USER, ClientQuotaEntity.CLIENT_ID
Op = ClientQuotaAlteration.Op
BATCH_BYTES = 400_000  # one produce request's records (below the 1 MB max.message.bytes)


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("quota-cluster"), 3, {"quota.window.num": "2"},
                              metrics_base_port=0)


@pytest.fixture(scope="module")
def admin(cluster):
    with Admin(cluster.bootstrap_servers) as admin:
        yield admin


@pytest.fixture(scope="module")
def spread_topic(cluster):
    """Three partitions, partition i led by broker i."""
    with SyncSimpleClient(cluster.bootstrap_servers) as client:
        assert client.create_topics({"quota-spread": {0: [0], 1: [1], 2: [2]}})["quota-spread"] == 0
        client.wait_for_leaders("quota-spread")
    return "quota-spread"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def entity(**names: str | None) -> ClientQuotaEntity:
    return ClientQuotaEntity({USER if key == "user" else CLIENT: value for key, value in names.items()})


def set_quota(admin: Admin, quota_entity: ClientQuotaEntity, **values: float | None) -> None:
    admin.alter_client_quotas([ClientQuotaAlteration(quota_entity, [Op(k, v) for k, v in values.items()])])


def produce_throttle_ms(cluster: LocalCluster, broker: int, client_id: str, topic: str,
                        size: int = BATCH_BYTES) -> int:
    """One produce of ``size`` bytes to the partition broker ``broker`` leads; the throttle_time_ms it answers."""
    batch = build_batch([(None, os.urandom(size))])
    request = ProduceRequest(acks=1, timeout_ms=10_000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.TopicProduceData.PartitionProduceData(index=broker, records=batch)])])
    with SyncSimpleClient(cluster.bootstrap_servers, client_id=client_id) as client:
        response = client.send(broker, request)
    [topic_response] = response.responses
    assert topic_response.partition_responses[0].error_code == 0
    return response.throttle_time_ms


def scrape(url: str) -> dict[tuple[str, frozenset], float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


# -- the API ------------------------------------------------------------------------------------------------

def test_alter_and_describe_client_quotas_with_our_admin(cluster, admin, zk_client_factory):
    user, app = unique("User:alice"), unique("app")
    set_quota(admin, entity(client=app), producer_byte_rate=200_000, consumer_byte_rate=300_000)
    set_quota(admin, entity(user=user), request_percentage=25.5)
    set_quota(admin, entity(user=user, client=app), producer_byte_rate=500_000)
    set_quota(admin, entity(user=None, client=None), producer_byte_rate=1e9)  # <default>/<default>
    everything = admin.describe_client_quotas()
    assert everything[entity(client=app)] == {"producer_byte_rate": 200_000.0, "consumer_byte_rate": 300_000.0}
    assert everything[entity(user=user)] == {"request_percentage": 25.5}
    assert everything[entity(user=user, client=app)] == {"producer_byte_rate": 500_000.0}
    assert everything[entity(user=None, client=None)] == {"producer_byte_rate": 1e9}

    of_user = ClientQuotaFilterComponent.of_entity(USER, user)
    assert set(admin.describe_client_quotas(ClientQuotaFilter.contains([of_user]))) == {
        entity(user=user), entity(user=user, client=app)}
    assert set(admin.describe_client_quotas(ClientQuotaFilter.contains_only([of_user]))) == {entity(user=user)}
    defaults = [ClientQuotaFilterComponent.of_default_entity(USER), ClientQuotaFilterComponent.of_default_entity(CLIENT)]
    assert set(admin.describe_client_quotas(ClientQuotaFilter.contains_only(defaults))) == {
        entity(user=None, client=None)}
    clients_only = admin.describe_client_quotas(ClientQuotaFilter.contains_only(
        [ClientQuotaFilterComponent.of_entity_type(CLIENT)]))
    assert entity(client=app) in clients_only and all(set(e.entries) == {CLIENT} for e in clients_only)

    # Stored as Kafka stores it: sanitized names, {"version":1,"config":{...}}, and a change notification.
    zk = zk_client_factory(cluster.zookeeper_connect)
    path = f"/config/users/{user.replace(':', '%3A')}/clients/{app}"
    assert json.loads(zk.get_data(path)[0]) == {"version": 1, "config": {"producer_byte_rate": "500000"}}
    assert json.loads(zk.get_data(f"/config/users/{user.replace(':', '%3A')}")[0]) == {
        "version": 1, "config": {"request_percentage": "25.5"}}
    assert json.loads(zk.get_data("/config/users/<default>/clients/<default>")[0])["config"] == {
        "producer_byte_rate": "1000000000"}
    last = zk.get_children("/config/changes")[-1]
    assert json.loads(zk.get_data(f"/config/changes/{last}")[0]) == {
        "version": 2, "entity_path": "users/<default>/clients/<default>"}

    # validate_only writes nothing; removing the last key leaves the entity out of descriptions
    admin.alter_client_quotas([ClientQuotaAlteration(entity(client=app), [Op("producer_byte_rate", 1)])],
                              validate_only=True)
    assert admin.describe_client_quotas()[entity(client=app)]["producer_byte_rate"] == 200_000.0
    set_quota(admin, entity(client=app), producer_byte_rate=None, consumer_byte_rate=None)
    set_quota(admin, entity(user=None, client=None), producer_byte_rate=None)
    remaining = admin.describe_client_quotas()
    assert entity(client=app) not in remaining and entity(user=None, client=None) not in remaining


@pytest.mark.parametrize("quota_entity, ops, error, message", [
    (entity(client="x"), [Op("producer_byte_rate", 1.5)], errors.InvalidRequestError,
     "Configuration producer_byte_rate must be a LONG value"),
    (entity(client="x"), [Op("bogus", 1)], errors.InvalidRequestError, "Invalid configuration key bogus"),
    (entity(client="x"), [Op("consumer_byte_rate", 0)], errors.InvalidRequestError,
     "Quota consumer_byte_rate must be greater than 0"),
    (entity(client="x"), [Op("controller_mutation_rate", 5)], errors.InvalidRequestError, "not supported"),
    (ClientQuotaEntity({}), [Op("producer_byte_rate", 1)], errors.InvalidRequestError,
     "Invalid empty client quota entity"),
    (entity(client=""), [Op("producer_byte_rate", 1)], errors.InvalidRequestError, "Empty client-id not supported"),
    (ClientQuotaEntity({"group": "g"}), [Op("producer_byte_rate", 1)], errors.InvalidRequestError,
     "Unhandled client quota entity type: group"),
    (ClientQuotaEntity({"ip": "127.0.0.1"}), [Op("connection_creation_rate", 1)], errors.InvalidRequestError,
     "not supported"),
])
def test_bad_alterations_get_kafkas_errors_per_entity(admin, quota_entity, ops, error, message):
    good = entity(client=unique("good"))
    results = admin.alter_client_quotas([ClientQuotaAlteration(quota_entity, ops),
                                         ClientQuotaAlteration(good, [Op("producer_byte_rate", 1000)])],
                                        raise_errors=False)
    assert isinstance(results[quota_entity], error) and message in str(results[quota_entity])
    assert results[good] is None  # the other entry of the request is applied
    set_quota(admin, good, producer_byte_rate=None)


def test_bad_describe_filters_are_top_level_errors(admin):
    with pytest.raises(errors.InvalidRequestError, match="Duplicate user filter component"):
        admin.describe_client_quotas(ClientQuotaFilter.contains([ClientQuotaFilterComponent.of_entity(USER, "a"),
                                                                 ClientQuotaFilterComponent.of_entity(USER, "b")]))
    with pytest.raises(errors.UnsupportedVersionError, match="Custom entity type 'group' not supported"):
        admin.describe_client_quotas(ClientQuotaFilter.contains([ClientQuotaFilterComponent.of_entity("group", "a")]))


def test_kafka_python_speaks_both_apis(cluster, admin):
    """kafka-python's own encoding of DescribeClientQuotas / AlterClientQuotas (it has no admin method)."""
    from kafka.admin import KafkaAdminClient
    from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

    client_id = unique("kp-quota")
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        async def send(request):
            return await kp._manager.send(request)

        entry = AlterClientQuotasRequest.EntryData
        altered = kp._manager.run(send, AlterClientQuotasRequest(validate_only=False, entries=[entry(
            entity=[entry.EntityData(entity_type="client-id", entity_name=client_id)],
            ops=[entry.OpData(key="consumer_byte_rate", value=123456.0, remove=False)])]))
        assert [(e.error_code, e.error_message) for e in altered.entries] == [(0, None)]
        described = kp._manager.run(send, DescribeClientQuotasRequest(
            components=[DescribeClientQuotasRequest.ComponentData(entity_type="client-id", match_type=0,
                                                                 match=client_id)], strict=True))
        assert described.error_code == 0
        assert [([(e.entity_type, e.entity_name) for e in d.entity], [(v.key, v.value) for v in d.values])
                for d in described.entries] == [([("client-id", client_id)], [("consumer_byte_rate", 123456.0)])]
    finally:
        kp.close()
    assert admin.describe_client_quotas()[entity(client=client_id)] == {"consumer_byte_rate": 123456.0}
    set_quota(admin, entity(client=client_id), consumer_byte_rate=None)


# -- odradek-configs ----------------------------------------------------------------------------------------

def test_configs_tool_alters_and_describes_users_and_clients(cluster):
    def tool(*args: str, check: bool = True):
        return console_tool("configs", "--bootstrap-server", cluster.bootstrap_servers, *args, check=check)

    client_id, user = unique("tool-client"), unique("tool-user")
    done = tool("--entity-type", "clients", "--entity-name", client_id, "--alter",
                "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=20000000")
    assert done.stdout == f"Completed updating config for client {client_id}.\n"
    assert tool("--entity-type", "clients", "--entity-name", client_id, "--describe").stdout == (
        f"Quota configs for client-id '{client_id}' are consumer_byte_rate=2.0E7, producer_byte_rate=1048576.0\n")
    done = tool("--entity-type", "users", "--entity-name", user, "--entity-type", "clients", "--entity-default",
                "--alter", "--add-config", "request_percentage=12.5")
    assert done.stdout == f"Completed updating config for user {user}.\n"
    done = tool("--user-defaults", "--alter", "--add-config", "producer_byte_rate=900000000")
    assert done.stdout == "Completed updating default config for users in the cluster.\n"
    try:
        lines = tool("--entity-type", "users", "--entity-type", "clients", "--describe").stdout.splitlines()
        assert f"Quota configs for user-principal '{user}', the default client-id are request_percentage=12.5" in lines
        lines = tool("--entity-type", "users", "--describe").stdout.splitlines()
        assert "Quota configs for the default user-principal are producer_byte_rate=9.0E8" in lines
        assert not any(user in line for line in lines)  # strict: the (user, client-id) entity is not a user's

        missing = tool("--client", client_id, "--alter", "--delete-config", "request_percentage", check=False)
        assert (missing.returncode, missing.stderr.strip()) == (1, "Invalid config(s): request_percentage")
        scram = tool("--client", client_id, "--alter", "--add-config", "SCRAM-SHA-256=[password=x]", check=False)
        assert scram.returncode == 1 and "Only quota configs can be added for 'clients'" in scram.stderr
        bad = tool("--client", client_id, "--alter", "--add-config", "producer_byte_rate=fast", check=False)
        assert (bad.returncode, bad.stderr.strip()) == (1, "Cannot parse quota configuration value for "
                                                            "producer_byte_rate: fast")
        refused = tool("--client", client_id, "--alter", "--add-config", "producer_byte_rate=0.5", check=False)
        assert refused.returncode == 1 and "must be a LONG value" in refused.stderr

        tool("--client", client_id, "--alter", "--delete-config", "producer_byte_rate")
        assert tool("--client", client_id, "--describe").stdout == (
            f"Quota configs for client-id '{client_id}' are consumer_byte_rate=2.0E7\n")
    finally:
        tool("--client", client_id, "--alter", "--delete-config", "consumer_byte_rate")
        tool("--user-defaults", "--alter", "--delete-config", "producer_byte_rate")
        tool("--user", user, "--client-defaults", "--alter", "--delete-config", "request_percentage")
    assert tool("--client", client_id, "--describe").stdout == ""


# -- throttling -----------------------------------------------------------------------------------------------

def test_a_quota_set_with_the_tool_reaches_every_broker_and_spares_other_clients(cluster, spread_topic):
    slow, fast = unique("slow"), unique("fast")
    started = time.monotonic()
    console_tool("configs", "--bootstrap-server", cluster.bootstrap_servers, "--alter", "--entity-type", "clients",
                 "--entity-name", slow, "--add-config", "producer_byte_rate=200000")
    for broker in range(3):
        # 400 kB in the first second is twice the quota: this broker throttles slow once it knows the quota
        wait_until(lambda b=broker: produce_throttle_ms(cluster, b, slow, spread_topic) > 0, timeout=30,
                   what=f"broker {broker} to throttle {slow}", interval=0.5)
        assert produce_throttle_ms(cluster, broker, fast, spread_topic) == 0
    print(f"\nthe quota throttled {slow} on all three brokers {time.monotonic() - started:.1f} s after the tool ran")


def test_throttled_confluent_producer_sees_throttle_time_and_another_does_not(cluster, admin, spread_topic):
    from confluent_kafka import Producer

    slow, fast = unique("ck-slow"), unique("ck-fast")
    set_quota(admin, entity(client=slow), producer_byte_rate=500_000)
    wait_until(lambda: produce_throttle_ms(cluster, 0, slow, spread_topic) > 0, timeout=30, what="quota applied")

    def run(client_id: str, total_bytes: int) -> tuple[list[float], float]:
        throttles: list[float] = []
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": client_id,
                             "throttle_cb": lambda event: throttles.append(event.throttle_time), "linger.ms": 5})
        value = os.urandom(10_000)
        started = time.monotonic()
        for i in range(total_bytes // len(value)):
            producer.produce(spread_topic, value, partition=0)
            producer.poll(0)
        assert producer.flush(120) == 0
        return throttles, time.monotonic() - started

    slow_throttles, slow_s = run(slow, 2_000_000)
    fast_throttles, fast_s = run(fast, 2_000_000)
    print(f"\nconfluent-kafka: {slow} {2_000_000 / slow_s / 1000:.0f} kB/s under a 500 kB/s quota "
          f"(throttled {len(slow_throttles)} times, up to {max(slow_throttles, default=0) * 1000:.0f} ms); "
          f"{fast} {2_000_000 / fast_s / 1000:.0f} kB/s")
    assert slow_throttles and max(slow_throttles) > 0
    assert not fast_throttles


def test_throttled_kafka_python_producer_and_consumer(cluster, admin, spread_topic):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    slow, fast = unique("kp-slow"), unique("kp-fast")
    set_quota(admin, entity(client=slow), producer_byte_rate=500_000, consumer_byte_rate=500_000)
    wait_until(lambda: produce_throttle_ms(cluster, 1, slow, spread_topic) > 0, timeout=30, what="quota applied")

    def throttle_max(client) -> float:
        return max((v for metrics in client.metrics().values() for k, v in metrics.items()
                    if k == "throttle-time-max"), default=0.0)

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id=slow, linger_ms=5)
    value = os.urandom(10_000)
    started = time.monotonic()
    for _ in range(200):
        producer.send(spread_topic, value, partition=1)
    producer.flush(120)
    produced_s = time.monotonic() - started
    assert throttle_max(producer) > 0
    producer.close()

    def consume(client_id: str, at_most: int) -> tuple[float, float]:
        """(longest throttle, bytes/s) reading the partition from the start, or until ``at_most`` bytes are read
        and a throttle was seen."""
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, client_id=client_id,
                                 enable_auto_commit=False, fetch_max_bytes=10_000_000)
        tp = TopicPartition(spread_topic, 1)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        started = time.monotonic()
        got = 0
        while consumer.position(tp) < end and not (got >= at_most and throttle_max(consumer) > 0):
            got += sum(len(r.value) for records in consumer.poll(timeout_ms=500).values() for r in records)
        elapsed = time.monotonic() - started
        result = throttle_max(consumer), got / elapsed
        consumer.close()
        return result

    # The throttled read stops after 300 kB and a throttle (the partition holds other tests' records too):
    # kafka-python 3.0 reads far below the quota here (about 24 kB/s under 500 kB/s), which took minutes for
    # the whole partition.
    slow_throttle, slow_rate = consume(slow, at_most=300_000)
    fast_throttle, fast_rate = consume(fast, at_most=1 << 40)
    print(f"\nkafka-python: produced 2 MB in {produced_s:.1f} s under a 500 kB/s quota; consumed "
          f"{slow_rate / 1000:.0f} kB/s throttled (up to {slow_throttle:.0f} ms) against {fast_rate / 1000:.0f} kB/s")
    assert slow_throttle > 0
    assert fast_throttle == 0


def test_quota_metrics_on_the_brokers(cluster, admin, spread_topic):
    slow = unique("metrics-slow")
    set_quota(admin, entity(client=slow), producer_byte_rate=100_000)
    wait_until(lambda: produce_throttle_ms(cluster, 2, slow, spread_topic) > 0, timeout=30, what="quota applied")
    samples = scrape(cluster.metrics_urls[2])
    labels = frozenset({"resource": "Produce", "user": "", "clientId": slow}.items())
    assert samples[("kafka_server_quota_byte_rate", labels)] > 100_000
    assert samples[("kafka_server_quota_throttle_time", labels)] > 0
    throttled_ms = samples[("kafka_network_requestmetrics_throttletimems_sum", frozenset({"request": "Produce"}.items()))]
    assert throttled_ms > 0


def test_a_user_quota_applies_to_the_connections_principal(cluster, admin, spread_topic):
    """Without authentication every connection's principal is User:ANONYMOUS: a quota on that user throttles
    every client-id, and its sensor is the user's."""
    set_quota(admin, entity(user="ANONYMOUS"), producer_byte_rate=100_000)
    try:
        wait_until(lambda: produce_throttle_ms(cluster, 0, unique("anon"), spread_topic) > 0, timeout=30,
                   what="the user quota applied")
        samples = scrape(cluster.metrics_urls[0])
        labels = frozenset({"resource": "Produce", "user": "ANONYMOUS", "clientId": ""}.items())
        assert samples[("kafka_server_quota_throttle_time", labels)] > 0
    finally:
        set_quota(admin, entity(user="ANONYMOUS"), producer_byte_rate=None)
    wait_until(lambda: produce_throttle_ms(cluster, 0, unique("anon"), spread_topic) == 0, timeout=30,
               what="the user quota removed")


# -- our clients wait out throttles (KIP-219) -----------------------------------------------------------------

class WireLog:
    """Notes, per connection of our clients in this process, when each request was written and when each
    response that throttles the client arrived; and every connection failure other than a client's close."""

    def __init__(self, monkeypatch) -> None:
        from odradek.clients.connection import BrokerConnection
        from odradek.clients.throttle import client_throttles

        self.writes: list[tuple[BrokerConnection, float, int]] = []  # (connection, loop time, api key)
        self.throttles: list[tuple[BrokerConnection, float, int, int]] = []  # (.., loop time, ms, api key)
        self.failures: list[str] = []
        write, note, fail = BrokerConnection._write, BrokerConnection._note_throttle, BrokerConnection._fail

        def logged_write(conn, data, correlation_id, api_key, *rest):
            self.writes.append((conn, conn._loop.time(), api_key))
            return write(conn, data, correlation_id, api_key, *rest)

        def logged_note(conn, api_key, version, body):
            throttle_ms = getattr(body, "throttle_time_ms", 0)
            if throttle_ms > 0 and client_throttles(api_key, version):
                self.throttles.append((conn, conn._loop.time(), throttle_ms, api_key))
            return note(conn, api_key, version, body)

        def logged_fail(conn, error, **kwargs):
            if not conn.closed and "closed by the client" not in str(error):
                self.failures.append(f"{conn.host}:{conn.port}: {error}")
            return fail(conn, error, **kwargs)

        monkeypatch.setattr(BrokerConnection, "_write", logged_write)
        monkeypatch.setattr(BrokerConnection, "_note_throttle", logged_note)
        monkeypatch.setattr(BrokerConnection, "_fail", logged_fail)

    def spacing_checked(self, api_key: int) -> int:
        """Asserts that nothing was written on a connection before the throttle of a response that came on it
        had passed; returns how many ``api_key`` throttles were followed by a write on their connection."""
        followed = 0
        for conn, received, throttle_ms, key in self.throttles:
            later = [at for c, at, _ in self.writes if c is conn and at > received]
            assert all(at >= received + throttle_ms / 1000 - 0.002 for at in later), (
                f"a request went out {received + throttle_ms / 1000 - min(later):.3f} s before the end of a "
                f"{throttle_ms} ms throttle")
            followed += bool(later) and key == api_key
        return followed


@pytest.fixture(scope="module")
def replicated_topic(cluster):
    """One partition led by broker 0 with three replicas, so acks=all waits for the followers."""
    with SyncSimpleClient(cluster.bootstrap_servers) as client:
        assert client.create_topics({"quota-replicated": {0: [0, 1, 2]}})["quota-replicated"] == 0
        client.wait_for_leaders("quota-replicated")
    return "quota-replicated"


def test_our_producers_and_consumer_wait_out_throttles_and_never_time_out(cluster, admin, spread_topic,
                                                                          replicated_topic, monkeypatch):
    """Throttles (1-3 s here) longer than the clients' request timeouts: before the clients waited them out, the
    next request sat unread in the muted connection until it timed out, and the reconnect escaped the quota."""
    import asyncio

    from odradek.clients.consumer.consumer import AIOConsumer
    from odradek.clients.producer.producer import AIOProducer
    from odradek.clients.types import TopicPartition
    from odradek.protocol.api_keys import ApiKey

    ids = {"1": unique("ours-acks1"), "all": unique("ours-acksall"), "consumer": unique("ours-consumer")}
    set_quota(admin, entity(client=ids["1"]), producer_byte_rate=40_000)
    set_quota(admin, entity(client=ids["all"]), producer_byte_rate=40_000)
    set_quota(admin, entity(client=ids["consumer"]), consumer_byte_rate=100_000)
    for client_id in (ids["1"], ids["all"]):
        # 60 kB is over 40 kB/s at once, and its throttle (0.5 s) is soon over
        wait_until(lambda: produce_throttle_ms(cluster, 0, client_id, spread_topic, 60_000) > 0, timeout=30,
                   what="quota applied")
    wire = WireLog(monkeypatch)
    value = os.urandom(10_000)

    async def produce(acks: str) -> tuple[list[bytes], dict]:
        producer = AIOProducer(bootstrap_servers=cluster.bootstrap_servers, client_id=ids[acks],
                               acks=int(acks) if acks == "1" else acks, request_timeout_ms=1000,
                               max_in_flight_requests_per_connection=1, batch_size=80_000)
        async with producer:
            keys = [f"{acks}-{i}".encode() for i in range(16)]
            futures = [await producer.send(replicated_topic, value, key=key, partition=0) for key in keys]
            await producer.flush()
            for future in futures:
                assert (await future).offset >= 0
            return keys, producer.metrics()

    async def consume(expected: set[bytes]) -> dict:
        consumer = AIOConsumer(bootstrap_servers=cluster.bootstrap_servers, client_id=ids["consumer"],
                               request_timeout_ms=1500, fetch_max_wait_ms=100, enable_auto_commit=False)
        async with consumer:
            tp = TopicPartition(replicated_topic, 0)
            consumer.assign([tp])
            # every record written once: no request was retried after a timeout
            assert await consumer.end_offsets([tp]) == {tp: len(expected)}
            await consumer.seek_to_beginning(tp)
            seen: set[bytes] = set()
            async with asyncio.timeout(120):
                while not expected <= seen:
                    for records in (await consumer.getmany(timeout_ms=500)).values():
                        seen.update(r.key for r in records)
            return consumer.metrics()

    async def main():
        started = time.monotonic()
        (keys_1, metrics_1), (keys_all, metrics_all) = await asyncio.gather(produce("1"), produce("all"))
        produced_s = time.monotonic() - started
        consumer_metrics = await consume(set(keys_1) | set(keys_all))
        return produced_s, time.monotonic() - started - produced_s, metrics_1, metrics_all, consumer_metrics

    produced_s, consumed_s, metrics_1, metrics_all, consumer_metrics = asyncio.run(main())
    longest = [metrics_1["producer-metrics"]["produce-throttle-time-max"],
               metrics_all["producer-metrics"]["produce-throttle-time-max"],
               consumer_metrics["consumer-fetch-manager-metrics"]["fetch-throttle-time-max"]]
    print(f"\nour clients: 2 x 160 kB produced in {produced_s:.1f} s under 40 kB/s quotas (longest throttles "
          f"{longest[0]:.0f} and {longest[1]:.0f} ms), read back in {consumed_s:.1f} s under 100 kB/s (longest "
          f"{longest[2]:.0f} ms)")
    assert all(ms > 0 for ms in longest), longest
    assert wire.failures == []  # no request timed out, no connection was replaced
    assert wire.spacing_checked(ApiKey.PRODUCE) >= 2
    assert wire.spacing_checked(ApiKey.FETCH) >= 1
