"""Our codec against kafka-python 3.0.12's, message by message and version by version.

For every (message, version) of ours that kafka-python also has (it lacks the ZooKeeper-era
inter-broker APIs LeaderAndIsr, StopReplica, UpdateMetadata and ControlledShutdown):

- ours -> kafka-python: random samples encoded by us decode in kafka-python to the same values;
- kafka-python -> ours: the same values built as kafka-python objects and encoded by kafka-python
  decode with us to the original sample, and our re-encoding is byte-identical;
- whole frames: request headers v1/v2 and response headers v0/v1 (ApiVersions always v0) are
  byte-identical to kafka-python's ``with_header`` + ``encode(header=True, framed=True)``;
  request header v0 (ControlledShutdown v0) is read with kafka-python's header schema at version 0;
- kafka-python sends null in every field its schema makes nullable, and we read it back
  (random samples only use nulls where *we* allow them); the declarations are compared field by
  field (presence, type, nullability, tags, tagged defaults); long lengths (multi-byte varints);
- unknown tagged fields we write are skipped (and kept) by kafka-python's decoder;
- where ``kafka.protocol.old`` has a hand-written Struct class for the version (an independent
  declaration, written before the JSON schemas), our bytes decode there, are consumed exactly, give
  the same values in wire order, and re-encode to the same bytes.

kafka-python's schemas are Kafka 4.x's, which dropped some old versions from ``validVersions`` but
kept the old fields' declarations; its ApiMessage pretends every message starts at version 0.
The old-version cases below therefore test that claim too; ``test_kp_old_versions_are_covered``
records which of our versions lie below kafka-python's JSON minimum.
"""

from __future__ import annotations

import io

import pytest

from odradek.protocol import header
from odradek.protocol.api_keys import ApiKey, request_header_version, response_header_version
from odradek.protocol.messages import (
    ALL_MESSAGES,
    API_VERSIONS_RESPONSE,
    CONTROLLED_SHUTDOWN_REQUEST,
    METADATA_RESPONSE,
    PRODUCE_REQUEST,
)

from kafka.protocol.api_header import RequestHeader as KpRequestHeader
from kafka.protocol.api_header import ResponseHeader as KpResponseHeader
from kafka.protocol.metadata import ApiVersionsResponse as KpApiVersionsResponse
from kafka.protocol.old import api as kp_old_api

from ..unit.protocol.samples import all_versions, sample
from .kafka_python_bridge import (
    KP_MESSAGES,
    build_kp,
    flatten_old,
    flatten_ours,
    declaration_differences,
    kp_class,
    kp_encode,
    kp_json_min_version,
    null_everything_nullable,
    old_class,
    old_decode,
    plain_kp,
    plain_ours,
)

SEEDS = range(6)

# Messages kafka-python 3.0.12 does not declare at all (neither in kafka.protocol nor in
# kafka.protocol.old): the ZooKeeper-mode inter-broker APIs, removed from Kafka 4.
KP_MISSING = frozenset((
    "LeaderAndIsrRequest", "LeaderAndIsrResponse", "StopReplicaRequest", "StopReplicaResponse",
    "UpdateMetadataRequest", "UpdateMetadataResponse",
    "ControlledShutdownRequest", "ControlledShutdownResponse", "AlterIsrRequest", "AlterIsrResponse",
))

# Known disagreements, (message name, version) -> reason; the affected cases are strict xfails.
# None so far: every difference found was a representation difference handled by the bridge.
KNOWN_BUGS: dict[tuple[str, int], str] = {}


def _cases(kind: str | None = None):
    cases = []
    for message, version in all_versions(ALL_MESSAGES):
        if kind is not None and message.kind != kind:
            continue
        kp = kp_class(message)
        if kp is None or version > kp.max_version:
            continue
        marks = ()
        reason = KNOWN_BUGS.get((message.name, version))
        if reason is not None:
            marks = (pytest.mark.xfail(reason=reason, strict=True),)
        cases.append(pytest.param(message, version, id=f"{message.name}-v{version}", marks=marks))
    return cases


CASES = _cases()
REQUEST_CASES = _cases("request")
RESPONSE_CASES = _cases("response")


def _sample(message, version, seed):
    obj = sample(message, version, seed)
    if message is API_VERSIONS_RESPONSE:
        # kafka-python decodes any ApiVersionsResponse whose error_code is not 0 as version 0
        # (what a broker sends back for an unsupported version); see test_api_versions_error_fallback.
        obj.error_code = 0
    return obj


# --- coverage bookkeeping -----------------------------------------------------------------------

def test_kafka_python_coverage():
    ours = {m.name for m in ALL_MESSAGES}
    missing = {name for name in ours if name not in KP_MESSAGES}
    assert missing == KP_MISSING
    for message in ALL_MESSAGES:
        kp = kp_class(message)
        if kp is not None:
            assert kp.API_KEY == message.api_key
            assert kp.max_version >= message.max_version, message.name
            assert kp.type == message.kind
            flexible = [v for v in range(message.min_version, message.max_version + 1)
                        if kp.flexible_version_q(v)]
            assert flexible == [v for v in range(message.min_version, message.max_version + 1)
                                if message.is_flexible(v)], message.name
    # The cases run here: every version of every message kafka-python has.
    assert len(CASES) == sum(m.max_version - m.min_version + 1 for m in ALL_MESSAGES
                             if m.name not in KP_MISSING)


def test_kp_old_versions_are_covered():
    """kafka-python's JSON starts above 0 for these; its forced min version 0 is exercised by the
    body tests, and all but WriteTxnMarkers v0 and AlterReplicaLogDirs v0 are also checked against the
    hand-written Struct classes of ``kafka.protocol.old`` (test_kafka_python_old_structs)."""
    below = {m.name: kp_json_min_version(kp_class(m)) for m in ALL_MESSAGES
             if kp_class(m) is not None and kp_json_min_version(kp_class(m)) > 0}
    assert below == {
        "ProduceRequest": 3, "ProduceResponse": 3, "FetchRequest": 4, "FetchResponse": 4,
        "ListOffsetsRequest": 1, "ListOffsetsResponse": 1,
        "OffsetForLeaderEpochRequest": 2, "OffsetForLeaderEpochResponse": 2,
        "WriteTxnMarkersRequest": 1, "WriteTxnMarkersResponse": 1,
        "OffsetCommitRequest": 2, "OffsetCommitResponse": 2,
        "OffsetFetchRequest": 1, "OffsetFetchResponse": 1,
        "CreateTopicsRequest": 2, "CreateTopicsResponse": 2,
        "DeleteTopicsRequest": 1, "DeleteTopicsResponse": 1,
        "DescribeLogDirsRequest": 1, "DescribeLogDirsResponse": 1,
        "AlterReplicaLogDirsRequest": 1, "AlterReplicaLogDirsResponse": 1,
        "DescribeConfigsRequest": 1, "DescribeConfigsResponse": 1,
        "DescribeAclsRequest": 1, "DescribeAclsResponse": 1, "CreateAclsRequest": 1, "CreateAclsResponse": 1,
        "DeleteAclsRequest": 1, "DeleteAclsResponse": 1,
    }
    by_name = {m.name: m for m in ALL_MESSAGES}
    unchecked = {(name, v) for name, lo in below.items() for v in range(lo)
                 if old_class(by_name[name], v) is None}
    assert unchecked == {("WriteTxnMarkersRequest", 0), ("WriteTxnMarkersResponse", 0),
                         ("AlterReplicaLogDirsRequest", 0), ("AlterReplicaLogDirsResponse", 0)}


# --- bodies -------------------------------------------------------------------------------------

@pytest.mark.parametrize("message,version", CASES)
def test_ours_to_kafka_python(message, version):
    kp = kp_class(message)
    for seed in SEEDS:
        original = _sample(message, version, seed)
        encoded = message.encode(original, version)
        decoded = kp.decode(encoded, version=version)
        assert plain_kp(decoded, message, version) == plain_ours(original, message.fields, version)


