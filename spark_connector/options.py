"""The source's and sink's options, named and checked as Spark's own Kafka source (KafkaSourceProvider).

Spark's options are case-insensitive; every name is looked up lower-cased. Invalid or conflicting
options raise ``IllegalArgumentException``-shaped ``ValueError``s with Spark's messages, at query start
(when Spark builds the reader or writer on the driver).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..clients.consumer.consumer import DEFAULT_CONFIG as CONSUMER_DEFAULTS
from ..clients.producer.producer import producer_config
from ..clients.security.client_security import (
    SECURITY_DEFAULTS, SECURITY_PROPERTY_PREFIXES, file_security_kwargs, unread_security_properties,
)
from ..clients.types import KafkaConfigurationError

log = logging.getLogger(__name__)

EARLIEST, LATEST = -2, -1
STRATEGIES = ("assign", "subscribe", "subscribepattern")
STRATEGY_NAMES = "subscribe, subscribePattern, assign"

# Kafka consumer settings Spark's source owns itself (KafkaSourceProvider.validateGeneralOptions).
_UNSUPPORTED_CONSUMER_OPTIONS = {
    "auto.offset.reset": "Kafka option 'auto.offset.reset' is not supported. Instead set the source option "
                         "'startingoffsets' to 'earliest' or 'latest' to specify where to start.",
    "key.deserializer": "Kafka option 'key.deserializer' is not supported, as keys are always deserialized as "
                        "byte arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly "
                        "deserialize the keys.",
    "value.deserializer": "Kafka option 'value.deserializer' is not supported, as values are always deserialized "
                          "as byte arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly "
                          "deserialize the values.",
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported. This is because Spark manages "
                          "offsets internally and does not rely on the consumer to commit them.",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported as user-specified consumer "
                           "interceptors are not supported.",
}
_UNSUPPORTED_PRODUCER_OPTIONS = {
    "key.serializer": "Kafka option 'key.serializer' is not supported, as keys are serialized as byte arrays "
                      "with ByteArraySerializer. Use DataFrame operations to explicitly serialize the keys "
                      "into either strings or byte arrays.",
    "value.serializer": "Kafka option 'value.serializer' is not supported, as values are serialized as byte "
                        "arrays with ByteArraySerializer. Use DataFrame operations to explicitly serialize the "
                        "values into either strings or byte arrays.",
}


def lower_keys(options: Mapping[str, Any]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def _bootstrap(opts: dict[str, str]) -> str:
    servers = opts.get("kafka.bootstrap.servers") or opts.get("bootstrap.servers")
    if not servers:
        raise ValueError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")
    return servers


def _bool(opts: dict[str, str], name: str, default: bool, shown: str) -> bool:
    value = opts.get(name)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise ValueError(f"Invalid value '{value}' for option '{shown}', must be true or false")
    return value.strip().lower() == "true"


def _positive_int(opts: dict[str, str], name: str, shown: str) -> int | None:
    value = opts.get(name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise ValueError(f"Invalid value '{value}' for option '{shown}', must be a positive integer")
    return number


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60000, "min": 60000, "h": 3600000, "d": 86400000}


def _duration_ms(opts: dict[str, str], name: str, default_ms: int, shown: str) -> int:
    value = opts.get(name)
    if value is None:
        return default_ms
    match = _DURATION.match(value)
    if not match:
        raise ValueError(f"Invalid value '{value}' for option '{shown}', must be a duration such as 30s, 15m, 1h")
    return int(match.group(1)) * _UNIT_MS[(match.group(2) or "ms").lower()]


def parse_partition_map(text: str, shown: str) -> dict[str, dict[int, int]]:
    """Spark's per-partition JSON, ``{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}``."""
    try:
        parsed = json.loads(text)
        result = {str(topic): {int(p): int(v) for p, v in parts.items()} for topic, parts in parsed.items()}
    except (ValueError, AttributeError, TypeError):
        raise ValueError(f"Expected e.g. {{\"topicA\":{{\"0\":23,\"1\":-1}},\"topicB\":{{\"0\":-2}}}}, got {text} "
                         f"(option '{shown}')") from None
    return result


@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends: 'earliest', 'latest', per-partition offsets, or timestamps (ms)."""
    kind: str  # "earliest" | "latest" | "offsets" | "timestamp" | "timestamps"
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)  # kind offsets/timestamps
    timestamp: int = -1  # kind timestamp: one for every partition


def _offset_spec(opts: dict[str, str], prefix: str, default: str) -> tuple[OffsetSpec, str]:
    """(spec, the option it came from); Spark's precedence: xTimestamp, xOffsetsByTimestamp, xOffsets."""
    ts = opts.get(f"{prefix}timestamp")
    if ts is not None:
        try:
            return OffsetSpec("timestamp", timestamp=int(ts)), f"{prefix}Timestamp"
        except ValueError:
            raise ValueError(f"Invalid value '{ts}' for option '{prefix}Timestamp', must be a number of ms") from None
    by_ts = opts.get(f"{prefix}offsetsbytimestamp")
    if by_ts is not None:
        return OffsetSpec("timestamps", parse_partition_map(by_ts, f"{prefix}OffsetsByTimestamp")), \
            f"{prefix}OffsetsByTimestamp"
    text = opts.get(f"{prefix}offsets", default).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower()), f"{prefix}Offsets"
    return OffsetSpec("offsets", parse_partition_map(text, f"{prefix}Offsets")), f"{prefix}Offsets"


