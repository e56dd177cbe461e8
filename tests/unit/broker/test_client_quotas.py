"""Client quotas without sockets: Kafka's Rate, the precedence of the eight levels, throttle times, the
request hook KafkaApis calls, and entity configs as ZooKeeper stores them."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from odradek.broker.kafka_apis import KafkaApis
from odradek.broker.network.request_channel import Request, Response
from odradek.broker.quota.client_quotas import ClientQuotas
from odradek.broker.quota.entity import (
    DEFAULT_NAME, UNLIMITED, QuotaStore, desanitize, key_from_path, sanitize,
)
from odradek.broker.quota.manager import FETCH, PRODUCE, ClientQuotaManager, ClientRequestQuotaManager
from odradek.broker.quota.stats import Avg, Rate
from odradek.broker.security.principal import KafkaPrincipal
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.header import RequestHeader
from odradek.protocol.messages import (
    HeartbeatRequest, HeartbeatResponse, LeaderAndIsrRequest, LeaderAndIsrResponse, ProduceRequest, ProduceResponse,
)
from tests.fakes.clock import ManualClock


# -- Kafka's Rate ---------------------------------------------------------------------------------------

def test_rate_pads_a_young_sensor_to_all_but_one_window():
    rate = Rate(num_samples=11, window_ms=1000)
    rate.record(10_000, 0)
    assert rate.window_size(0) == 10_000  # 0 elapsed + 10 whole windows of padding
    assert rate.measure(0) == 1000
    assert rate.window_size(2500) == 10_500  # 2.5 s elapsed: 2 full windows + 8 padded
    assert rate.measure(2500) == pytest.approx(10_000 / 10.5)
    assert rate.measure(11_000) == 0  # the only sample is older than the 11 windows: forgotten


def test_rate_measures_over_the_live_samples_once_old_enough():
    rate = Rate(num_samples=3, window_ms=1000)
    for second in range(5):
        rate.record(300, second * 1000)
    # samples began at 2000, 3000, 4000; 2.5 s elapsed, more than the 2 whole windows required
    assert rate.measure(4500) == pytest.approx(900 / 2.5)


def test_avg_is_nan_until_something_is_recorded():
    avg = Avg(2, 30_000)
    assert math.isnan(avg.measure(0))
    avg.record(100, 0)
    avg.record(300, 10)
    assert avg.measure(20) == 200


# -- names in ZooKeeper ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name,sanitized", [
    ("alice", "alice"), ("User:alice", "User%3Aalice"), ("a b", "a%20b"), ("a*b", "a%2Ab"), ("a~b", "a%7Eb"),
    ("CN=x,O=y", "CN%3Dx%2CO%3Dy"), ("é", "%C3%A9"), ("<default>", "%3Cdefault%3E"), ("a.b-c_d", "a.b-c_d"),
])
def test_sanitize_is_javas_url_encoding_with_kafkas_two_changes(name, sanitized):
    assert sanitize(name) == sanitized
    assert desanitize(sanitized) == name


def test_zookeeper_names_become_entities():
    assert key_from_path("alice", None) == ("alice", None)
    assert key_from_path("<default>", "<default>") == (DEFAULT_NAME, DEFAULT_NAME)
    assert key_from_path(None, "my%20app") == (None, "my app")  # client-ids are desanitized, users are not
    assert key_from_path(None, "%3Cdefault%3E") == (None, "<default>")  # a client named "<default>" is not it
    assert key_from_path(None, "%3Cdefault%3E")[1] is not DEFAULT_NAME


# -- precedence -----------------------------------------------------------------------------------------

LEVELS = [  # (entity set, the quota it carries), most specific first: Kafka's ClientQuotaManager doc
    (("alice", "app"), 1.0),
    (("alice", DEFAULT_NAME), 2.0),
    (("alice", None), 3.0),
    ((DEFAULT_NAME, "app"), 4.0),
    ((DEFAULT_NAME, DEFAULT_NAME), 5.0),
    ((DEFAULT_NAME, None), 6.0),
    ((None, "app"), 7.0),
    ((None, DEFAULT_NAME), 8.0),
]


@pytest.mark.parametrize("first", range(len(LEVELS)), ids=[f"level-{i + 1}" for i in range(len(LEVELS))])
def test_the_most_specific_level_set_wins(first):
    """With levels first..8 set, user alice with client-id app gets level ``first``'s quota."""
    manager = ClientQuotaManager(PRODUCE, quota_default=9.0)
    for key, bound in LEVELS[first:]:
        manager.update_quota(key, bound)
    assert manager.quota("alice", "app") == LEVELS[first][1]


def test_the_static_default_is_the_last_resort_for_client_ids():
    manager = ClientQuotaManager(PRODUCE, quota_default=9.0)
    assert manager.quota("alice", "app") == 9.0
    manager.update_quota(("bob", None), 3.0)  # a user quota for someone else changes nothing for alice
    assert manager.quota("alice", "app") == 9.0
    assert ClientQuotaManager(PRODUCE).quota("alice", "app") == UNLIMITED


