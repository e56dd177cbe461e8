"""__consumer_offsets record formats, group placement and protocol selection (no broker)."""

from __future__ import annotations

import pytest

from odradek.broker.coordinator.group import records as fmt
from odradek.broker.coordinator.group.group_metadata import (COMPLETING_REBALANCE, EMPTY, PREPARING_REBALANCE,
                                                             GroupMetadata, MemberMetadata)
from odradek.broker.coordinator.group.metadata_manager import java_string_hash


def test_offset_key_is_kafkas_v1_layout():
    # int16 version 1, int16-length group, int16-length topic, int32 partition
    assert fmt.offset_key("g", "t", 3) == bytes.fromhex("0001" "0001" "67" "0001" "74" "00000003")
    assert fmt.parse_key(fmt.offset_key("grp", "topic", 7)) == ("offset", "grp", ("topic", 7))
    assert fmt.parse_key(fmt.group_key("grp")) == ("group", "grp", None)


def test_offset_value_v3_round_trips_metadata_and_leader_epoch():
    value = fmt.offset_value(fmt.OffsetAndMetadata(5, 9, "meta", 123))
    assert value[:2] == b"\x00\x03"
    assert fmt.parse_offset_value(value) == fmt.OffsetAndMetadata(5, 9, "meta", 123)


def test_offset_value_with_retention_is_v1_and_older_versions_read():
    value = fmt.offset_value(fmt.OffsetAndMetadata(5, -1, "", 100, expire_timestamp=200))
    assert value[:2] == b"\x00\x01"
    assert fmt.parse_offset_value(value).expire_timestamp == 200
    v0 = bytes.fromhex("0000" "0000000000000010" "0002" "6869" "0000000000000020")
    assert fmt.parse_offset_value(v0) == fmt.OffsetAndMetadata(16, -1, "hi", 32)


def test_group_value_v3_round_trips_members():
    record = fmt.GroupRecord("consumer", 2, "range", "m1", 99, [
        fmt.MemberRecord("m1", "i1", "c", "/127.0.0.1", 100, 200, b"sub", b"asg"),
        fmt.MemberRecord("m2", None, "c", "/127.0.0.1", 100, 200, b"", b"")])
    data = fmt.group_value(record)
    assert data[:2] == b"\x00\x03"
    assert fmt.parse_group_value(data) == record


def test_unknown_versions_are_bad_records():
    with pytest.raises(fmt.BadRecord):
        fmt.parse_key(b"\x00\x09\x00\x01g")
    with pytest.raises(fmt.BadRecord):
        fmt.parse_offset_value(b"\x00\x07")


def test_java_string_hash_matches_java():
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("") == 0
    assert java_string_hash("my-group") == -1906497762  # negative: Kafka masks the sign bit


def _member(member_id: str, *protocols: str) -> MemberMetadata:
    return MemberMetadata(member_id, None, "c", "/h", 1000, 1000, "consumer", [(p, b"") for p in protocols])


def test_mixed_client_group_lands_on_roundrobin():
    group = GroupMetadata("g")
    group.add(_member("kp", "range", "roundrobin"))
    group.add(_member("ck", "range", "roundrobin"))
    assert group.supports_protocols("consumer", ["roundrobin"])  # aiokafka's only assignor
    group.add(_member("aio", "roundrobin"))
    assert group.select_protocol() == "roundrobin"
    assert not group.supports_protocols("consumer", ["sticky"])
    assert not group.supports_protocols("connect", ["roundrobin"])


def test_votes_follow_each_members_first_choice():
    group = GroupMetadata("g")
    for name in ("a", "b"):
        group.add(_member(name, "range", "roundrobin"))
    group.add(_member("c", "roundrobin", "range"))
    assert group.select_protocol() == "range"


def test_generation_moves_and_leader_follows_removal():
    group = GroupMetadata("g")
    group.add(_member("a", "range"))
    group.add(_member("b", "range"))
    assert group.leader_id == "a"
    group.transition_to(PREPARING_REBALANCE, 1)
    group.init_next_generation(2)
    assert (group.state, group.generation_id, group.protocol_name) == (COMPLETING_REBALANCE, 1, "range")
    group.remove("a")
    assert group.leader_id == "b"
    with pytest.raises(RuntimeError):
        group.transition_to(EMPTY, 3)  # CompletingRebalance cannot go straight to Empty
