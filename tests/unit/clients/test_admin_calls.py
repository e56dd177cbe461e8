"""AIOAdmin's calls (clients/admin/calls.py): deadlines, retries and the node each try goes to, against the fake
cluster of real broker reactors (fake_cluster.py). The real-cluster half is tests/integration/test_admin_failover.py."""

from __future__ import annotations

import asyncio
import contextlib
import ssl

import pytest

from odradek.clients.admin.client import AIOAdmin, ConfigResource, ConfigResourceType, NewTopic
from odradek.clients.admin.calls import AdminTimeoutError, retriable
from odradek.clients.errors import KafkaConnectionError
from odradek.clients.types import KafkaConfigurationError
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.errors import (  # type: ignore[attr-defined]
    NotControllerError, RequestTimedOutError, TopicAlreadyExistsError,
)
from odradek.protocol.messages import CreateTopicsResponse

from .fake_cluster import FakeCluster, fake_cluster
from .helpers import run


def admin_for(cluster, **kwargs) -> AIOAdmin:
    kwargs.setdefault("retry_backoff_ms", 10)
    return AIOAdmin(cluster.bootstrap, **kwargs)


def test_a_try_that_loses_its_connection_is_made_again_at_another_broker():
    async def main():
        async with fake_cluster(2) as cluster:
            async with admin_for(cluster) as admin:
                assert await admin.list_topics() == []  # at broker 0, the bootstrap server
                cluster.add_topic("t", [1])
                cluster.drop[ApiKey.METADATA] = 1  # broker 0 answers the next one by closing the connection
                assert await admin.list_topics() == ["t"]
                # Each list_topics that opens a connection first looks the brokers up (as Kafka's admin
                # refreshes its metadata after a disconnect): 0 took two then dropped one; 1 took both of
                # the retry (0 failed lately: it is asked last).
                assert cluster.calls[(0, ApiKey.METADATA)] == 3
                assert cluster.calls[(1, ApiKey.METADATA)] == 2

    run(main())


def test_a_call_that_no_broker_answers_times_out_at_its_deadline_naming_the_last_error():
    async def main():
        async with fake_cluster(2) as cluster:
            async with admin_for(cluster, request_timeout_ms=200, default_api_timeout_ms=600) as admin:
                await admin.list_topics()
                for server in cluster.servers.values():
                    await server.stop(timeout=0)
                loop = asyncio.get_running_loop()
                started = loop.time()
                with pytest.raises(AdminTimeoutError) as caught:
                    await admin.list_topics()
                took = loop.time() - started
        assert 0.5 <= took < 3.0, took
        text = str(caught.value)
        assert text.startswith("[Error 7 REQUEST_TIMED_OUT] listTopics timed out after ")
        assert "deadline of 600 ms passed" in text and "last error: NoBrokersAvailableError: " in text, text
        assert isinstance(caught.value.__cause__, KafkaConnectionError)
        assert int(text.split(" after ")[1].split(" ")[0]) > 1  # tried again and again meanwhile

    run(main())


def test_retries_bound_the_tries_too():
    async def main():
        async with fake_cluster(1) as cluster:
            async with admin_for(cluster, retries=2) as admin:
                await admin.list_topics()
                await cluster.servers[0].stop(timeout=0)
                with pytest.raises(AdminTimeoutError, match=r"after 3 attempt\(s\) \(retries=2 spent\)"):
                    await admin.describe_cluster()

    run(main())


def test_errors_that_are_not_retriable_end_the_call_at_once():
    async def main():
        async with fake_cluster(2) as cluster:
            async with admin_for(cluster) as admin:
                await admin.create_topics([NewTopic("a", 1, 1)])
                with pytest.raises(TopicAlreadyExistsError) as caught:
                    await admin.create_topics([NewTopic("a", 1, 1)])
                assert "earlier try" not in str(caught.value)  # no try of this call was cut off
                assert cluster.calls[(0, ApiKey.CREATE_TOPICS)] == 2

    run(main())


def test_controller_calls_follow_the_controller_after_not_controller_and_a_lost_connection():
    async def main():
        async with fake_cluster(3) as cluster:
            async with admin_for(cluster) as admin:
                assert await admin.create_topics([NewTopic("a", 1, 1)]) == {"a": None}
                cluster.controller_id = 1  # broker 0 now answers NOT_CONTROLLER: look the controller up again
                assert await admin.create_topics([NewTopic("b", 1, 1)]) == {"b": None}
                assert [cluster.calls[(b, ApiKey.CREATE_TOPICS)] for b in range(3)] == [2, 1, 0]
                # The controller loses the connection after creating "c": the retry at the controller (looked
                # up again) answers TOPIC_ALREADY_EXISTS, as Kafka's would; the error says why.
                cluster.controller_id = 2
                cluster.drop[ApiKey.CREATE_TOPICS] = 2  # at 1 (NOT_CONTROLLER, dropped), then at 2 (created, dropped)
                results = await admin.create_topics([NewTopic("c", 1, 1)], raise_errors=False)
                assert "c" in cluster.topics
                assert isinstance(results["c"], TopicAlreadyExistsError)
                assert "an earlier try of this call was cut off by KafkaConnectionError" in str(results["c"])
                assert [cluster.calls[(b, ApiKey.CREATE_TOPICS)] for b in range(3)] == [2, 2, 2]

    run(main())


