"""Malformed input raises one clear protocol exception: never IndexError, struct.error or a hang."""

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.protocol import header
from odradek.protocol.errors import (
    KafkaError,
    ProtocolError,
    UnknownApiKeyError,
    UnsupportedApiVersionError,
    UnsupportedVersionError,
)
from odradek.protocol.messages import ALL_MESSAGES, REQUESTS, MetadataRequest, ProduceRequest

from .samples import all_versions, sample

CASES = all_versions(ALL_MESSAGES)


@pytest.mark.parametrize("message,version", CASES, ids=[f"{m.name}-v{v}" for m, v in CASES])
def test_every_truncation_is_a_protocol_error(message, version):
    encoded = message.encode(sample(message, version, seed=7), version)
    for cut in range(len(encoded)):
        with pytest.raises(ProtocolError):
            message.decode(encoded[:cut], version)


def test_negative_array_length_in_non_nullable_array():
    # MetadataResponse v0: brokers array of int32 length; -5 is garbage
    from odradek.protocol.messages import METADATA_RESPONSE
    with pytest.raises(ProtocolError, match="brokers"):
        METADATA_RESPONSE.decode(struct.pack(">i", -5), 0)


def test_null_array_where_version_forbids_null():
    # MetadataRequest v0: topics is not nullable (v1+ is); -1 must be refused
    with pytest.raises(ProtocolError, match="non-nullable topics"):
        MetadataRequest.decode(struct.pack(">i", -1), 0)
    assert MetadataRequest.decode(struct.pack(">i", -1), 1).topics is None


def test_array_count_larger_than_frame():
    with pytest.raises(ProtocolError, match="more than the frame holds"):
        MetadataRequest.decode(struct.pack(">i", 1_000_000_000), 0)


def test_string_longer_than_frame():
    with pytest.raises(ProtocolError, match="past the end"):
        MetadataRequest.decode(struct.pack(">ih", 1, 500) + b"abc", 0)


def test_invalid_utf8_string():
    with pytest.raises(ProtocolError, match="malformed body"):
        MetadataRequest.decode(struct.pack(">ih", 1, 2) + b"\xff\xfe", 0)


def test_overlong_varint():
    # v9 is flexible: the topics count is an unsigned varint; six continuation bytes is garbage
    with pytest.raises(ProtocolError):
        MetadataRequest.decode(b"\xff\xff\xff\xff\xff\xff\x01", 9)


def test_unknown_api_key_carries_correlation_id():
    frame = struct.pack(">hhih", 999, 0, 1234, -1)
    with pytest.raises(UnknownApiKeyError) as caught:
        header.decode_request(frame)
    assert caught.value.api_key == 999 and caught.value.correlation_id == 1234
    assert isinstance(caught.value, ProtocolError)


def test_unsupported_version_carries_correlation_id():
    frame = struct.pack(">hhih", 0, 42, 77, -1)
    with pytest.raises(UnsupportedApiVersionError) as caught:
        header.decode_request(frame)
    assert caught.value.code == 35 and caught.value.correlation_id == 77
    assert isinstance(caught.value, UnsupportedVersionError)


def test_newer_api_versions_request_header_is_still_read():
    # kafka-python opens with ApiVersions v4 (flexible, header v2); the broker must read the
    # correlation id to answer with error 35.
    frame = struct.pack(">hhih", 18, 4, 5, 3) + b"kp!" + b"\x00" + b"\x02x\x02y\x00"
    with pytest.raises(UnsupportedApiVersionError) as caught:
        header.decode_request(frame)
    assert caught.value.correlation_id == 5


def test_encoding_a_field_the_version_lacks_is_refused():
    request = ProduceRequest(transactional_id="tx", acks=1, timeout_ms=1, topic_data=[])
    with pytest.raises(UnsupportedVersionError, match="transactional_id"):
        request.encode(2)
    assert ProduceRequest.decode(request.encode(3), 3) == request


def test_null_in_non_nullable_field_is_refused_on_encode():
    with pytest.raises(UnsupportedVersionError, match="not nullable"):
        ProduceRequest(acks=1, timeout_ms=1, topic_data=[ProduceRequest.TopicProduceData(name=None)]).encode(3)


def _valid_request_frames():
    frames = []
    for api_key, message in sorted(REQUESTS.items()):
        for version in (message.min_version, message.max_version):
            body = sample(message, version, seed=api_key)
            frames.append(header.encode_request(body, version, 99, "fuzz", framed=False))
    return frames


VALID_FRAMES = _valid_request_frames()


def _decode_or_protocol_error(frame):
    try:
        header.decode_request(frame)
    except ProtocolError:
        pass
    except KafkaError as exc:  # pragma: no cover - would be a wrong exception type
        raise AssertionError(f"unexpected {exc!r}") from exc


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_random_frames_decode_or_raise_protocol_error(frame):
    _decode_or_protocol_error(frame)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(VALID_FRAMES) - 1), st.binary(max_size=80))
def test_valid_header_with_random_body(index, garbage):
    # A real header (every api key, both ends of its range) followed by garbage.
    _decode_or_protocol_error(VALID_FRAMES[index][:14] + garbage)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(VALID_FRAMES) - 1),
       st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
       st.integers(0, 10_000))
def test_mutated_frames_decode_or_raise_protocol_error(index, flips, cut):
    frame = bytearray(VALID_FRAMES[index])
    for position, value in flips:
        frame[position % len(frame)] = value
    _decode_or_protocol_error(bytes(frame[: max(8, len(frame) - cut % 8)]))
