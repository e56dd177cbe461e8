"""Flag parsing of the console and perf tools (no cluster): Kafka 2.8's checks and wording, the mapping of
Kafka property names onto our clients' kwargs, the line reader, the message formatter and the perf helpers."""

from __future__ import annotations

import io

import pytest

from odradek.tools import console_consumer, console_producer, consumer_perf_test, producer_perf_test
from odradek.tools.kafka_properties import UsageError, consumer_kwargs, load_properties, producer_kwargs
from odradek.clients.types import ConsumerRecord

BOOT = ["--bootstrap-server", "h:9092"]


# -- shared helpers ---------------------------------------------------------------------------------------------
def test_properties_file_follows_java_rules(tmp_path):
    path = tmp_path / "p.properties"
    path.write_text("# comment\n! also a comment\nacks=all\nlinger.ms: 7\nclient.id console\n"
                    "key.separator=\\t\nlong=a\\\n  b\n")
    assert load_properties(str(path), "--producer.config") == {
        "acks": "all", "linger.ms": "7", "client.id": "console", "key.separator": "\t", "long": "ab"}


def test_properties_file_separators_may_have_blanks_around_them_as_in_java(tmp_path):
    path = tmp_path / "p.properties"
    path.write_text("acks = all\nlinger.ms : 7\nclient.id   console\nkey\\=with\\:marks=v\n"
                    "security.protocol=SASL_PLAINTEXT\nsecurity.protocol = SSL\n")
    assert load_properties(str(path), "--producer.config") == {
        "acks": "all", "linger.ms": "7", "client.id": "console", "key=with:marks": "v", "security.protocol": "SSL"}


def test_unreadable_properties_file_names_the_flag(tmp_path):
    with pytest.raises(UsageError, match="--consumer.config"):
        load_properties(str(tmp_path / "missing"), "--consumer.config")


def test_kafka_names_become_kwargs_and_unknown_ones_are_warned():
    warnings = io.StringIO()
    kwargs = producer_kwargs({"acks": "1", "linger.ms": "5", "enable.idempotence": "false", "client.id": "42",
                              "key.serializer": "x", "sasl.mechanism": "PLAIN", "foo.bar": "1"}, warn=warnings)
    assert kwargs == {"acks": "1", "linger_ms": 5, "enable_idempotence": False, "client_id": "42"}
    assert "'foo.bar' was supplied but isn't a known config" in warnings.getvalue()
    assert "sasl.mechanism" not in warnings.getvalue()  # a security setting, unused with PLAINTEXT
    assert "key.serializer" not in warnings.getvalue()
    assert consumer_kwargs({"group.id": "007", "fetch.max.wait.ms": "100"}, warn=None) == {
        "group_id": "007", "fetch_max_wait_ms": 100}


def test_security_properties_our_clients_do_not_read_are_warned_about_by_name():
    warnings = io.StringIO()
    kwargs = consumer_kwargs({"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.keymanager.algorithm":
                              "PKIX", "sasl.kerberos.service.name": "kafka"}, warn=warnings)
    assert kwargs["security_protocol"] == "SSL"
    assert "'ssl.keymanager.algorithm' was supplied but Odradek's clients do not support it" in warnings.getvalue()
    assert "'sasl.kerberos.service.name' was supplied" in warnings.getvalue()
    assert "ssl.truststore.type" not in warnings.getvalue() and "security.protocol" not in warnings.getvalue()


# -- console producer -------------------------------------------------------------------------------------------
def test_console_producer_defaults_are_kafka_28s():
    opts = console_producer.parse_args(BOOT + ["--topic", "t"])
    assert opts.producer["acks"] == "1" and opts.producer["linger.ms"] == "1000"
    assert opts.producer["client.id"] == "console-producer" and opts.producer["compression.type"] == "none"
    assert opts.kwargs["request_timeout_ms"] == 1500 and opts.kwargs["retries"] == 3


def test_console_producer_precedence_file_then_property_then_flags(tmp_path):
    config = tmp_path / "producer.properties"
    config.write_text("acks=0\nlinger.ms=3\nbatch.size=100\n")
    opts = console_producer.parse_args(BOOT + ["--topic", "t", "--producer.config", str(config),
                                               "--producer-property", "linger.ms=9", "--timeout", "11",
                                               "--producer-property", "batch.size=200"])
    assert opts.producer["acks"] == "0"          # from the file: the flag's default does not override it
    assert opts.producer["linger.ms"] == "11"    # the explicit flag wins
    assert opts.producer["batch.size"] == "200"  # --producer-property over the file


def test_console_producer_compression_codec_without_value_is_gzip():
    assert console_producer.parse_args(BOOT + ["--topic", "t", "--compression-codec"]).producer[
        "compression.type"] == "gzip"


def test_console_producer_broker_list_is_accepted_and_ignored_behind_bootstrap():
    assert console_producer.parse_args(["--broker-list", "a:1", "--topic", "t"]).servers == "a:1"
    assert console_producer.parse_args(BOOT + ["--broker-list", "a:1", "--topic", "t"]).servers == "h:9092"