@pytest.mark.parametrize("message,version", CASES)
def test_kafka_python_to_ours(message, version):
    kp = kp_class(message)
    for seed in SEEDS:
        original = _sample(message, version, seed)
        kobj = build_kp(kp, message, plain_ours(original, message.fields, version), version)
        kp_bytes = kp_encode(kobj, version)
        decoded = message.decode(kp_bytes, version)
        assert decoded == original
        assert message.encode(decoded, version) == kp_bytes


@pytest.mark.parametrize("message,version", CASES)
def test_nulls_where_kafka_python_allows_them(message, version):
    """Random samples only make fields null where *we* say they are nullable; here kafka-python
    sends null in every (untagged) field its schema makes nullable, and we must read it back."""
    kp = kp_class(message)
    for seed in SEEDS[:2]:
        plain = null_everything_nullable(message, plain_ours(_sample(message, version, seed),
                                                             message.fields, version), kp, version)
        kp_bytes = kp_encode(build_kp(kp, message, plain, version), version)
        decoded = message.decode(kp_bytes, version)
        assert plain_ours(decoded, message.fields, version) == plain
        assert message.encode(decoded, version) == kp_bytes


# Declaration differences from kafka-python's JSON that cannot reach the wire need no entry:
# defaults of untagged fields, struct type names (CreateableTopicConfig vs CreatableTopicConfig).
KNOWN_DECLARATION_DIFFERENCES: dict[tuple[str, int], list[str]] = {}


@pytest.mark.parametrize("message,version", CASES)
def test_declarations_match_kafka_python(message, version):
    """Field by field: presence, type, nullability, tags, tagged defaults (what sampling cannot see,
    e.g. a field we declare non-nullable that Kafka lets be null)."""
    expected = KNOWN_DECLARATION_DIFFERENCES.get((message.name, version), [])
    assert declaration_differences(message, kp_class(message), version) == expected


def _large_api_versions(version):
    cls = API_VERSIONS_RESPONSE.cls
    message = cls(error_code=0, api_keys=[cls.ApiVersion(api_key=k, min_version=0, max_version=k) for k in range(200)],
                  throttle_time_ms=7)
    if version >= 3:  # the feature fields are not ignorable (as in Kafka 2.8): only v3 may carry them
        message.supported_features = [cls.SupportedFeatureKey(name="feature-" + "x" * 50 + str(i), min_version=1,
                                                              max_version=i) for i in range(40)]
        message.finalized_features_epoch = 1 << 40
        message.finalized_features = [cls.FinalizedFeatureKey(name="f" * 300, max_version_level=2, min_version_level=1)]
    return message


def _large_metadata():
    cls = METADATA_RESPONSE.cls
    partition = cls.MetadataResponsePartition
    return cls(throttle_time_ms=1, brokers=[cls.MetadataResponseBroker(node_id=i, host="h" * 200, port=9092, rack=None)
                                            for i in range(130)],
               cluster_id="c" * 20000, controller_id=3,
               topics=[cls.MetadataResponseTopic(
                   error_code=0, name="topic-" + "ü" * 100, is_internal=False, topic_authorized_operations=-1,
                   partitions=[partition(partition_index=p, leader_id=1, leader_epoch=2, replica_nodes=list(range(300)),
                                         isr_nodes=[1, 2], offline_replicas=[]) for p in range(3)])])


def _large_produce():
    cls = PRODUCE_REQUEST.cls
    return cls(transactional_id="t" * 127, acks=-1, timeout_ms=30000, topic_data=[cls.TopicProduceData(
        name="n" * 128, partition_data=[cls.PartitionProduceData(index=0, records=bytes(range(256)) * 80),
                                        cls.PartitionProduceData(index=1, records=None)])])


LARGE = [
    pytest.param(API_VERSIONS_RESPONSE, 3, lambda: _large_api_versions(3), id="ApiVersionsResponse-v3"),
    pytest.param(API_VERSIONS_RESPONSE, 2, lambda: _large_api_versions(2), id="ApiVersionsResponse-v2"),
    pytest.param(METADATA_RESPONSE, 9, _large_metadata, id="MetadataResponse-v9"),
    pytest.param(METADATA_RESPONSE, 8, _large_metadata, id="MetadataResponse-v8"),
    pytest.param(PRODUCE_REQUEST, 9, _large_produce, id="ProduceRequest-v9"),
    pytest.param(PRODUCE_REQUEST, 8, _large_produce, id="ProduceRequest-v8"),
]


