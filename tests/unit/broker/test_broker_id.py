"""broker/broker_id.py: Kafka 2.8's getOrGenerateBrokerId and the meta.properties checks, on real files."""

from __future__ import annotations

import pytest

from odradek.broker.broker_id import (
    InconsistentBrokerIdError, InconsistentClusterIdError, StoredBrokerMetadata, UnsupportedMetaPropertiesError,
    check_cluster_id, get_or_generate_broker_id, read_stored_metadata,
)
from odradek.broker.log.log_manager import InconsistentBrokerMetadataError, write_meta_properties


def never() -> int:
    raise AssertionError("no id should be generated")


def test_no_meta_properties_reads_as_nothing_stored(tmp_path):
    assert read_stored_metadata([str(tmp_path / "a"), str(tmp_path / "b")]) == StoredBrokerMetadata()


def test_agreeing_dirs_give_their_id_and_cluster(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        write_meta_properties(str(tmp_path / d), 1005, "c1")
    (tmp_path / "c").mkdir()  # a new, empty dir is fine
    stored = read_stored_metadata([str(tmp_path / d) for d in "abc"])
    assert (stored.broker_id, stored.cluster_id, len(stored.files)) == (1005, "c1", 2)


def test_disagreeing_dirs_are_refused(tmp_path):
    for d, cluster in (("a", "c1"), ("b", "c2")):
        (tmp_path / d).mkdir()
        write_meta_properties(str(tmp_path / d), 3, cluster)
    with pytest.raises(InconsistentBrokerMetadataError, match="not consistent across log.dirs.*cluster.id=c2"):
        read_stored_metadata([str(tmp_path / "a"), str(tmp_path / "b")])


def test_an_unknown_version_is_refused(tmp_path):
    (tmp_path / "meta.properties").write_text("version=1\nnode.id=3\n")
    with pytest.raises(UnsupportedMetaPropertiesError, match="version '1'"):
        read_stored_metadata([str(tmp_path)])


def test_get_or_generate_follows_kafka():
    stored = StoredBrokerMetadata(1001, "c1", ("/x/meta.properties",))
    assert get_or_generate_broker_id(-1, True, stored, never) == 1001
    assert get_or_generate_broker_id(1001, True, stored, never) == 1001
    with pytest.raises(InconsistentBrokerIdError, match="Configured broker.id 4 doesn't match stored broker.id 1001"):
        get_or_generate_broker_id(4, True, stored, never)
    assert get_or_generate_broker_id(-1, True, StoredBrokerMetadata(), lambda: 1007) == 1007
    assert get_or_generate_broker_id(4, True, StoredBrokerMetadata(), never) == 4


def test_cluster_id_check():
    check_cluster_id(StoredBrokerMetadata(1, None), "c1")
    check_cluster_id(StoredBrokerMetadata(1, "c1"), "c1")
    with pytest.raises(InconsistentClusterIdError, match="The Cluster ID c2 doesn't match stored clusterId c1"):
        check_cluster_id(StoredBrokerMetadata(1, "c1", ("/x/meta.properties",)), "c2")