@pytest.mark.parametrize("argv, message", [
    (BOOT, 'Missing required argument "[topic]"'),
    (["--topic", "t"], 'Missing required argument "[bootstrap-server]"'),
    (["--bootstrap-server", "nohost", "--topic", "t"], "Please provide valid host:port"),
    (BOOT + ["--topic", "t", "--compression-codec", "brotli"], "Invalid --compression-codec 'brotli'"),
    (BOOT + ["--topic", "t", "--request-required-acks", "2"], "Invalid --request-required-acks '2'"),
    (BOOT + ["--topic", "t", "--timeout", "x"], "argument --timeout: invalid int value"),
    (BOOT + ["--topic", "t", "--property", "parse.key"], "Invalid --property 'parse.key'"),
    (BOOT + ["--topic", "t", "--frobnicate"], "frobnicate is not a recognized option"),
])
def test_console_producer_usage_errors(argv, message):
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("]", r"\]")):
        console_producer.parse_args(argv)


def test_line_reader_splits_keys_as_line_message_reader():
    reader = console_producer.LineReader(io.BytesIO(b"k1::v1\nv-only\n::empty-key\nk4::\r\n"),
                                         {"parse.key": "true", "key.separator": "::", "ignore.error": "true"},
                                         prompt=False)
    assert list(reader) == [(b"k1", b"v1"), (None, b"v-only"), (b"", b"empty-key"), (b"k4", b"")]


def test_line_reader_without_key_separator_stops_with_the_line_number():
    reader = console_producer.LineReader(io.BytesIO(b"a\tb\nno key here\n"), {"parse.key": "true"}, prompt=False)
    lines = iter(reader)
    assert next(lines) == (b"a", b"b")
    with pytest.raises(ValueError, match="No key found on line 2: no key here"):
        next(lines)


# -- console consumer -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (BOOT, "Exactly one of whitelist/topic is required."),
    (BOOT + ["--topic", "t", "--whitelist", "t.*"], "Exactly one of whitelist/topic is required."),
    (BOOT + ["--whitelist", "t", "--partition", "0"], "The topic is required when partition is specified."),
    (BOOT + ["--topic", "t", "--partition", "0", "--offset", "1", "--from-beginning"],
     "Options from-beginning and offset cannot be specified together."),
    (BOOT + ["--topic", "t", "--offset", "3"], "The partition is required when offset is specified."),
    (BOOT + ["--topic", "t", "--partition", "0", "--offset", "-3"], "The provided offset value '-3' is incorrect"),
    (BOOT + ["--topic", "t", "--partition", "0", "--offset", "soon"], "The provided offset value 'soon'"),
    (["--topic", "t"], 'Missing required argument "[bootstrap-server]"'),
    (BOOT + ["--topic", "t", "--group", "a", "--consumer-property", "group.id=b"],
     "The group ids provided in different places"),
    (BOOT + ["--topic", "t", "--group", "a", "--partition", "0"],
     "Options group and partition cannot be specified together."),
    (BOOT + ["--topic", "t", "--from-beginning", "--consumer-property", "auto.offset.reset=latest"],
     "Can't simultaneously specify --from-beginning and 'auto.offset.reset=latest'"),
    (BOOT + ["--topic", "t", "--isolation-level", "dirty"], "Invalid --isolation-level 'dirty'"),
    (BOOT + ["--topic", "t", "--max-messages", "many"], "argument --max-messages: invalid int value"),
])
def test_console_consumer_usage_errors(argv, message):
    with pytest.raises(UsageError) as caught:
        console_consumer.parse_args(argv)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_console_consumer_random_group_and_start_offsets():
    opts = console_consumer.parse_args(BOOT + ["--topic", "t"])
    assert opts.consumer["group.id"].startswith("console-consumer-") and not opts.group_passed
    assert opts.consumer["enable.auto.commit"] == "false" and opts.start == "latest"
    assert opts.consumer["auto.offset.reset"] == "latest"
    opts = console_consumer.parse_args(BOOT + ["--include", "a|b", "--from-beginning", "--group", "g"])
    assert opts.pattern.fullmatch("b") and opts.consumer["group.id"] == "g" and opts.group_passed
    assert opts.consumer["auto.offset.reset"] == "earliest"
    assert console_consumer.parse_args(BOOT + ["--topic", "t", "--partition", "2", "--offset", "EARLIEST"]
                                       ).start == "earliest"
    assert console_consumer.parse_args(BOOT + ["--topic", "t", "--partition", "2", "--offset", "17"]).start == 17


def _record(**fields):
    base = dict(topic="t", partition=2, offset=7, timestamp=1700000000000, timestamp_type=0, key=b"k", value=b"v",
                headers=[("h1", b"x"), ("h2", None)], serialized_key_size=1, serialized_value_size=1)
    return ConsumerRecord(**{**base, **fields})


def test_formatter_prints_value_only_by_default():
    assert console_consumer.MessageFormatter({}).format(_record()) == b"v\n"


def test_formatter_prints_every_column_in_kafkas_order():
    formatter = console_consumer.MessageFormatter({p: "true" for p in (
        "print.timestamp", "print.partition", "print.offset", "print.headers", "print.key")})
    assert formatter.format(_record()) == b"CreateTime:1700000000000\tPartition:2\tOffset:7\th1:x,h2:null\tk\tv\n"


def test_formatter_separators_nulls_and_no_value():
    formatter = console_consumer.MessageFormatter({"print.key": "true", "key.separator": " => ",
                                                   "line.separator": "|", "print.value": "false",
                                                   "print.timestamp": "true"})
    assert formatter.format(_record(key=None, timestamp_type=1)) == b"LogAppendTime:1700000000000 => null|"
    assert console_consumer.MessageFormatter({"print.headers": "true", "headers.separator": ";"}).format(
        _record(headers=[])) == b"NO_HEADERS\tv\n"


# -- perf tools -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["--num-records", "1", "--record-size", "1", "--throughput", "-1", "--producer-props", "bootstrap.servers=h:1"],
     "argument --topic is required"),
    (["--topic", "t", "--record-size", "1", "--throughput", "-1", "--producer-props", "bootstrap.servers=h:1"],
     "argument --num-records is required"),
    (["--topic", "t", "--num-records", "1", "--throughput", "-1", "--producer-props", "bootstrap.servers=h:1"],
     "one of the arguments --record-size --payload-file is required"),
    (["--topic", "t", "--num-records", "1", "--record-size", "1", "--payload-file", "f", "--throughput", "-1",
      "--producer-props", "bootstrap.servers=h:1"], "not allowed with argument"),
    (["--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1"],
     "Either --producer-props or --producer.config must be specified."),
    (["--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1", "--producer-props", "acks=1"],
     'Missing required configuration "bootstrap.servers"'),
    (["--topic", "t", "--num-records", "x", "--record-size", "1", "--throughput", "-1"],
     "argument --num-records: invalid int value"),
])
def test_producer_perf_usage_errors(argv, message):
    with pytest.raises(UsageError, match=message):
        producer_perf_test.parse_args(argv)


def test_producer_perf_props_and_percentiles():
    opts = producer_perf_test.parse_args(["--topic", "t", "--num-records", "10", "--record-size", "100",
                                          "--throughput", "-1", "--producer-props", "bootstrap.servers=h:1",
                                          "linger.ms=5"])
    assert opts.kwargs == {"bootstrap_servers": "h:1", "linger_ms": 5, "acks": "1"}
    assert producer_perf_test.percentiles(list(range(1000)), 0.5, 0.95, 0.99, 0.999) == [500, 950, 990, 999]
    assert producer_perf_test.percentiles([], 0.5) == [0]


def test_throttler_follows_throughput_throttler():
    throttler = producer_perf_test.Throttler(100, start=0.0)
    assert throttler.should_throttle(101, now=1.0) and not throttler.should_throttle(99, now=1.0)
    assert not producer_perf_test.Throttler(-1, start=0.0).should_throttle(10**9, now=1.0)
    assert throttler.sleep_ns == 10_000_000


@pytest.mark.parametrize("argv, message", [
    (["--topic", "t", "--messages", "5"], 'Missing required argument "[bootstrap-server]"'),
    (BOOT + ["--messages", "5"], 'Missing required argument "[topic]"'),
    (BOOT + ["--topic", "t"], 'Missing required argument "[messages]"'),
    (BOOT + ["--topic", "t", "--messages", "5", "--date-format", "yyyy QQ"], "unsupported pattern letter 'Q'"),
    (BOOT + ["--topic", "t", "--messages", "5", "--timeout", "0"], "Invalid --timeout 0"),
])
def test_consumer_perf_usage_errors(argv, message):
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("]", r"\]")):
        consumer_perf_test.parse_args(argv)


def test_consumer_perf_defaults_and_java_date_format():
    opts = consumer_perf_test.parse_args(["--broker-list", "h:1", "--topic", "t", "--messages", "5"])
    assert opts.kwargs["group_id"].startswith("perf-consumer-") and opts.kwargs["auto_offset_reset"] == "earliest"
    assert opts.kwargs["max_partition_fetch_bytes"] == 1048576
    import time as _time
    epoch_ms = _time.mktime((2021, 3, 4, 5, 6, 7, 0, 0, -1)) * 1000 + 89
    assert consumer_perf_test.JavaDateFormat("yyyy-MM-dd HH:mm:ss:SSS").format(epoch_ms) == "2021-03-04 05:06:07:089"
    assert consumer_perf_test.JavaDateFormat("dd/MM/yy 'at' hh a").format(epoch_ms) == "04/03/21 at 05 AM"
