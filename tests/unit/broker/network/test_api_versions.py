"""ApiVersions over real sockets, checked with our codec, kafka-python's and librdkafka."""

from __future__ import annotations

import asyncio

import pytest
from kafka.protocol.broker_version_data import BrokerVersionData
from kafka.protocol.metadata import ApiVersionsRequest as KpApiVersionsRequest
from kafka.protocol.metadata import ApiVersionsResponse as KpApiVersionsResponse

from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS, ApiKey, advertised_versions

from .helpers import LOOP_IDS, LOOPS, Client, heartbeat_response, run, serving, switchboard


def table(body) -> dict[int, tuple[int, int]]:
    return {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}


@pytest.mark.parametrize("factory", LOOPS, ids=LOOP_IDS)
def test_every_version_is_answered_with_the_served_keys(factory):
    apis = switchboard()
    apis.register(ApiKey.HEARTBEAT, lambda request: heartbeat_response())

    async def main():
        async with serving(apis) as server:
            client = await Client.connect(server.port())
            for version in range(4):
                body = await client.api_versions(version, correlation_id=100 + version)
                assert body.error_code == 0
                assert table(body) == advertised_versions({18, 12}) == {18: (0, 3), 12: (0, 4)}
            client.close()
            assert server.api_requests[18] == 4

    run(main(), factory)


def test_table_follows_registered_handlers():
    apis = switchboard()

    async def main():
        async with serving(apis) as server:
            client = await Client.connect(server.port())
            assert table(await client.api_versions()) == {18: (0, 3)}
            apis.register(ApiKey.HEARTBEAT, lambda request: heartbeat_response())
            assert table(await client.api_versions(correlation_id=2)) == {18: (0, 3), 12: (0, 4)}
            client.close()

    run(main())


def test_full_table_makes_kafka_python_see_kafka_2_8():
    apis = switchboard()
    for key in KAFKA_2_8_VERSIONS:
        if key != ApiKey.API_VERSIONS:
            apis.register(key, lambda request: None)

    async def main():
        async with serving(apis) as server:
            client = await Client.connect(server.port())
            body = await client.api_versions()
            client.close()
            return body

    body = run(main())
    assert table(body) == KAFKA_2_8_VERSIONS
    assert BrokerVersionData(api_versions=table(body)).broker_version[:2] == (2, 8)


def test_unsupported_version_gets_error_35_in_a_v0_body_and_the_connection_stays():
    async def main():
        async with serving() as server:
            client = await Client.connect(server.port())
            request = KpApiVersionsRequest(version=4, client_software_name="kafka-python",
                                           client_software_version="3.0.12")
            request.with_header(correlation_id=41)
            client.send_raw(bytes(request.encode(header=True, framed=True)))
            frame = await client.read_frame()
            response = KpApiVersionsResponse.decode(frame, version=0, header=True)
            assert response._header.correlation_id == 41
            assert response.error_code == 35
            assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [(18, 0, 3)]
            # What kafka-python does next: retry at min(4 - 1, our max) on the same connection.
            assert (await client.api_versions(3, correlation_id=42)).error_code == 0
            client.close()
            assert server.stats["unsupported_version"] == 0  # answered, not closed

    run(main())


def test_invalid_client_software_name_gets_error_42():
    from odradek.protocol.messages import ApiVersionsRequest

    async def main():
        async with serving() as server:
            client = await Client.connect(server.port())
            client.send(ApiVersionsRequest(client_software_name="bad name!", client_software_version="1"), 3, 9)
            cid, body = await client.receive(18, 3)
            assert (cid, body.error_code, body.api_keys) == (9, 42, [])
            client.close()

    run(main())


def test_confluent_kafka_completes_the_handshake():
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient

    async def main():
        async with serving() as server:
            admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{server.port()}",
                                 "log_level": 0, "logger": _silent_logger()})

            def list_topics():
                with pytest.raises(confluent_kafka.KafkaException) as info:
                    admin.list_topics(timeout=2)
                return info.value.args[0].code()

            code = await asyncio.to_thread(list_topics)
            assert server.api_requests[18] >= 1
            assert server.stats["responses_sent"] >= 1
            # librdkafka parsed our table, reached state UP and saw that Metadata is not served yet.
            assert code == confluent_kafka.KafkaError._UNSUPPORTED_FEATURE
            assert server.stats["invalid_request"] == server.stats["api_not_served"] == 0

    run(main())


def _silent_logger():
    import logging
    logger = logging.getLogger("confluent-kafka-test")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger
