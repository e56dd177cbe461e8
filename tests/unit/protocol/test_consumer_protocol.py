"""ConsumerProtocolSubscription / ConsumerProtocolAssignment codecs, cross-checked with kafka-python's."""

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from odradek.protocol.consumer_protocol import (
    Assignment, Subscription, decode_assignment, decode_subscription, encode_assignment,
    encode_subscription,
)
from odradek.protocol.errors import ProtocolError


def _kp_subscription(version, topics, user_data=None, owned=None, **extra):
    tp = ConsumerProtocolSubscription.TopicPartition
    owned_list = [tp(topic=t, partitions=p) for t, p in sorted((owned or {}).items())]
    return ConsumerProtocolSubscription(topics=topics, user_data=user_data, owned_partitions=owned_list,
                                        version=version, **extra).encode()


def _kp_assignment(version, partitions, user_data=None):
    tp = ConsumerProtocolAssignment.TopicPartition
    return ConsumerProtocolAssignment(
        assigned_partitions=[tp(topic=t, partitions=p) for t, p in sorted(partitions.items())],
        user_data=user_data, version=version).encode()


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("user_data", [None, b"", b"\x00sticky\xff"])
def test_subscription_round_trip(version, user_data):
    owned = {"a": [0, 2], "b": [1]}
    data = encode_subscription(["b", "a", "c"], user_data=user_data, owned=owned, version=version)
    got = decode_subscription(data)
    assert got == Subscription(version, ["a", "b", "c"], user_data, owned if version >= 1 else {})


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("user_data", [None, b"data"])
def test_assignment_round_trip(version, user_data):
    partitions = {"x": [3, 0], "y": []}
    got = decode_assignment(encode_assignment(partitions, user_data=user_data, version=version))
    assert got == Assignment(version, partitions, user_data)


@pytest.mark.parametrize("version", [0, 1])
def test_subscription_bytes_equal_kafka_python(version):
    owned = {"t1": [0, 1]} if version >= 1 else None
    ours = encode_subscription(["t1", "t2"], user_data=b"u", owned=owned, version=version)
    assert ours == _kp_subscription(version, ["t1", "t2"], b"u", owned)
    decoded = ConsumerProtocolSubscription.decode(ours)
    assert decoded.topics == ["t1", "t2"] and decoded.user_data == b"u"


@pytest.mark.parametrize("version", [0, 1])
def test_assignment_bytes_equal_kafka_python(version):
    partitions = {"a": [0, 3], "b": [1]}
    ours = encode_assignment(partitions, version=version)
    assert ours == _kp_assignment(version, partitions)
    assert sorted((tp.topic, tp.partition) for tp in ConsumerProtocolAssignment.decode(ours).partitions()) == \
        [("a", 0), ("a", 3), ("b", 1)]


def test_newer_subscription_versions_decode_ignoring_extra_fields():
    # v3 (Kafka 3.x) adds generation_id and rack_id after owned_partitions
    data = _kp_subscription(3, ["a", "b"], b"ud", {"a": [1]}, generation_id=7, rack_id="rack-1")
    got = decode_subscription(data)
    assert got == Subscription(3, ["a", "b"], b"ud", {"a": [1]})


def test_newer_assignment_version_decodes():
    data = _kp_assignment(3, {"t": [5]}, b"x")
    assert decode_assignment(data) == Assignment(3, {"t": [5]}, b"x")
    assert decode_assignment(data + b"\x00\x00\x00\x09") == Assignment(3, {"t": [5]}, b"x")


def test_empty_assignment_bytes_are_an_empty_assignment():
    assert decode_assignment(b"") == Assignment(0, {}, None)


def test_old_writer_without_trailing_fields_gets_defaults():
    # version 0 buffer that stops right after the topics (pre-0.10 writers omitted nothing, but be lenient)
    data = encode_subscription(["a"], version=0)[:-4]
    assert decode_subscription(data) == Subscription(0, ["a"], None, {})
    data = encode_subscription(["a"], version=1)[:-4]
    assert decode_subscription(data) == Subscription(1, ["a"], None, {})


@pytest.mark.parametrize("data", [
    b"\xff\xff\x00\x00\x00\x00",            # negative version
    b"\x00\x00\x00\x00\x00\x01\x00\x05ab",  # topic name cut short
    b"\x00\x00\x7f\xff\xff\xff",            # absurd count
    b"\x00",                                # version cut short
])
def test_malformed_subscription_raises_protocol_error(data):
    with pytest.raises(ProtocolError):
        decode_subscription(data)


def test_malformed_assignment_raises_protocol_error():
    with pytest.raises(ProtocolError):
        decode_assignment(b"\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x02\x00\x00")


def test_encode_rejects_unknown_versions():
    with pytest.raises(ValueError):
        encode_subscription(["a"], version=2)
    with pytest.raises(ValueError):
        encode_assignment({}, version=-1)