@contextlib.asynccontextmanager
async def cluster_answering_create_topics(size: int, answer):
    """A fake cluster whose CreateTopics handler is ``answer(cluster, broker_id, request)``."""
    cluster = FakeCluster(size)
    cluster._create_topics = lambda broker_id, request: answer(cluster, broker_id, request)
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


def test_topics_answered_not_controller_are_the_only_ones_sent_again():
    sent: list[list[str]] = []

    def half_not_controller(cluster, broker_id, request):  # as a controller resigning mid-request might
        names = [t.name for t in request.body.topics]
        sent.append(names)
        first, *others = names
        if len(sent) == 1:
            cluster.add_topic(first, [0])
            return CreateTopicsResponse(topics=[
                CreateTopicsResponse.CreatableTopicResult(name=first, error_code=0),
                *(CreateTopicsResponse.CreatableTopicResult(name=n, error_code=NotControllerError.code)
                  for n in others)])
        return FakeCluster._create_topics(cluster, broker_id, request)

    async def main():
        async with cluster_answering_create_topics(2, half_not_controller) as cluster:
            async with admin_for(cluster) as admin:
                assert await admin.create_topics([NewTopic("x", 1, 1), NewTopic("y", 1, 1)]) == {"x": None, "y": None}
        assert sent == [["x", "y"], ["y"]]

    run(main())


def test_a_per_topic_error_is_the_topics_result_not_a_retry():
    def refuse(cluster, broker_id, request):  # e.g. REQUEST_TIMED_OUT: retriable, yet the topic's answer
        return CreateTopicsResponse(topics=[CreateTopicsResponse.CreatableTopicResult(
            name=t.name, error_code=RequestTimedOutError.code) for t in request.body.topics])

    async def main():
        async with cluster_answering_create_topics(1, refuse) as cluster:
            async with admin_for(cluster) as admin:
                with pytest.raises(RequestTimedOutError):
                    await admin.create_topics([NewTopic("x", 1, 1)])
            assert cluster.calls[(0, ApiKey.CREATE_TOPICS)] == 1

    run(main())


def test_a_broker_route_keeps_to_its_broker():
    async def main():
        async with fake_cluster(2) as cluster:
            async with admin_for(cluster, request_timeout_ms=200, default_api_timeout_ms=500) as admin:
                await admin.list_topics()
                port = cluster.port(1)
                await cluster.servers[1].stop(timeout=0)
                with pytest.raises(AdminTimeoutError) as caught:
                    await admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")])
                assert f"127.0.0.1:{port}" in str(caught.value)  # never another broker's
                assert "describeConfigs timed out" in str(caught.value)

    run(main())


def test_group_calls_find_the_coordinator_again_when_it_moves_or_its_connection_drops():
    async def main():
        async with fake_cluster(3) as cluster:
            async with admin_for(cluster) as admin:
                assert await admin.list_consumer_group_offsets("g") == {}
                assert cluster.calls[(0, ApiKey.OFFSET_FETCH)] == 1
                cluster.coordinator_id = 1  # 0 answers NOT_COORDINATOR
                assert await admin.list_consumer_group_offsets("g") == {}
                assert [cluster.calls[(b, ApiKey.OFFSET_FETCH)] for b in range(3)] == [2, 1, 0]
                cluster.coordinator_id = 2
                cluster.drop[ApiKey.OFFSET_FETCH] = 1  # 1 drops the connection (as a dying coordinator)
                assert await admin.list_consumer_group_offsets("g") == {}
                assert [cluster.calls[(b, ApiKey.OFFSET_FETCH)] for b in range(3)] == [2, 2, 1]
                assert sum(cluster.calls[(b, ApiKey.FIND_COORDINATOR)] for b in range(3)) == 3
                cluster.inject[ApiKey.FIND_COORDINATOR] = [15, 15]  # COORDINATOR_NOT_AVAILABLE twice, then found
                admin._calls.coordinators.clear()
                assert await admin.list_consumer_group_offsets("g") == {}
                assert sum(cluster.calls[(b, ApiKey.FIND_COORDINATOR)] for b in range(3)) == 6

    run(main())


def test_what_is_worth_another_try():
    assert retriable(KafkaConnectionError("connection to h:1 was closed by the broker"))
    assert retriable(TimeoutError("no response within 30 s"))
    assert retriable(NotControllerError())
    assert not retriable(TopicAlreadyExistsError())
    handshake = KafkaConnectionError("cannot connect to h:1: certificate verify failed")
    handshake.__cause__ = ssl.SSLCertVerificationError("certificate verify failed")
    assert not retriable(handshake)  # Kafka's SslAuthenticationException is fatal too
    assert not retriable(ValueError("a bug"))


def test_the_default_api_timeout_is_never_shorter_than_the_request_timeout():
    assert AIOAdmin("127.0.0.1:1").default_api_timeout_ms == 60000
    assert AIOAdmin("127.0.0.1:1", request_timeout_ms=90000).default_api_timeout_ms == 90000  # as Kafka raises it
    with pytest.raises(KafkaConfigurationError, match="must be no smaller than request_timeout_ms"):
        AIOAdmin("127.0.0.1:1", request_timeout_ms=5000, default_api_timeout_ms=4000)
