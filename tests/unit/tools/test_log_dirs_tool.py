"""odradek-log-dirs: Kafka's LogDirsCommand arguments and JSON."""

import json

import pytest

from odradek.clients.admin.log_dirs import LogDirDescription, ReplicaInfo
from odradek.clients.types import TopicPartition
from odradek.protocol.errors import KafkaStorageError
from odradek.tools.common import UsageError
from odradek.tools.log_dirs import describe_json, parse_args


def test_arguments():
    opts = parse_args(["--bootstrap-server", "h:9092", "--describe", "--broker-list", "0,2", "--topic-list", "a,b"])
    assert opts.brokers == [0, 2] and opts.topics == {"a", "b"} and opts.client_id == "log-dirs-tool"
    assert parse_args(["--bootstrap-server", "h:9092", "--describe"]).brokers is None
    with pytest.raises(UsageError, match="describe"):
        parse_args(["--bootstrap-server", "h:9092"])
    with pytest.raises(UsageError, match="broker-list"):
        parse_args(["--bootstrap-server", "h:9092", "--describe", "--broker-list", "x"])


def test_json_as_kafka_prints_it():
    described = {0: {"/ok": LogDirDescription(None, {TopicPartition("a", 0): ReplicaInfo(120, 0, False),
                                                     TopicPartition("b", 1): ReplicaInfo(7, 2, True)}),
                     "/bad": LogDirDescription(KafkaStorageError(), {})}}
    text = describe_json(described, {"a"})
    assert text.startswith('{"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/ok","error":null,')
    assert json.loads(text)["brokers"][0]["logDirs"] == [
        {"logDir": "/ok", "error": None,
         "partitions": [{"partition": "a-0", "size": 120, "offsetLag": 0, "isFuture": False}]},
        {"logDir": "/bad", "error": "org.apache.kafka.common.errors.KafkaStorageException", "partitions": []}]
