"""Broker configuration: defaults, precedence, environment mapping, validation and the example file."""

from pathlib import Path

import pytest

from odradek.broker.config import (ConfigError, Endpoint, KafkaConfig, env_to_properties, load_config,
                                   parse_properties, validate_topic_config)
from odradek.broker.config_keys import BROKER_KEYS, TOPIC_KEYS, TOPIC_SYNONYMS

REPO = Path(__file__).resolve().parents[3]
ZK = {"zookeeper.connect": "zk:2181"}


def cfg(**kw) -> KafkaConfig:
    return KafkaConfig({**ZK, **{k.replace("__", "."): v for k, v in kw.items()}})


def write(tmp_path, text: str) -> str:
    p = tmp_path / "server.properties"
    p.write_text(text)
    return str(p)


# -- defaults --------------------------------------------------------------------------------------------------

def test_kafka_28_defaults():
    c = cfg()
    assert c.broker_id == -1
    assert c.get("reserved.broker.max.id") == 1000
    assert c.zookeeper_session_timeout_ms == 18000
    assert c.zookeeper_connection_timeout_ms == 18000  # unset = session timeout
    assert (c.num_network_threads, c.num_io_threads, c.queued_max_requests) == (3, 8, 500)
    assert c.get("message.max.bytes") == 1048588
    assert c.get("socket.request.max.bytes") == 104857600
    assert c.get("replica.lag.time.max.ms") == 30000
    assert c.get("offsets.topic.replication.factor") == 3
    assert c.get("transaction.state.log.min.isr") == 2
    assert c.get("group.initial.rebalance.delay.ms") == 3000
    assert c.get("unclean.leader.election.enable") is False
    assert c.get("delete.topic.enable") is True
    assert c.get("log.cleanup.policy") == ["delete"]
    assert c.get("log.flush.interval.messages") == 2**63 - 1
    assert c.log_dirs == ["/tmp/kafka-logs"]
    assert c.log_roll_ms == 168 * 3600000
    assert c.log_retention_ms == 168 * 3600000
    assert c.listeners == [Endpoint("PLAINTEXT", "", 9092, "PLAINTEXT")]
    assert c.advertised_listeners == c.listeners
    assert c.inter_broker_listener_name == "PLAINTEXT"
    assert c.metrics_port == -1 and c.get("odradek.metrics.port") == -1
    assert c.is_default("num.io.threads") and not c.is_default("zookeeper.connect")


def test_every_key_has_doc_and_its_default_passes_its_validator():
    for key in BROKER_KEYS.values():
        assert key.doc, key.name
        if key.default is not None and not key.required:
            key.check(key.default)
    for name, syn in TOPIC_SYNONYMS.items():
        assert syn is None or syn in BROKER_KEYS, name


# -- precedence ------------------------------------------------------------------------------------------------

def test_roll_ms_beats_hours():
    assert cfg(**{"log.roll.hours": "2"}).log_roll_ms == 7200000
    assert cfg(**{"log.roll.hours": "2", "log.roll.ms": "1234"}).log_roll_ms == 1234