@pytest.mark.parametrize("configured,tags", [
    ([], ("", "app")),
    ([((None, "app"), 1.0)], ("", "app")),                      # client-id quotas: shared by every user of app
    ([(("alice", None), 1.0)], ("alice", "")),                  # user quotas: shared by every client of alice
    ([(("alice", "app"), 1.0)], ("alice", "app")),
    ([((None, "app"), 1.0), (("alice", None), 2.0)], ("alice", "")),    # several levels: the first that applies
    ([((None, "app"), 1.0), (("bob", None), 2.0)], ("", "app")),
    ([((None, "app"), 1.0), ((DEFAULT_NAME, DEFAULT_NAME), 2.0)], ("alice", "app")),
])
def test_sensors_are_shared_by_whoever_shares_the_quota(configured, tags):
    store = QuotaStore()
    for key, bound in configured:
        store.update(key, bound)
    assert store.metric_tags("alice", "app") == tags


def test_removing_a_quota_falls_back_to_the_next_level_for_live_sensors():
    clock = ManualClock()
    manager = ClientQuotaManager(PRODUCE, clock=clock)
    manager.update_quota((None, DEFAULT_NAME), 500.0)
    manager.update_quota((None, "app"), 100.0)
    sensors = manager.sensors_for("alice", "app")
    assert sensors.bound == 100.0
    manager.update_quota((None, "app"), None)
    assert sensors.bound == 500.0
    assert manager.quotas_enabled  # as Kafka: enabled until a restart once any quota was set


# -- throttle times -------------------------------------------------------------------------------------

def test_byte_rate_throttle_is_the_time_that_brings_the_rate_back_to_the_bound():
    clock = ManualClock()
    manager = ClientQuotaManager(PRODUCE, clock=clock)
    assert manager.maybe_record_and_get_throttle_time_ms("alice", "app", 1e9) == 0  # no quota: nothing recorded
    assert manager.sensors == {}
    manager.update_quota((None, "app"), 1000.0)
    assert manager.record_and_get_throttle_time_ms("alice", "app", 5000) == 0  # 5000 B / 10 s = 500 B/s
    # 15000 B over the padded 10 s window = 1500 B/s: (1500 - 1000) / 1000 * 10 s = 5 s
    assert manager.record_and_get_throttle_time_ms("alice", "app", 10_000) == 5000
    # another client-id has a sensor of its own
    assert manager.record_and_get_throttle_time_ms("alice", "other", 10_000) == 0


def test_request_quota_throttle_is_capped_at_one_window():
    clock = ManualClock()
    manager = ClientRequestQuotaManager(num_samples=11, window_seconds=1, clock=clock)
    manager.update_quota(("alice", None), 1.0)  # 1 % of one handler: 10 ms per second
    # 2 s of handler time in 10 s: 20 % -> (20 - 1) / 1 * 10 s, capped at the 1 s window
    assert manager.maybe_record_handler_time("alice", "app", 2.0) == 1000
    assert manager.maybe_record_handler_time("bob", "app", 0.05) == 0  # no quota for bob


def test_unrecord_takes_back_what_a_throttled_fetch_did_not_send():
    clock = ManualClock()
    manager = ClientQuotaManager(FETCH, clock=clock)
    manager.update_quota((None, DEFAULT_NAME), 100.0)
    assert manager.record_and_get_throttle_time_ms("u", "c", 2000) > 0
    manager.unrecord("u", "c", 2000)
    assert manager.sensors_for("u", "c").rate.measure(clock()) == 0
    assert manager.max_value_in_quota_window("u", "c") == 100.0 * 10  # (samples - 1) windows' worth


def test_idle_sensors_expire_after_an_hour():
    clock = ManualClock()
    manager = ClientQuotaManager(PRODUCE, clock=clock)
    manager.update_quota((None, DEFAULT_NAME), 100.0)
    manager.record_and_get_throttle_time_ms("u", "old", 1)
    clock.now += 3600 * 1000 + 60_000
    manager.record_and_get_throttle_time_ms("u", "new", 1)
    assert set(manager.sensors) == {("", "new")}


# -- the request hook ------------------------------------------------------------------------------------

class FakeConnection:
    id = "c1"
    listener = "PLAINTEXT"
    principal = KafkaPrincipal("User", "alice")

    def __init__(self) -> None:
        self.throttles: list[float] = []
        self.done: list = []

    def throttle(self, seconds: float, on_done) -> bool:
        self.throttles.append(seconds)
        self.done.append(on_done)
        return True


def make_quotas(clock: ManualClock) -> ClientQuotas:
    config = SimpleNamespace(get={"quota.window.num": 11, "quota.window.size.seconds": 1,
                                  "quota.producer.default": 2**63 - 1, "quota.consumer.default": 2**63 - 1}.get)
    return ClientQuotas.from_config(config, clock=clock)


def produce_request(size: int, version: int = 8, acks: int = 1) -> Request:
    body = ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[])
    return Request(RequestHeader(ApiKey.PRODUCE, version, 1, "app"), body, FakeConnection(), size)


