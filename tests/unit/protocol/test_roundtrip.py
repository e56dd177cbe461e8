"""Every (api_key, version) of every request and response survives encode -> decode -> encode."""

import pytest

from odradek.protocol.messages import ALL_MESSAGES

from .samples import all_versions, sample

CASES = all_versions(ALL_MESSAGES)


@pytest.mark.parametrize("message,version", CASES, ids=[f"{m.name}-v{v}" for m, v in CASES])
def test_round_trip(message, version):
    for seed in range(4):
        original = sample(message, version, seed)
        encoded = message.encode(original, version)
        decoded = message.decode(encoded, version)
        assert decoded == original
        assert message.encode(decoded, version) == encoded


def test_every_message_has_both_directions():
    keys = {}
    for m in ALL_MESSAGES:
        keys.setdefault(m.api_key, set()).add(m.kind)
    assert all(kinds == {"request", "response"} for kinds in keys.values())
    assert len(keys) == 51


def test_records_are_views_of_the_frame_not_copies():
    from odradek.protocol.messages import ProduceRequest

    records = bytes(range(256)) * 64
    request = ProduceRequest(acks=1, timeout_ms=5, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)])])
    frame = bytearray(request.encode(9))
    decoded = ProduceRequest.decode(frame, 9)
    view = decoded.topic_data[0].partition_data[0].records
    assert isinstance(view, memoryview) and view.obj is frame and view == records
    frame[-10] ^= 0xFF  # the view sees writes to the frame: it shares its memory
    assert view != records


def test_unknown_tagged_fields_survive_a_round_trip():
    from odradek.protocol.messages import FetchResponse

    response = FetchResponse(responses=[], unknown_tagged_fields={7: b"future", 30: b""})
    encoded = response.encode(12)
    decoded = FetchResponse.decode(encoded, 12)
    assert decoded.unknown_tagged_fields == {7: b"future", 30: b""}
    assert decoded.encode(12) == encoded


def test_known_tagged_field_is_sent_only_when_not_default():
    from odradek.protocol.messages import FetchResponse

    part = FetchResponse.FetchableTopicResponse.PartitionData
    plain = part(partition_index=0, records=b"")
    diverging = part(partition_index=0, records=b"",
                     diverging_epoch=part.EpochEndOffset(epoch=3, end_offset=10))
    assert len(FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[diverging])]).encode(12)) > \
        len(FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[plain])]).encode(12))
    decoded = FetchResponse.decode(FetchResponse(responses=[FetchResponse.FetchableTopicResponse(
        topic="t", partitions=[diverging])]).encode(12), 12)
    assert decoded.responses[0].partitions[0].diverging_epoch.epoch == 3
    assert FetchResponse.decode(FetchResponse(responses=[FetchResponse.FetchableTopicResponse(
        topic="t", partitions=[plain])]).encode(12), 12).responses[0].partitions[0].diverging_epoch.epoch == -1


@pytest.mark.parametrize("message,version", CASES, ids=[f"{m.name}-v{v}" for m, v in CASES])
def test_a_struct_array_given_encoded_ahead_encodes_to_the_same_bytes(message, version):
    from odradek.protocol.fields import EncodedArray

    arrays = [f for f in message.fields if f.is_array and f.fields and f.present_in(version)]
    for seed in range(2):
        original = sample(message, version, seed)
        expected = message.encode(original, version)
        for f in arrays:
            elements = getattr(original, f.name)
            if elements is None:
                continue
            encode = message.element_encoder(f.name, version)
            ahead = sample(message, version, seed)
            setattr(ahead, f.name, EncodedArray(b"".join(encode(e) for e in elements), len(elements)))
            assert message.encode(ahead, version) == expected


def test_only_a_struct_array_has_an_element_encoder():
    from odradek.protocol.messages import MetadataResponse

    with pytest.raises(ValueError, match="no struct array"):
        MetadataResponse.MESSAGE.element_encoder("cluster_id", 9)