@pytest.mark.parametrize("message,version,make", LARGE)
def test_large_lengths(message, version, make):
    """Lengths past one varint byte (128+ elements, strings, bytes, tagged-field payloads of
    hundreds of bytes) and past 16383 (three varint bytes), both directions."""
    original = make()
    plain = plain_ours(original, message.fields, version)
    encoded = message.encode(original, version)
    assert plain_kp(kp_class(message).decode(encoded, version=version), message, version) == plain
    kp_bytes = kp_encode(build_kp(kp_class(message), message, plain, version), version)
    assert kp_bytes == encoded
    assert plain_ours(message.decode(kp_bytes, version), message.fields, version) == plain


def _add_unknown_tags(obj, fields, version, counter):
    """Give every struct of a flexible-version object an unknown tagged field (tags 100+).

    Not inside tagged struct fields: kafka-python decodes those with ``tagged=None`` and asserts
    that their own tag section is empty (a kafka-python limitation; Kafka allows it).
    """
    tag = 100 + counter[0]
    counter[0] += 1
    obj.unknown_tagged_fields = {tag: bytes([tag % 256]) * (tag % 7)}
    for f in fields:
        if f.fields is None or not f.present_in(version) or f.tagged_in(version):
            continue
        value = getattr(obj, f.name)
        for item in (value or ()) if f.is_array else ((value,) if value is not None else ()):
            _add_unknown_tags(item, f.fields, version, counter)


def _kp_unknown_tags(kobj, kp_struct, version, out):
    out.append(dict(kobj.unknown_tags or {}))
    for name, field in kp_struct.fields.items():
        if not field.for_version_q(version) or not (field.is_struct() or field.is_struct_array()):
            continue
        if field.tagged_field_q(version):
            continue
        value = getattr(kobj, name)
        element = field.array_of if field.is_struct_array() else field
        for item in (value or ()) if field.is_struct_array() else ((value,) if value is not None else ()):
            _kp_unknown_tags(item, element, version, out)
    return out


def _our_unknown_tags(obj, fields, version, out):
    out.append({f"_{tag}": payload for tag, payload in (obj.unknown_tagged_fields or {}).items()})
    for f in fields:
        if f.fields is None or not f.present_in(version) or f.tagged_in(version):
            continue
        value = getattr(obj, f.name)
        for item in (value or ()) if f.is_array else ((value,) if value is not None else ()):
            _our_unknown_tags(item, f.fields, version, out)
    return out


FLEXIBLE_CASES = [c for c in CASES if c.values[0].is_flexible(c.values[1])]


@pytest.mark.parametrize("message,version", FLEXIBLE_CASES)
def test_unknown_tagged_fields_reach_kafka_python(message, version):
    """kafka-python skips tags it does not know and keeps them as ``unknown_tags['_<tag>']``."""
    kp = kp_class(message)
    for seed in SEEDS[:2]:
        original = _sample(message, version, seed)
        _add_unknown_tags(original, message.fields, version, [0])
        encoded = message.encode(original, version)
        assert message.decode(encoded, version) == original
        decoded = kp.decode(encoded, version=version)
        assert plain_kp(decoded, message, version) == plain_ours(original, message.fields, version)
        assert (_kp_unknown_tags(decoded, kp._struct, version, [])
                == _our_unknown_tags(original, message.fields, version, []))


# --- kafka-python's hand-written Struct classes (kafka.protocol.old) ------------------------------

# Bugs in kafka-python's hand-written classes (not ours): strict xfails, so a fix shows up.
KP_OLD_BUGS = {
    ("DescribeLogDirsRequest", 0): "kafka-python bug: kafka.protocol.old.admin.DescribeLogDirsRequest_v0 "
                                   "declares topics[].partitions as Int32; Kafka has []int32",
    ("DescribeAclsRequest", 2): "kafka-python bug: kafka.protocol.old.admin.DescribeAclsRequest_v2 reuses v1's "
                                "schema; Kafka's v2 is flexible",
    ("DescribeAclsResponse", 2): "kafka-python bug: kafka.protocol.old.admin.DescribeAclsResponse_v2 reuses v1's "
                                 "schema; Kafka's v2 is flexible",
}