def _check_batch_offsets(starting: OffsetSpec, ending: OffsetSpec) -> None:
    """KafkaSourceProvider.validateBatchOptions."""
    if starting.kind == "latest":
        raise ValueError("starting offset can't be latest for batch queries on Kafka")
    for tp_topic, parts in starting.offsets.items() if starting.kind == "offsets" else ():
        for p, off in parts.items():
            if off == LATEST:
                raise ValueError(f"startingOffsets for {tp_topic}-{p} can't be latest for batch queries on Kafka")
    if ending.kind == "earliest":
        raise ValueError("ending offset can't be earliest for batch queries on Kafka")
    for tp_topic, parts in ending.offsets.items() if ending.kind == "offsets" else ():
        for p, off in parts.items():
            if off == EARLIEST:
                raise ValueError(f"endingOffsets for {tp_topic}-{p} can't be earliest for batch queries on Kafka")


def _kafka_params(opts: dict[str, str], defaults: Mapping[str, Any], unsupported: Mapping[str, str],
                  accepts: Any) -> dict[str, Any]:
    """``kafka.*`` options (but the bootstrap servers) as our client's keyword arguments (dots become
    underscores); settings our client does not have are dropped with a warning, as Kafka's clients log
    unknown configs, and the ones Spark's source owns fail as in Spark. ``kafka.security.protocol``,
    ``kafka.sasl.*`` and ``kafka.ssl.*`` (Kafka's names) become the security keywords, with PEM files."""
    params: dict[str, Any] = _security_params(opts)
    for name, value in opts.items():
        if not name.startswith("kafka.") or name == "kafka.bootstrap.servers":
            continue
        if name[len("kafka."):].startswith(SECURITY_PROPERTY_PREFIXES):
            continue
        key = name[len("kafka."):]
        if key in unsupported:
            raise ValueError(unsupported[key])
        arg = key.replace(".", "_")
        if arg in ("isolation_level", "group_id"):
            continue  # the source handles these itself
        if arg not in defaults or not accepts(arg, value):
            log.warning("ignoring option '%s': not a setting of odradek's client", name)
            continue
        default = defaults[arg]
        params[arg] = int(value) if isinstance(default, int) and not isinstance(default, bool) and value.lstrip("-").isdigit() \
            else (value.lower() == "true") if isinstance(default, bool) else value
    return params


def _security_params(opts: dict[str, str]) -> dict[str, Any]:
    # Spark lower-cases option names; Kafka's security keys are lower case already (values keep their case).
    for name in unread_security_properties(opts, prefix="kafka."):
        log.warning("ignoring option '%s': not a setting of odradek's client", name)
    params = file_security_kwargs(opts, prefix="kafka.")
    return {} if params["security_protocol"] == "PLAINTEXT" else params


def security_of(params: Mapping[str, Any]) -> dict[str, Any]:
    """The security keywords among a client's params, for the other clients the source and sink open (Admin)."""
    return {k: v for k, v in params.items() if k in SECURITY_DEFAULTS}


def _consumer_accepts(arg: str, value: str) -> bool:
    return arg not in ("key_deserializer", "value_deserializer", "bootstrap_servers")


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    strategy: str  # assign | subscribe | subscribepattern
    topics: tuple[str, ...] = ()  # subscribe
    pattern: str = ""  # subscribePattern
    assigned: tuple[tuple[str, int], ...] = ()  # assign
    starting: OffsetSpec = OffsetSpec("earliest")
    ending: OffsetSpec = OffsetSpec("latest")
    by_timestamp_strategy: str = "error"  # startingOffsetsByTimestampStrategy: error | latest
    fail_on_data_loss: bool = True
    include_headers: bool = False
    read_committed: bool = False
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    min_partitions: int | None = None
    poll_timeout_ms: int = 120000
    commit_group: str | None = None  # commitOffsetsToGroup: progress committed as this group's offsets
    consumer_params: dict[str, Any] = field(default_factory=dict)


