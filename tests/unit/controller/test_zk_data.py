"""Znode paths and Kafka's JSON documents."""

import json
import uuid

from odradek.controller import zk_data as z


def test_cluster_id_is_22_char_url_safe_and_round_trips():
    cluster_id = z.ClusterIdZNode.new_cluster_id()
    assert len(cluster_id) == 22 and "=" not in cluster_id and "/" not in cluster_id and "+" not in cluster_id
    assert z.ClusterIdZNode.decode(z.ClusterIdZNode.encode(cluster_id)) == cluster_id
    assert json.loads(z.ClusterIdZNode.encode("abc")) == {"version": "1", "id": "abc"}


def test_broker_registration_is_kafka_version_5_json():
    info = z.BrokerInfo(3, [("PLAINTEXT", "127.0.0.1", 9093), ("INTERNAL", "10.0.0.1", 19093)],
                        rack="r1", security_protocol_map={"PLAINTEXT": "PLAINTEXT", "INTERNAL": "PLAINTEXT"},
                        timestamp="1700000000000")
    doc = json.loads(z.BrokerIdZNode.encode(info))
    assert doc["version"] == 5 and doc["endpoints"] == ["PLAINTEXT://127.0.0.1:9093", "INTERNAL://10.0.0.1:19093"]
    assert (doc["host"], doc["port"], doc["rack"], doc["jmx_port"]) == ("127.0.0.1", 9093, "r1", -1)
    assert z.BrokerIdZNode.decode(3, z.BrokerIdZNode.encode(info)) == info
    assert z.BrokerIdZNode.path(3) == "/brokers/ids/3"
    assert info.endpoint("INTERNAL") == ("10.0.0.1", 19093) and info.endpoint("SSL") is None


def test_broker_registration_written_by_old_kafka_without_endpoints():
    info = z.BrokerIdZNode.decode(1, b'{"version":1,"host":"h","port":9092,"jmx_port":-1}')
    assert info.endpoints == [("PLAINTEXT", "h", 9092)]


def test_topic_assignment_with_topic_id():
    topic_id = uuid.uuid4()
    assignment = z.TopicAssignment({1: [2, 0], 0: [0, 1]}, topic_id)
    doc = json.loads(z.TopicZNode.encode(assignment))
    assert doc["version"] == 3 and doc["partitions"] == {"0": [0, 1], "1": [2, 0]}
    assert len(doc["topic_id"]) == 22
    assert z.TopicZNode.decode(z.TopicZNode.encode(assignment)) == assignment


def test_topic_assignment_from_kafka_2_4_without_topic_id():
    decoded = z.TopicZNode.decode(b'{"version":1,"partitions":{"0":[1,2]}}')
    assert decoded.partitions == {0: [1, 2]} and decoded.topic_id is None and decoded.adding_replicas == {}


def test_partition_state():
    state = z.LeaderIsrAndControllerEpoch(leader=2, leader_epoch=7, isr=[2, 0], controller_epoch=4)
    data = z.TopicPartitionStateZNode.encode(state)
    assert json.loads(data) == {"controller_epoch": 4, "leader": 2, "version": 1, "leader_epoch": 7, "isr": [2, 0]}
    assert z.TopicPartitionStateZNode.decode(data) == state
    assert z.TopicPartitionStateZNode.path("t", 5) == "/brokers/topics/t/partitions/5/state"


def test_controller_and_epoch():
    assert z.ControllerZNode.decode(z.ControllerZNode.encode(4)) == 4
    assert json.loads(z.ControllerZNode.encode(4, "1"))["brokerid"] == 4
    assert z.ControllerZNode.decode(None) is None
    assert z.ControllerEpochZNode.decode(z.ControllerEpochZNode.encode(12)) == 12


def test_admin_nodes():
    reassignment = {("t", 1): [3, 4], ("a", 0): [1]}
    assert z.ReassignPartitionsZNode.decode(z.ReassignPartitionsZNode.encode(reassignment)) == reassignment
    partitions = [("t", 1), ("a", 0)]
    assert z.PreferredReplicaElectionZNode.decode(z.PreferredReplicaElectionZNode.encode(partitions)) == sorted(partitions)
    assert z.IsrChangeNotificationZNode.decode(z.IsrChangeNotificationZNode.encode(partitions)) == sorted(partitions)
    assert z.DeleteTopicsZNode.topic_path("t") == "/admin/delete_topics/t"


def test_config_nodes():
    data = z.ConfigEntityZNode.encode({"retention.ms": "1000", "cleanup.policy": "compact"})
    assert json.loads(data) == {"version": 1, "config": {"cleanup.policy": "compact", "retention.ms": "1000"}}
    assert z.ConfigEntityZNode.decode(data)["retention.ms"] == "1000"
    assert z.ConfigEntityZNode.decode(None) == {}
    assert z.ConfigChangeNotificationZNode.decode(z.ConfigChangeNotificationZNode.encode("topics", "t")) == ("topics", "t")


def test_producer_id_blocks_follow_each_other():
    first = z.ProducerIdBlockZNode.next_block(None, broker_id=1)
    assert (first.block_start, first.block_end, first.size) == (0, 999, 1000)
    second = z.ProducerIdBlockZNode.next_block(first, broker_id=2)
    assert (second.block_start, second.broker_id) == (1000, 2)
    assert z.ProducerIdBlockZNode.decode(z.ProducerIdBlockZNode.encode(second)) == second
    assert json.loads(z.ProducerIdBlockZNode.encode(second))["block_start"] == "1000"  # strings, as Kafka writes


def test_log_dir_event_notification_is_kafkas():
    """Kafka 2.8's LogDirEventNotificationSequenceZNode: the same bytes either way, so our controller reads a
    Kafka broker's notification and a Kafka controller ours."""
    assert z.LogDirEventNotificationZNode.prefix == "/log_dir_event_notification/log_dir_event_"
    assert json.loads(z.LogDirEventNotificationZNode.encode(3)) == {"version": 1, "broker": 3, "event": 1}
    assert z.LogDirEventNotificationZNode.decode(b'{"version":1,"broker":7,"event":1}') == 7
    assert z.LogDirEventNotificationZNode.decode(b'{"version":1}') is None
    assert z.LogDirEventNotificationZNode.path in z.PERSISTENT_PATHS