def _old_cases():
    cases = []
    for case in CASES:
        message, version = case.values
        if old_class(message, version) is None:
            continue
        reason = KP_OLD_BUGS.get((message.name, version))
        marks = (pytest.mark.xfail(reason=reason, strict=True),) if reason else ()
        cases.append(pytest.param(message, version, id=case.id, marks=marks))
    return cases


OLD_CASES = _old_cases()


@pytest.mark.parametrize("message,version", OLD_CASES)
def test_kafka_python_old_structs(message, version):
    old = old_class(message, version)
    assert old.API_KEY == message.api_key
    flexible = message.is_flexible(version)
    for seed in SEEDS:
        original = _sample(message, version, seed)
        encoded = message.encode(original, version)
        decoded, consumed = old_decode(old, encoded)
        assert consumed == len(encoded)
        assert flatten_old(decoded, old) == flatten_ours(original, message.fields, version, flexible)
        assert bytes(decoded.encode()) == encoded


# --- headers and whole frames -------------------------------------------------------------------

CLIENT_IDS = ("kafka-python", None, "", "clïent-Ω漢")


@pytest.mark.parametrize("message,version", REQUEST_CASES)
def test_request_frame(message, version):
    kp = kp_class(message)
    header_version = request_header_version(message.api_key, version)
    assert header_version == (2 if message.is_flexible(version) else 1)
    for seed, client_id in enumerate(CLIENT_IDS):
        correlation_id = (seed * 7919 + version) - 2
        original = _sample(message, version, seed)
        ours = header.encode_request(original, version, correlation_id, client_id)

        kobj = build_kp(kp, message, plain_ours(original, message.fields, version), version)
        kobj.with_header(correlation_id=correlation_id, client_id=client_id)
        assert kp_encode(kobj, version, header=True, framed=True) == ours

        decoded = kp.decode(ours, version=version, header=True, framed=True)
        assert (decoded.header.request_api_key, decoded.header.request_api_version,
                decoded.header.correlation_id, decoded.header.client_id) == (
            message.api_key, version, correlation_id, client_id)

        assert header.encode_request(original, version, correlation_id, client_id, framed=False) == ours[4:]
        our_header, body = header.decode_request(ours[4:])
        assert (our_header.api_key, our_header.api_version, our_header.correlation_id,
                our_header.client_id, our_header.header_version) == (
            message.api_key, version, correlation_id, client_id, header_version)
        assert body == original


@pytest.mark.parametrize("flexible", [False, True], ids=["v1", "v2"])
@pytest.mark.parametrize("client_id", CLIENT_IDS)
def test_request_header_against_kp_header_classes(flexible, client_id):
    """kafka-python's RequestHeader (JSON) and old RequestHeader/RequestHeaderV2 (Structs)."""
    message = next(m for m in ALL_MESSAGES if m.name == "HeartbeatRequest")
    version = 4 if flexible else 3
    body = _sample(message, version, 0)
    frame = header.encode_request(body, version, 12345, client_id, framed=False)

    kp_header = KpRequestHeader(request_api_key=message.api_key, request_api_version=version,
                                correlation_id=12345, client_id=client_id)
    kp_bytes = bytes(kp_header.encode(flexible=flexible))
    assert frame.startswith(kp_bytes)
    assert message.decode(frame[len(kp_bytes):], version) == body

    old_cls = kp_old_api.RequestHeaderV2 if flexible else kp_old_api.RequestHeader
    old_bytes = old_cls(api_key=message.api_key, api_version=version, correlation_id=12345,
                        client_id=client_id).encode()
    assert old_bytes == kp_bytes