def parse_source_options(options: Mapping[str, Any], streaming: bool) -> SourceOptions:
    opts = lower_keys(options)
    servers = _bootstrap(opts)
    given = [s for s in STRATEGIES if s in opts]
    if not given:
        raise ValueError(f"One of the following options must be specified for Kafka source: {STRATEGY_NAMES}. "
                         f"See the docs for more details.")
    if len(given) > 1:
        raise ValueError(f"Only one of the following options can be specified for Kafka source: {STRATEGY_NAMES}. "
                         f"See the docs for more details.")
    strategy, value = given[0], opts[given[0]]
    topics: tuple[str, ...] = ()
    assigned: tuple[tuple[str, int], ...] = ()
    pattern = ""
    if strategy == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ValueError(f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'")
    elif strategy == "subscribepattern":
        pattern = value.strip()
        if not pattern:
            raise ValueError(f"Pattern to subscribe is empty as specified value for option 'subscribePattern' "
                             f"is '{value}'")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"Invalid value '{value}' for option 'subscribePattern': {exc}") from None
    else:
        try:
            parsed = json.loads(value)
            assigned = tuple(sorted((str(t), int(p)) for t, ps in parsed.items() for p in ps))
        except (ValueError, AttributeError, TypeError):
            raise ValueError(f"Expected e.g. {{\"topicA\":[0,1],\"topicB\":[0,1]}}, got {value} "
                             f"(option 'assign')") from None
        if not assigned:
            raise ValueError(f"No topicpartitions to assign as specified value for option 'assign' is '{value}'")

    starting, _ = _offset_spec(opts, "starting", "latest" if streaming else "earliest")
    ending, ending_from = _offset_spec(opts, "ending", "latest")
    if streaming:
        for name in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"):
            if name in opts:
                raise ValueError("ending offset not valid in streaming queries")
    else:
        _check_batch_offsets(starting, ending)
        for name, shown in (("maxoffsetspertrigger", "maxOffsetsPerTrigger"),
                            ("minoffsetspertrigger", "minOffsetsPerTrigger")):
            if name in opts:
                log.warning("%s option ignored in batch queries", shown)
    strategy_option = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy_option not in ("error", "latest"):
        raise ValueError(f"Invalid value '{strategy_option}' for option 'startingOffsetsByTimestampStrategy', "
                         f"must be error or latest")
    isolation = opts.get("kafka.isolation.level", "read_uncommitted").strip().lower()
    if isolation not in ("read_uncommitted", "read_committed"):
        raise ValueError(f"Invalid value '{isolation}' for option 'kafka.isolation.level', "
                         f"must be read_uncommitted or read_committed")
    max_per_trigger = _positive_int(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger")
    min_per_trigger = _positive_int(opts, "minoffsetspertrigger", "minOffsetsPerTrigger")
    if max_per_trigger and min_per_trigger and min_per_trigger > max_per_trigger:
        raise ValueError(f"The value of minOffsetPerTrigger({min_per_trigger}) is higher than the "
                         f"maxOffsetsPerTrigger({max_per_trigger}).")
    return SourceOptions(
        bootstrap_servers=servers, strategy=strategy, topics=topics, pattern=pattern, assigned=assigned,
        starting=starting, ending=ending, by_timestamp_strategy=strategy_option,
        fail_on_data_loss=_bool(opts, "failondataloss", True, "failOnDataLoss"),
        include_headers=_bool(opts, "includeheaders", False, "includeHeaders"),
        read_committed=isolation == "read_committed",
        max_offsets_per_trigger=max_per_trigger, min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=_duration_ms(opts, "maxtriggerdelay", 15 * 60 * 1000, "maxTriggerDelay"),
        min_partitions=_positive_int(opts, "minpartitions", "minPartitions"),
        poll_timeout_ms=_positive_int(opts, "kafkaconsumer.polltimeoutms", "kafkaConsumer.pollTimeoutMs") or 120000,
        commit_group=opts.get("commitoffsetstogroup") or None,
        consumer_params=_kafka_params(opts, CONSUMER_DEFAULTS, _UNSUPPORTED_CONSUMER_OPTIONS, _consumer_accepts),
    )


@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None
    exactly_once: bool
    transactional_id_prefix: str | None
    producer_params: dict[str, Any] = field(default_factory=dict)


def _producer_accepts(arg: str, value: str) -> bool:
    if arg in ("key_serializer", "value_serializer", "bootstrap_servers", "transactional_id", "partitioner"):
        return False
    try:
        producer_config({arg: int(value) if value.lstrip("-").isdigit() else value}, whole=False)
    except (KafkaConfigurationError, ValueError, TypeError):
        return False
    return True


def parse_sink_options(options: Mapping[str, Any]) -> SinkOptions:
    opts = lower_keys(options)
    servers = opts.get("kafka.bootstrap.servers") or opts.get("bootstrap.servers")
    if not servers:
        raise ValueError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer")
    params = _kafka_params(opts, producer_config({}), _UNSUPPORTED_PRODUCER_OPTIONS, _producer_accepts)
    try:  # the rules between settings (delivery.timeout.ms >= linger.ms + request.timeout.ms), as the producer would
        producer_config(dict(params))
    except KafkaConfigurationError as exc:
        raise ValueError(f"Invalid producer options: {exc}") from None
    exactly_once = _bool(opts, "exactlyonce", True, "exactlyOnce")
    if exactly_once and params.get("enable_idempotence") is False:
        raise ValueError("Option 'exactlyOnce' needs an idempotent producer: drop 'kafka.enable.idempotence' "
                         "or set 'exactlyOnce' to false")
    return SinkOptions(bootstrap_servers=servers, topic=(opts.get("topic") or "").strip() or None,
                       exactly_once=exactly_once,
                       transactional_id_prefix=opts.get("transactionalidprefix") or None,
                       producer_params=params)
