"""KafkaApis without sockets: dispatch, the one error path, ApiVersions' table and its error answers."""

from __future__ import annotations

import asyncio

from odradek.broker.kafka_apis import KafkaApis, generic_error_response, set_error_codes
from odradek.broker.network.request_channel import Request, Response
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.errors import NotCoordinatorError, UnknownServerError
from odradek.protocol.header import RequestHeader, decode_response
from odradek.protocol.messages import (
    ApiVersionsRequest,
    HeartbeatRequest,
    HeartbeatResponse,
    ProduceRequest,
    ProduceResponse,
)

from .network.helpers import switchboard


class FakeConnection:
    id = "test-connection"
    listener = "PLAINTEXT"


def request(api_key: int, version: int, body, correlation_id: int = 7, unsupported: bool = False) -> Request:
    return Request(RequestHeader(api_key, version, correlation_id, "c"), body, FakeConnection(),
                   unsupported_version=unsupported)


def handle(apis: KafkaApis, req: Request) -> Response:
    return asyncio.run(apis.handle(req))


def decoded(response: Response, api_key: int, version: int):
    assert response.kind == Response.SEND
    data = b"".join(bytes(p) for p in response.parts)
    return decode_response(data[4:], api_key, version)


def heartbeat(version: int = 3, correlation_id: int = 7) -> Request:
    return request(ApiKey.HEARTBEAT, version, HeartbeatRequest(group_id="g", member_id="m"), correlation_id)


def test_sync_and_async_handlers_are_encoded_at_the_request_version():
    apis = switchboard()

    async def async_handler(req):
        await asyncio.sleep(0)
        return HeartbeatResponse(error_code=0, throttle_time_ms=5)

    for handler in (lambda req: HeartbeatResponse(error_code=0, throttle_time_ms=5), async_handler):
        apis.register(ApiKey.HEARTBEAT, handler)
        for version in (0, 4):
            cid, body = decoded(handle(apis, heartbeat(version, 11)), 12, version)
            assert cid == 11
            assert body.throttle_time_ms == (5 if version else 0)


def test_none_and_responses_pass_through():
    apis = switchboard()
    apis.register(ApiKey.HEARTBEAT, lambda req: None)
    assert handle(apis, heartbeat()).kind == Response.NOOP
    apis.register(ApiKey.HEARTBEAT, lambda req: Response.close(req, "because"))
    response = handle(apis, heartbeat())
    assert (response.kind, response.reason) == (Response.CLOSE, "because")


def test_kafka_errors_keep_their_code_and_others_become_unknown_server_error():
    apis = switchboard()

    def failing(req):
        raise (NotCoordinatorError() if req.correlation_id == 1 else KeyError("oops"))

    apis.register(ApiKey.HEARTBEAT, failing)
    assert decoded(handle(apis, heartbeat(correlation_id=1)), 12, 3)[1].error_code == NotCoordinatorError.code
    assert decoded(handle(apis, heartbeat(correlation_id=2)), 12, 3)[1].error_code == UnknownServerError.code
    assert apis.errors == 2


def test_a_registered_error_builder_shapes_the_error_response():
    apis = switchboard()

    def produce(req):
        raise NotCoordinatorError()

    def produce_error(req, code):
        topics = [ProduceResponse.TopicProduceResponse(
            name=t.name, partition_responses=[
                ProduceResponse.TopicProduceResponse.PartitionProduceResponse(index=p.index)
                for p in t.partition_data])
            for t in req.body.topic_data]
        return set_error_codes(ProduceResponse(responses=topics), code)

    apis.register(ApiKey.PRODUCE, produce, produce_error)
    body = ProduceRequest(acks=1, timeout_ms=100, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.TopicProduceData.PartitionProduceData(index=i) for i in (0, 3)])])
    _, response = decoded(handle(apis, request(ApiKey.PRODUCE, 8, body)), 0, 8)
    assert [(t.name, [(p.index, p.error_code) for p in t.partition_responses]) for t in response.responses] == [
        ("t", [(0, NotCoordinatorError.code), (3, NotCoordinatorError.code)])]


def test_acks_0_never_answers_and_closes_on_error():
    apis = switchboard()
    apis.register(ApiKey.PRODUCE, lambda req: ProduceResponse(responses=[]))
    acks0 = request(ApiKey.PRODUCE, 8, ProduceRequest(acks=0, timeout_ms=100))
    assert not acks0.expects_response
    assert handle(apis, acks0).kind == Response.NOOP

    def failing(req):
        raise NotCoordinatorError()

    apis.register(ApiKey.PRODUCE, failing)
    assert handle(apis, acks0).kind == Response.CLOSE
    acks1 = request(ApiKey.PRODUCE, 8, ProduceRequest(acks=1, timeout_ms=100))
    assert handle(apis, acks1).kind == Response.SEND


def test_an_error_builder_that_fails_closes_the_connection():
    apis = switchboard()

    def failing(req):
        raise NotCoordinatorError()

    def bad_builder(req, code):
        raise RuntimeError("cannot")

    apis.register(ApiKey.HEARTBEAT, failing, bad_builder)
    assert handle(apis, heartbeat()).kind == Response.CLOSE


def test_an_unencodable_answer_goes_through_the_error_path():
    apis = switchboard()
    apis.register(ApiKey.HEARTBEAT, lambda req: HeartbeatResponse(error_code=70_000))
    assert decoded(handle(apis, heartbeat()), 12, 3)[1].error_code == UnknownServerError.code


def test_set_error_codes_walks_nested_structs():
    body = ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(
        name="t", partition_responses=[ProduceResponse.TopicProduceResponse.PartitionProduceResponse(index=1)])])
    set_error_codes(body, 6)
    assert body.responses[0].partition_responses[0].error_code == 6
    assert generic_error_response(heartbeat(), 15).error_code == 15


def test_api_versions_table_is_the_served_keys_with_kafka_2_8_ranges():
    apis = switchboard()
    req = request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="x", client_software_version="1"))
    _, body = decoded(handle(apis, req), 18, 3)
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 3)]
    apis.register(ApiKey.FETCH, lambda req: None)
    apis.register(ApiKey.PRODUCE, lambda req: None)
    _, body = decoded(handle(apis, req), 18, 3)
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(0, 0, 9), (1, 0, 12), (18, 0, 3)]


def test_unsupported_api_versions_is_answered_with_a_v0_body():
    apis = switchboard()
    apis.register(ApiKey.FETCH, lambda req: None)
    req = request(ApiKey.API_VERSIONS, 7, None, correlation_id=3, unsupported=True)
    response = handle(apis, req)
    data = b"".join(bytes(p) for p in response.parts)
    # size, correlation id (header v0), error 35, one entry: ApiVersions 0..3; no throttle time.
    assert data == bytes.fromhex("00000010" "00000003" "0023" "00000001" "0012" "0000" "0003")