def test_retention_ms_beats_minutes_beats_hours():
    assert cfg(**{"log.retention.hours": "1"}).log_retention_ms == 3600000
    assert cfg(**{"log.retention.hours": "1", "log.retention.minutes": "2"}).log_retention_ms == 120000
    c = cfg(**{"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "5"})
    assert c.log_retention_ms == 5
    assert cfg(**{"log.retention.ms": "-1"}).log_retention_ms == -1
    assert cfg(**{"log.retention.hours": "-3"}).log_retention_ms == -1


def test_a_retention_of_zero_is_refused_naming_the_key_that_made_it():
    # KafkaConfig.validateValues: unlimited (-1) or at least 1 ms; negative values mean unlimited
    with pytest.raises(ConfigError, match="configuration log.retention.ms: expected -1 .unlimited. or a retention "
                                          "of at least 1 ms"):
        cfg(**{"log.retention.ms": "0"})
    with pytest.raises(ConfigError, match="Invalid value 0 for configuration log.retention.hours"):
        cfg(**{"log.retention.hours": "0"})
    assert cfg(**{"log.retention.hours": "0", "log.retention.minutes": "1"}).log_retention_ms == 60000


def test_a_dedupe_buffer_of_1_mib_or_less_per_cleaner_thread_is_refused():
    with pytest.raises(ConfigError, match=r"log.cleaner.dedupe.buffer.size: expected more than 1 MiB per cleaner "
                                          r"thread \(log.cleaner.threads=2\)"):
        cfg(**{"log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024), "log.cleaner.threads": "2"})
    cfg(**{"log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024 + 2), "log.cleaner.threads": "2"})
    cfg(**{"log.cleaner.dedupe.buffer.size": "0", "log.cleaner.threads": "0"})  # no cleaner threads: no buffer


def test_log_dirs_beats_log_dir():
    assert cfg(**{"log.dir": "/a"}).log_dirs == ["/a"]
    assert cfg(**{"log.dir": "/a", "log.dirs": "/b, /c,"}).log_dirs == ["/b", "/c"]


def test_advertised_listeners_default_to_listeners_and_can_differ():
    c = cfg(listeners="PLAINTEXT://0.0.0.0:9092")
    assert c.advertised_listeners == [Endpoint("PLAINTEXT", "0.0.0.0", 9092)]
    c = cfg(listeners="PLAINTEXT://:9092", advertised__listeners="PLAINTEXT://kafka-1:19092")
    assert c.advertised_listeners == [Endpoint("PLAINTEXT", "kafka-1", 19092)]
    assert c.listeners[0].host == ""


def test_file_then_environment_then_overrides(tmp_path):
    path = write(tmp_path, "zookeeper.connect=a:2181\nnum.io.threads=2\nnum.partitions=3\nbroker.id=1\n")
    env = {"KAFKA_NUM_IO_THREADS": "4", "KAFKA_NUM_PARTITIONS": "5", "KAFKA_CFG_NUM_PARTITIONS": "6"}
    c, w = load_config(path, ["num.io.threads=7"], env)
    assert w == []
    assert c.num_io_threads == 7           # override beats environment and file
    assert c.num_partitions == 6           # KAFKA_CFG_ beats bare KAFKA_, both beat the file
    assert c.broker_id == 1                # file beats default
    assert c.sources["num.io.threads"].startswith("--override")
    assert c.sources["num.partitions"] == "environment variable KAFKA_CFG_NUM_PARTITIONS"
    c, _ = load_config(path, ["num.io.threads=7", "num.io.threads=9"], {})
    assert c.num_io_threads == 9           # later override wins


def test_override_without_equals_is_rejected():
    with pytest.raises(ConfigError, match="Invalid override num.io.threads: expected key=value"):
        load_config(None, ["zookeeper.connect=z:1", "num.io.threads"], {})


# -- environment mapping ---------------------------------------------------------------------------------------

def test_bitnami_mapping():
    env = {"KAFKA_CFG_LOG_RETENTION_HOURS": "5", "KAFKA_CFG_ZOOKEEPER_CONNECT": "zookeeper:2181",
           "KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP": "CLIENT:PLAINTEXT,EXTERNAL:PLAINTEXT",
           "KAFKA_CFG_LISTENERS": "CLIENT://:9092,EXTERNAL://:9093",
           "KAFKA_CFG_ADVERTISED_LISTENERS": "CLIENT://kafka:9092,EXTERNAL://localhost:9093",
           "KAFKA_CFG_INTER_BROKER_LISTENER_NAME": "CLIENT", "KAFKA_CFG_BROKER_ID": "3",
           "KAFKA_CFG_EMPTY_ONE": "", "ALLOW_PLAINTEXT_LISTENER": "yes", "PATH": "/bin"}
    c, w = load_config(None, [], env)
    assert w == []
    assert c.log_retention_ms == 5 * 3600000
    assert c.broker_id == 3
    assert [(e.name, e.host, e.port) for e in c.advertised_listeners] == [("CLIENT", "kafka", 9092),
                                                                          ("EXTERNAL", "localhost", 9093)]
    assert c.inter_broker_listener_name == "CLIENT"
    # libkafka.sh's special cases keep SASL_SSL / SASL_PLAINTEXT protocol names intact
    mapped = {k: v for k, v, _ in env_to_properties({"KAFKA_CFG_SASL_ENABLED_MECHANISMS": "x",
                                                     "KAFKA_CFG_LISTENER_NAME_A_SASL_PLAINTEXT_B": "y"})}
    assert mapped == {"sasl.enabled.mechanisms": "x", "listener.name.a.sasl_plaintext.b": "y"}


def test_confluent_mapping_and_non_config_variables():
    env = {"KAFKA_ZOOKEEPER_CONNECT": "zk:2181/kafka", "KAFKA_BROKER_ID": "2",
           "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1", "KAFKA_HEAP_OPTS": "-Xmx1G", "KAFKA_OPTS": "-Dx",
           "KAFKA_JMX_PORT": "7071", "KAFKA_JMX_OPTS": "x", "KAFKA_LOG4J_ROOT_LOGLEVEL": "INFO",
           "KAFKA_LOG4J_LOGGERS": "a=b", "KAFKA_HOME": "/opt/kafka", "KAFKA_VERSION": "2.8.0"}
    c, w = load_config(None, [], env)
    assert w == [] and c.unknown == {}
    assert c.broker_id == 2 and c.get("offsets.topic.replication.factor") == 1
    assert c.zookeeper_connect.chroot == "/kafka"
    keys = {k for k, _, _ in env_to_properties({"KAFKA_A_B": "1", "KAFKA_A__B": "1", "KAFKA_A___B": "1",
                                                "KAFKA_A____B": "1"})}
    assert keys == {"a.b", "a_b", "a-b", "a-.b"}


def test_unknown_environment_key_is_reported_with_its_variable():
    _, w = load_config(None, [], {"KAFKA_ZOOKEEPER_CONNECT": "z:1", "KAFKA_NUM_IO_THREDS": "3"})
    assert w == ["Unknown configuration 'num.io.threds' (did you mean 'num.io.threads'?) was ignored "
                 "(from environment variable KAFKA_NUM_IO_THREDS)"]


# -- validation ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key,value,accepts", [
    ("num.io.threads", "abc", "expected an integer >= 1"),
    ("num.io.threads", "0", "expected an integer >= 1"),
    ("num.io.threads", "99999999999", "expected an integer >= 1"),
    ("auto.create.topics.enable", "yes", "expected true or false"),
    ("log.message.timestamp.type", "createtime", "expected one of: CreateTime, LogAppendTime"),
    ("compression.type", "brotli", "expected one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    ("log.cleanup.policy", "delete,forever", "expected a comma-separated list of: compact, delete"),
    ("log.cleaner.min.cleanable.ratio", "1.5", "expected a number in [0, 1]"),
    ("odradek.metrics.port", "70000", "expected an integer in [-1, 65535]"),
    ("log.segment.bytes", "10", "expected an integer >= 14"),
    ("listeners", "PLAINTEXT:9092", "expected a comma-separated list of NAME://host:port"),
    ("listeners", "PLAINTEXT://:99999", "expected a comma-separated list of NAME://host:port"),
    ("ssl.client.auth", "maybe", "expected one of: none, requested, required"),
    ("zookeeper.connect", "zk:notaport", "expected host:port[,host:port...][/chroot]"),
    ("broker.id", "1001", "expected an integer in [-1, 1000]"),
    ("inter.broker.protocol.version", "9.9", "expected a Kafka version"),
    ("log.message.format.version", "0.10.2", "expected a Kafka version of 0.11.0 or later"),
])
def test_invalid_value_names_key_value_and_accepted_values_on_one_line(key, value, accepts):
    with pytest.raises(ConfigError) as ei:
        KafkaConfig({**ZK, key: value})
    msg = str(ei.value)
    assert msg.startswith(f"Invalid value {value} for configuration {key}: ")
    assert accepts in msg
    assert "\n" not in msg


def test_invalid_value_with_newline_stays_one_line_and_names_its_source(tmp_path):
    with pytest.raises(ConfigError) as ei:
        load_config(None, ["zookeeper.connect=z:1", "num.io.threads=a\nb"], {})
    assert "\n" not in str(ei.value) and "a\\nb" in str(ei.value)
    path = write(tmp_path, "zookeeper.connect=z:1\n\nnum.io.threads=x\n")
    with pytest.raises(ConfigError, match=r"num.io.threads: expected an integer >= 1 \(from .* line 3\)"):
        load_config(path, [], {})


def test_cross_key_rules():
    with pytest.raises(ConfigError, match="advertised.listeners"):
        cfg(listeners="PLAINTEXT://:9092", advertised__listeners="OTHER://h:1",
            **{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"})
    with pytest.raises(ConfigError, match="0.0.0.0"):
        cfg(advertised__listeners="PLAINTEXT://0.0.0.0:9092")
    with pytest.raises(ConfigError, match="inter.broker.listener.name"):  # no PLAINTEXT-named listener
        cfg(listeners="CLIENT://:9092", **{"listener.security.protocol.map": "CLIENT:PLAINTEXT"})
    with pytest.raises(ConfigError, match="at most replica.socket.timeout.ms"):
        cfg(**{"replica.fetch.wait.max.ms": "40000", "replica.lag.time.max.ms": "50000"})
    with pytest.raises(ConfigError, match="each port at most once"):
        cfg(listeners="A://:9092,B://:9092", **{"listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT"})
    with pytest.raises(ConfigError, match="broker.id: expected an integer >= 0"):
        cfg(**{"broker.id.generation.enable": "false"})


def test_missing_required_zookeeper_connect():
    with pytest.raises(ConfigError) as ei:
        load_config(None, [], {})
    assert str(ei.value) == ("Missing required configuration zookeeper.connect which has no default value: "
                             "expected host:port[,host:port...][/chroot]")


def test_unknown_key_warns_with_closest_key_and_is_kept(tmp_path):
    path = write(tmp_path, "zookeeper.connect=z:1\nzookeeper.sesion.timeout.ms=9000\nfoo=bar\n"
                           "sasl.kerberos.service.name=kafka\n")
    c, w = load_config(path, [], {})
    assert w[0] == (f"Unknown configuration 'zookeeper.sesion.timeout.ms' (did you mean "
                    f"'zookeeper.session.timeout.ms'?) was ignored (from {path} line 2)")
    assert w[1] == f"Unknown configuration 'foo' was ignored (from {path} line 3)"
    assert "'sasl.kerberos.service.name' is a Kafka setting Odradek does not support" in w[2]
    assert c.unknown == {"zookeeper.sesion.timeout.ms": "9000", "foo": "bar", "sasl.kerberos.service.name": "kafka"}
    assert c.zookeeper_session_timeout_ms == 18000
    assert c.originals["foo"] == "bar"
    with pytest.raises(KeyError):
        c.get("foo")


def test_duplicate_key_in_file_warns_and_last_wins(tmp_path):
    c, w = load_config(write(tmp_path, "zookeeper.connect=z:1\nnum.partitions=2\nnum.partitions=4\n"), [], {})
    assert c.num_partitions == 4
    assert w == [f"Configuration 'num.partitions' is set twice in {tmp_path / 'server.properties'} "
                 "(lines 2 and 3); the last one wins"]


# -- structured values ----------------------------------------------------------------------------------------

def test_listener_parsing():
    c = cfg(listeners="internal://:9092, EXTERNAL://[::1]:19092,LOCAL://localhost:0",
            advertised__listeners="INTERNAL://kafka-1:9092,EXTERNAL://localhost:19092",
            **{"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,LOCAL:PLAINTEXT",
               "inter.broker.listener.name": "internal"})
    assert [(e.name, e.host, e.port) for e in c.listeners] == [
        ("INTERNAL", "", 9092), ("EXTERNAL", "::1", 19092), ("LOCAL", "localhost", 0)]
    assert str(c.listeners[1]) == "EXTERNAL://[::1]:19092"
    assert c.inter_broker_listener_name == "INTERNAL"
    assert len(c.advertised_listeners) == 2


def test_zookeeper_connect_hosts_and_chroot():
    z = cfg(**{"zookeeper.connect": "a:2181,b:2182,c/kafka/prod"}).zookeeper_connect
    assert z.hosts == "a:2181,b:2182,c" and z.chroot == "/kafka/prod"
    assert z.servers == (("a", 2181), ("b", 2182), ("c", 2181))
    assert cfg(**{"zookeeper.connect": "a:1/"}).zookeeper_connect.chroot == ""
    with pytest.raises(ConfigError, match="chroot"):
        cfg(**{"zookeeper.connect": "a:1/x/"})


def test_typed_attribute_access_and_unknown_attribute():
    c = cfg(**{"broker.rack": "r1", "log.cleanup.policy": "compact, delete"})
    assert c.broker_rack == "r1" and c.get("log.cleanup.policy") == ["compact", "delete"]
    assert cfg(**{"broker.rack": ""}).broker_rack is None
    with pytest.raises(AttributeError):
        c.no_such_key


# -- properties syntax -----------------------------------------------------------------------------------------

def test_properties_syntax():
    text = ("# comment\n! also comment\n   \n  a=1\nb : 2\nc 3\nd=\ne= spaced value  \n"
            "f=one,\\\n    two,\\\n    three\n"
            "g\\=h=x\\ty\\u0041\\\\\n"
            "# comment ending in backslash \\\n"
            "i=after\r\nj:k=v\n"
            "l=trailing\\\\\n"
            "m")
    assert parse_properties(text) == [
        ("a", "1", 4), ("b", "2", 5), ("c", "3", 6), ("d", "", 7), ("e", "spaced value  ", 8),
        ("f", "one,two,three", 9), ("g=h", "x\tyA\\", 12), ("i", "after", 14), ("j", "k=v", 15),
        ("l", "trailing\\", 16), ("m", "", 17)]


def test_values_are_trimmed_when_typed(tmp_path):
    c, _ = load_config(write(tmp_path, "zookeeper.connect = z:1  \nnum.io.threads =  4  \n"), [], {})
    assert c.num_io_threads == 4 and c.zookeeper_connect.hosts == "z:1"


# -- topic level -----------------------------------------------------------------------------------------------

def test_topic_defaults_follow_broker_values():
    c = cfg(**{"log.segment.bytes": "1000", "log.retention.minutes": "3", "message.max.bytes": "77",
               "log.cleanup.policy": "compact,delete", "min.insync.replicas": "2",
               "unclean.leader.election.enable": "true"})
    d = c.topic_defaults()
    assert set(d) == set(TOPIC_KEYS)
    assert d["segment.bytes"] == "1000" and d["retention.ms"] == "180000" and d["max.message.bytes"] == "77"
    assert d["cleanup.policy"] == "compact,delete" and d["min.insync.replicas"] == "2"
    assert d["unclean.leader.election.enable"] == "true" and d["segment.ms"] == str(168 * 3600000)
    assert d["compression.type"] == "producer" and d["message.timestamp.type"] == "CreateTime"
    t = c.topic_config({"retention.ms": "-1", "cleanup.policy": "compact"})
    assert t["retention.ms"] == -1 and t["cleanup.policy"] == ["compact"] and t["segment.bytes"] == 1000
    with pytest.raises(ConfigError, match="retention.ms"):
        c.topic_config({"retention.ms": "soon"})


def test_validate_topic_config():
    assert validate_topic_config({"retention.ms": "1000", "cleanup.policy": "compact,delete",
                                  "min.insync.replicas": "2", "compression.type": "zstd",
                                  "leader.replication.throttled.replicas": "0:1,1:2",
                                  "segment.bytes": None}) == []
    errors = validate_topic_config({"retention.ms": "-2", "cleanup.policy": "forever",
                                    "retension.ms": "1", "min.insync.replicas": "0",
                                    "message.timestamp.type": "Now",
                                    "follower.replication.throttled.replicas": "x"})
    assert errors == [
        "Invalid value -2 for configuration retention.ms: expected an integer >= -1",
        "Invalid value forever for configuration cleanup.policy: expected a comma-separated list of: compact, "
        "delete",
        "Unknown topic config name: retension.ms (did you mean 'retention.ms'?)",
        "Invalid value 0 for configuration min.insync.replicas: expected an integer >= 1",
        "Invalid value Now for configuration message.timestamp.type: expected one of: CreateTime, LogAppendTime",
        "Invalid value x for configuration follower.replication.throttled.replicas: expected * or a "
        "comma-separated list of partition:brokerId",
    ]
    assert validate_topic_config({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}) == [
        "Invalid value 10 for configuration min.compaction.lag.ms: expected at most max.compaction.lag.ms (5)"]


# -- the example file ------------------------------------------------------------------------------------------

def test_example_server_properties_loads_cleanly():
    c, w = load_config(str(REPO / "config" / "server.properties"), [], {})
    assert w == [] and c.unknown == {}
    assert c.broker_id == 0
    assert c.listeners == [Endpoint("PLAINTEXT", "127.0.0.1", 9092)]
    assert c.log_dirs == ["/tmp/odradek-logs"]
    assert c.zookeeper_connect.servers == (("127.0.0.1", 2181),) and c.zookeeper_connect.chroot == ""
    assert c.get("offsets.topic.replication.factor") == 1
    assert c.get("group.initial.rebalance.delay.ms") == 0


def test_kafka_shipped_style_file_loads(tmp_path):
    text = ("broker.id=0\nnum.network.threads=3\nnum.io.threads=8\nsocket.send.buffer.bytes=102400\n"
            "socket.receive.buffer.bytes=102400\nsocket.request.max.bytes=104857600\nlog.dirs=/tmp/kafka-logs\n"
            "num.partitions=1\nnum.recovery.threads.per.data.dir=1\noffsets.topic.replication.factor=1\n"
            "transaction.state.log.replication.factor=1\ntransaction.state.log.min.isr=1\n"
            "log.retention.hours=168\nlog.segment.bytes=1073741824\nlog.retention.check.interval.ms=300000\n"
            "zookeeper.connect=localhost:2181\nzookeeper.connection.timeout.ms=18000\n"
            "group.initial.rebalance.delay.ms=0\n")
    c, w = load_config(write(tmp_path, text), [], {})
    assert w == [] and c.zookeeper_connection_timeout_ms == 18000


@pytest.mark.parametrize("setting", ["zookeeper.set.acl=true", "zookeeper.ssl.client.enable=true",
                                     "principal.builder.class=com.example.Builder",
                                     "delegation.token.master.key=secret"])
def test_security_settings_not_implemented_stop_the_broker_naming_the_key(tmp_path, setting):
    key = setting.partition("=")[0]
    path = write(tmp_path, f"zookeeper.connect=z:1\n{setting}\n")
    with pytest.raises(ConfigError) as refused:
        load_config(path, [], {})
    assert str(refused.value) == (f"Configuration '{key}' asks for security Odradek does not implement yet; refusing "
                                  f"to start without it (remove the setting to run unprotected) (from {path} line 2)")


def test_a_security_setting_that_asks_for_nothing_does_not_stop_the_broker(tmp_path):
    path = write(tmp_path, "zookeeper.connect=z:1\nzookeeper.ssl.client.enable=false\nprincipal.builder.class=\n")
    _, warnings = load_config(path, [], {})
    assert all("does not support" in w for w in warnings) and len(warnings) == 2


def test_accepted_keys_without_effect_are_warned_about_by_name(tmp_path):
    path = write(tmp_path, "zookeeper.connect=z:1\nlog.preallocate=true\nnum.replica.fetchers=1\n"
                           "offsets.topic.compression.codec=1\ninter.broker.protocol.version=2.8\n"
                           "inter.broker.protocol.version=2.7\n")
    _, warnings = load_config(path, [], {})
    assert [w for w in warnings if "is set twice" not in w] == [
        f"Configuration 'log.preallocate' is accepted but not implemented: segment files are never preallocated "
        f"(it matters on Windows' NTFS only) (from {path} line 2)",
        f"Configuration 'offsets.topic.compression.codec' is accepted but not implemented: offset commits are "
        f"written uncompressed (from {path} line 4)",
        f"Configuration 'inter.broker.protocol.version' is accepted but not implemented: brokers always speak "
        f"Kafka 2.8's inter-broker protocol (from {path} line 6)"]

def test_doubles_are_shown_as_java_shows_them():
    """Kafka's DescribeConfigs shows a DOUBLE key with Java's Double.toString."""
    from odradek.broker.config import _format
    assert [_format(v) for v in (1.7976931348623157e308, 1e7, 123456789.0, 0.5, 10.0, 1e-4, 0.001)] == [
        "1.7976931348623157E308", "1.0E7", "1.23456789E8", "0.5", "10.0", "1.0E-4", "0.001"]
