"""Request/response headers: versions per API, the two historical quirks, whole frames."""

import struct

import pytest

from odradek.protocol import header
from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS, ApiKey, request_header_version, response_header_version
from odradek.protocol.messages import (
    REQUESTS,
    RESPONSES,
    ApiVersionsResponse,
    ControlledShutdownRequest,
    MetadataRequest,
)

from .samples import sample


def test_advertised_ranges_match_what_the_codec_speaks():
    assert set(KAFKA_2_8_VERSIONS) == set(REQUESTS) == set(RESPONSES)
    for key, (lo, hi) in KAFKA_2_8_VERSIONS.items():
        assert lo == 0
        for message in (REQUESTS[key], RESPONSES[key]):
            assert (message.min_version, message.max_version) == (0, hi), message


def test_header_versions():
    assert request_header_version(ApiKey.METADATA, 8) == 1
    assert request_header_version(ApiKey.METADATA, 9) == 2
    assert request_header_version(ApiKey.CONTROLLED_SHUTDOWN, 0) == 0
    assert request_header_version(ApiKey.CONTROLLED_SHUTDOWN, 1) == 1
    assert request_header_version(ApiKey.API_VERSIONS, 4) == 2  # newer than ours, still flexible
    assert response_header_version(ApiKey.METADATA, 9) == 1
    assert response_header_version(ApiKey.API_VERSIONS, 3) == 0


@pytest.mark.parametrize("api_key", sorted(REQUESTS))
def test_request_frames_round_trip(api_key):
    message = REQUESTS[api_key]
    for version in range(message.min_version, message.max_version + 1):
        body = sample(message, version, seed=1)
        frame = header.encode_request(body, version, correlation_id=41, client_id="odradek-test")
        (length,) = struct.unpack_from(">i", frame)
        assert length == len(frame) - 4
        decoded_header, decoded_body = header.decode_request(frame[4:])
        assert (decoded_header.api_key, decoded_header.api_version, decoded_header.correlation_id) == (
            api_key, version, 41)
        expected_client = None if request_header_version(api_key, version) == 0 else "odradek-test"
        assert decoded_header.client_id == expected_client
        assert decoded_body == body


@pytest.mark.parametrize("api_key", sorted(RESPONSES))
def test_response_frames_round_trip(api_key):
    message = RESPONSES[api_key]
    for version in range(message.min_version, message.max_version + 1):
        body = sample(message, version, seed=2)
        frame = header.encode_response(body, version, correlation_id=-7)
        correlation_id, decoded = header.decode_response(frame[4:], api_key, version)
        assert correlation_id == -7 and decoded == body


def test_controlled_shutdown_v0_has_no_client_id():
    frame = header.encode_request(ControlledShutdownRequest(broker_id=3), 0, 9, "ignored", framed=False)
    assert frame == struct.pack(">hhii", 7, 0, 9, 3)


def test_api_versions_response_header_is_v0_even_when_flexible():
    body = ApiVersionsResponse(error_code=0, api_keys=[ApiVersionsResponse.ApiVersion(api_key=0, min_version=0, max_version=9)])
    frame = header.encode_response(body, 3, correlation_id=5)
    # length, correlation id, then straight into the body: error_code int16 (no tag byte between)
    assert frame[4:8] == struct.pack(">i", 5) and frame[8:10] == b"\x00\x00"


def test_null_client_id_and_tagged_header_fields():
    # header: null client id, one tagged field (tag 5, "hi"); body: empty topics, three bools, no tags
    frame = struct.pack(">hhih", 3, 9, 1, -1) + b"\x01\x05\x02hi" + b"\x01\x01\x00\x01\x00"
    decoded_header, body = header.decode_request(frame)
    assert decoded_header.client_id is None
    assert decoded_header.unknown_tagged_fields == {5: b"hi"}
    assert body == MetadataRequest(topics=[], allow_auto_topic_creation=True,
                                   include_cluster_authorized_operations=False,
                                   include_topic_authorized_operations=True)


def test_advertised_versions_can_be_limited_to_what_a_broker_serves():
    from odradek.protocol.api_keys import advertised_versions

    served = {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.API_VERSIONS}
    assert advertised_versions(served) == {0: (0, 9), 1: (0, 12), 18: (0, 3)}
    assert advertised_versions() == KAFKA_2_8_VERSIONS
