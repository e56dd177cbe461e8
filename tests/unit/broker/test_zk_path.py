"""ZooKeeper's path rule, which decides where Kafka 2.8 fails a request naming "" (CreatePartitions, OffsetFetch v0)."""

from odradek.broker.zk_path import is_valid_path


def test_paths_zookeeper_accepts_and_refuses():
    assert is_valid_path("/brokers/topics/orders") and is_valid_path("/consumers/a/b/offsets/t/0")
    assert is_valid_path("/")
    for bad in ("/brokers/topics/", "/consumers//offsets/t/0", "/brokers/topics/.", "/brokers/topics/..",
                "/a/./b", "relative", "/bad\u0000name", "/bad\ufff5name"):
        assert not is_valid_path(bad), bad