def test_a_produce_over_its_byte_rate_is_answered_at_once_with_the_throttle_and_mutes_the_connection():
    clock = ManualClock()
    quotas = make_quotas(clock)
    quotas.apply_entity_config("clients", "app", {"producer_byte_rate": "1000"})
    apis = KafkaApis()
    apis.throttle = quotas.throttle_response
    apis.register(ApiKey.PRODUCE, lambda req: ProduceResponse(responses=[], throttle_time_ms=0))
    first = produce_request(5000)
    response = apis.dispatch(first)
    assert response.kind == Response.SEND and first.throttle_time_ms == 0
    second = produce_request(10_000)
    response = apis.dispatch(second)
    assert response.kind == Response.SEND
    assert second.throttle_time_ms == 5000 and second.connection.throttles == [5.0]
    body = b"".join(bytes(p) for p in response.parts)
    assert ProduceResponse.decode(body[8:], 8).throttle_time_ms == 5000
    # Produce v0 has no throttle_time_ms: the connection is muted all the same
    old = produce_request(10_000, version=0)
    apis.dispatch(old)
    assert old.throttle_time_ms > 0 and old.connection.throttles


def test_acks_0_is_throttled_on_bytes_only():
    clock = ManualClock()
    quotas = make_quotas(clock)
    quotas.apply_entity_config("users", "alice", {"producer_byte_rate": "100", "request_percentage": "0.001"})
    request = produce_request(100_000, acks=0)
    request.dequeue_time = 1.0  # an absurd handler time: ignored for acks=0
    quotas.throttle_response(request, None)
    assert request.throttle_time_ms > 0 and request.connection.throttles
    assert quotas.produce.throttled_channels == 1
    request.connection.done[0]()
    assert quotas.produce.throttled_channels == 0


def test_request_percentage_throttles_any_client_request_but_not_broker_to_broker_ones():
    clock = ManualClock()
    quotas = make_quotas(clock)
    quotas.apply_entity_config("users", "<default>", {"request_percentage": "1"})
    heartbeat = Request(RequestHeader(ApiKey.HEARTBEAT, 4, 1, "app"), HeartbeatRequest(group_id="g"),
                        FakeConnection())
    heartbeat.dequeue_time, heartbeat.local_complete_time = 10.0, 12.0  # 2 s in a handler
    response = HeartbeatResponse(error_code=0, throttle_time_ms=0)
    quotas.throttle_response(heartbeat, response)
    assert response.throttle_time_ms == 1000 and heartbeat.connection.throttles == [1.0]
    leader_and_isr = Request(RequestHeader(ApiKey.LEADER_AND_ISR, 5, 1, "broker-0"), LeaderAndIsrRequest(),
                             FakeConnection())
    leader_and_isr.dequeue_time, leader_and_isr.local_complete_time = 10.0, 12.0
    quotas.throttle_response(leader_and_isr, LeaderAndIsrResponse())
    assert leader_and_isr.throttle_time_ms == 0 and not leader_and_isr.connection.throttles


def test_entity_configs_as_zookeeper_stores_them():
    quotas = make_quotas(ManualClock())
    quotas.apply_entity_config("users", "User%3Aalice/clients/my%20app",
                               {"producer_byte_rate": "1000", "consumer_byte_rate": "2000",
                                "request_percentage": "12.5"})
    assert quotas.produce.quota("User:alice", "my app") == 1000
    assert quotas.fetch.quota("User:alice", "my app") == 2000
    assert quotas.request.quota("User:alice", "my app") == 12.5
    quotas.apply_entity_config("users", "User%3Aalice/clients/my%20app", {"consumer_byte_rate": "3000"})
    assert quotas.produce.quota("User:alice", "my app") == UNLIMITED  # an absent key removes the quota
    assert quotas.fetch.quota("User:alice", "my app") == 3000
    quotas.apply_entity_config("clients", "app", {"producer_byte_rate": "not a number"})  # logged, ignored
    assert quotas.produce.quota("x", "app") == UNLIMITED
    with pytest.raises(ValueError):
        quotas.apply_entity_config("users", "a/b", {})


def test_an_unsupported_api_versions_request_is_throttled_but_answered_at_v0_without_the_field():
    from odradek.protocol.messages import ApiVersionsResponse

    quotas = make_quotas(ManualClock())
    quotas.apply_entity_config("users", "<default>", {"request_percentage": "1"})
    request = Request(RequestHeader(ApiKey.API_VERSIONS, 99, 1, "app"), None, FakeConnection(),
                      unsupported_version=True)
    request.dequeue_time, request.local_complete_time = 10.0, 12.0
    body = ApiVersionsResponse(error_code=35, api_keys=[], throttle_time_ms=0)
    quotas.throttle_response(request, body)
    assert request.throttle_time_ms > 0 and request.connection.throttles
    assert body.throttle_time_ms == 0
    ApiVersionsResponse.MESSAGE.encode(body, 0)  # still encodable at v0