def test_request_header_v0_controlled_shutdown():
    """ControlledShutdown v0 uses request header v0 (no client_id); kafka-python lacks the API,
    so the header is read with its RequestHeader schema at version 0."""
    body = CONTROLLED_SHUTDOWN_REQUEST.cls(broker_id=7)
    assert request_header_version(ApiKey.CONTROLLED_SHUTDOWN, 0) == 0
    frame = header.encode_request(body, 0, 99, "ignored", framed=False)
    assert len(frame) == 8 + 4

    buf = io.BytesIO(frame)
    # Field by field: the header data class itself refuses version 0 (its JSON starts at 1), the
    # fields' declarations (client_id "1+") do not.
    kp_header = {f.name: f.decode(buf, version=0, compact=False, tagged=False)
                 for f in KpRequestHeader._struct.untagged_fields(0)}
    assert buf.tell() == 8
    assert kp_header == {"request_api_key": ApiKey.CONTROLLED_SHUTDOWN, "request_api_version": 0,
                         "correlation_id": 99}
    assert frame[8:] == (7).to_bytes(4, "big")

    our_header, decoded = header.decode_request(frame)
    assert (our_header.api_key, our_header.api_version, our_header.correlation_id,
            our_header.client_id, our_header.header_version) == (ApiKey.CONTROLLED_SHUTDOWN, 0, 99, None, 0)
    assert decoded == body
    # v1+ of ControlledShutdown carries a client id (header v1).
    assert request_header_version(ApiKey.CONTROLLED_SHUTDOWN, 1) == 1


@pytest.mark.parametrize("message,version", RESPONSE_CASES)
def test_response_frame(message, version):
    kp = kp_class(message)
    expected = 0 if message.api_key == ApiKey.API_VERSIONS else int(message.is_flexible(version))
    assert response_header_version(message.api_key, version) == expected
    for seed in range(2):
        correlation_id = -(seed * 104729 + version)
        original = _sample(message, version, seed)
        ours = header.encode_response(original, version, correlation_id)

        kobj = build_kp(kp, message, plain_ours(original, message.fields, version), version)
        kobj.with_header(correlation_id=correlation_id)
        # No version= here: on a response, kafka-python's encode(version=...) writes the version into
        # the header object, and ResponseHeader has no request_api_version (AttributeError).
        assert kp_encode(kobj, None, header=True, framed=True) == ours
        assert b"".join(bytes(p) for p in header.encode_response_parts(original, version, correlation_id)) == ours

        decoded = kp.decode(ours, version=version, header=True, framed=True)
        assert decoded.header.correlation_id == correlation_id
        assert plain_kp(decoded, message, version) == plain_ours(original, message.fields, version)

        got_correlation, body = header.decode_response(ours[4:], message.api_key, version)
        assert got_correlation == correlation_id
        assert body == original


@pytest.mark.parametrize("flexible", [False, True], ids=["v0", "v1"])
def test_response_header_against_kp_header_classes(flexible):
    message = next(m for m in ALL_MESSAGES if m.name == "HeartbeatResponse")
    version = 4 if flexible else 3
    body = _sample(message, version, 0)
    frame = header.encode_response(body, version, -77)

    kp_bytes = bytes(KpResponseHeader(correlation_id=-77).encode(flexible=flexible))
    assert frame[4:].startswith(kp_bytes)
    old_cls = kp_old_api.ResponseHeaderV2 if flexible else kp_old_api.ResponseHeader
    assert old_cls(correlation_id=-77).encode() == kp_bytes
    assert message.decode(frame[4 + len(kp_bytes):], version) == body


@pytest.mark.parametrize("kp_version", [0, 1, 2, 3, 4])
def test_api_versions_error_fallback(kp_version):
    """A broker that does not speak the requested ApiVersions version answers error 35 with a v0
    body in header v0; kafka-python (which opens with v4) must read it at the version it sent."""
    original = API_VERSIONS_RESPONSE.cls(error_code=35, api_keys=[
        API_VERSIONS_RESPONSE.cls.ApiVersion(api_key=18, min_version=0, max_version=3),
        API_VERSIONS_RESPONSE.cls.ApiVersion(api_key=0, min_version=0, max_version=9),
    ])
    frame = header.encode_response(original, 0, 5)
    decoded = KpApiVersionsResponse.decode(frame, version=kp_version, header=True, framed=True)
    assert decoded.header.correlation_id == 5
    assert decoded.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in decoded.api_keys] == [(18, 0, 3), (0, 0, 9)]
