"""The table of broker and topic configuration keys: type, default, validator and a one-line doc.

Key names and defaults are those of Apache Kafka 2.8 (`KafkaConfig` / `LogConfig`) for a ZooKeeper-mode
broker. Keys starting with `odradek.` are Odradek's own and have no Kafka counterpart.
Parsing, precedence and the `KafkaConfig` object live in `odradek.broker.config`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable

from ..protocol.acl import parse_principal

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1
DOUBLE_MAX = 1.7976931348623157e308

# authorizer.class.name: the names under which Kafka 2.8 knows its ACL authorizer (security/acl_authorizer.py)
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
LEGACY_ACL_AUTHORIZER = "kafka.security.auth.SimpleAclAuthorizer"  # Kafka wraps it; same behaviour here
AUTHORIZER_CLASSES = (ACL_AUTHORIZER, LEGACY_ACL_AUTHORIZER)
# replica.selector.class (KIP-392): the one selector Kafka 2.8 ships (broker/replica_selector.py)
RACK_AWARE_REPLICA_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


class Invalid(Exception):
    """Raised by a parser or validator; the argument says what the key accepts ("an integer >= 1")."""


class Type(Enum):
    INT = "int"
    LONG = "long"
    SHORT = "short"
    DOUBLE = "double"
    BOOLEAN = "boolean"
    STRING = "string"
    LIST = "list"


_BOUNDS = {Type.INT: (INT_MIN, INT_MAX), Type.LONG: (LONG_MIN, LONG_MAX), Type.SHORT: (SHORT_MIN, SHORT_MAX)}


@dataclass(frozen=True)
class Range:
    lo: float | None = None
    hi: float | None = None

    def describe(self, kind: str) -> str:
        if self.lo is not None and self.hi is not None:
            return f"{kind} in [{_fmt(self.lo)}, {_fmt(self.hi)}]"
        if self.lo is not None:
            return f"{kind} >= {_fmt(self.lo)}"
        if self.hi is not None:
            return f"{kind} <= {_fmt(self.hi)}"
        return kind

    def check(self, v: float) -> bool:
        return (self.lo is None or v >= self.lo) and (self.hi is None or v <= self.hi)


@dataclass(frozen=True)
class OneOf:
    values: tuple[str, ...]


@dataclass(frozen=True)
class NonEmpty:
    pass


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e18 else str(v)


def at_least(n: float) -> Range:
    return Range(lo=n)


def between(lo: float, hi: float) -> Range:
    return Range(lo=lo, hi=hi)


@dataclass(frozen=True)
class Key:
    name: str
    type: Type
    default: Any  # a parsed value; None = no default (nullable); REQUIRED = must be given
    doc: str
    validator: Range | OneOf | NonEmpty | Callable[[Any], None] | None = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def expected(self) -> str:
        """What the key accepts, as the tail of an error message."""
        v = self.validator
        if self.type in _BOUNDS or self.type is Type.DOUBLE:
            kind = "a number" if self.type is Type.DOUBLE else "an integer"
            if isinstance(v, Range):
                return v.describe(kind)
            if self.type is Type.DOUBLE:
                return kind
            lo, hi = _BOUNDS[self.type]
            return Range(lo, hi).describe(kind)
        if self.type is Type.BOOLEAN:
            return "true or false"
        if isinstance(v, OneOf):
            if self.type is Type.LIST:
                return "a comma-separated list of: " + ", ".join(v.values)
            return "one of: " + ", ".join(v.values)
        if isinstance(v, NonEmpty):
            return "a non-empty " + ("list" if self.type is Type.LIST else "string")
        return "a comma-separated list" if self.type is Type.LIST else "a string"

    def parse(self, raw: str) -> Any:
        """Parse and validate one raw string value; raises Invalid(expected) on failure."""
        s = raw.strip()
        t = self.type
        if t in _BOUNDS:
            try:
                val: Any = int(s, 10)
            except ValueError:
                raise Invalid(self.expected()) from None
            lo, hi = _BOUNDS[t]
            if not lo <= val <= hi:
                raise Invalid(self.expected())
        elif t is Type.DOUBLE:
            try:
                val = float(s)
            except ValueError:
                raise Invalid(self.expected()) from None
            if val != val:  # NaN
                raise Invalid(self.expected())
        elif t is Type.BOOLEAN:
            low = s.lower()
            if low not in ("true", "false"):
                raise Invalid(self.expected())
            val = low == "true"
        elif t is Type.LIST:
            val = [p.strip() for p in s.split(",") if p.strip()]
        else:
            val = s
            if self.default is None and s == "":
                return None  # a blank nullable string means "not set"
        self.check(val)
        return val

    def check(self, val: Any) -> None:
        v = self.validator
        if v is None or val is None:
            return
        if isinstance(v, Range):
            if not v.check(val):
                raise Invalid(self.expected())
        elif isinstance(v, OneOf):
            items = val if isinstance(val, list) else [val]
            if any(i not in v.values for i in items):
                raise Invalid(self.expected())
        elif isinstance(v, NonEmpty):
            if not val:
                raise Invalid(self.expected())
        else:
            v(val)


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

I, L, S, D, B, STR, LIST = Type.INT, Type.LONG, Type.SHORT, Type.DOUBLE, Type.BOOLEAN, Type.STRING, Type.LIST

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")
# log.message.format.version / inter.broker.protocol.version values a 2.8 broker accepts (ApiVersion.scala).
_VERSIONS = ("0.8.0", "0.8.1", "0.8.2", "0.9.0", "0.10.0", "0.10.0-IV0", "0.10.0-IV1", "0.10.1", "0.10.1-IV0",
             "0.10.1-IV1", "0.10.1-IV2", "0.10.2", "0.10.2-IV0", "0.11.0", "0.11.0-IV0", "0.11.0-IV1",
             "0.11.0-IV2", "1.0", "1.0-IV0", "1.1", "1.1-IV0", "2.0", "2.0-IV0", "2.0-IV1", "2.1", "2.1-IV0",
             "2.1-IV1", "2.1-IV2", "2.2", "2.2-IV0", "2.2-IV1", "2.3", "2.3-IV0", "2.3-IV1", "2.4", "2.4-IV0",
             "2.4-IV1", "2.5", "2.5-IV0", "2.6", "2.6-IV0", "2.7", "2.7-IV0", "2.7-IV1", "2.7-IV2", "2.8",
             "2.8-IV0", "2.8-IV1")


def _version(v: str) -> None:
    # Kafka also accepts patch versions such as 2.8.0 (the patch is ignored).
    parts = v.split(".")
    base = ".".join(parts[:2]) if len(parts) == 3 and parts[0] != "0" and parts[2].isdigit() else v
    if base not in _VERSIONS and v not in _VERSIONS:
        raise Invalid("a Kafka version such as 2.8 or 2.8-IV1")


def _message_format_version(v: str) -> None:
    # Formats before v2 are served by converting (issue 13), never stored: a setting that would store them is refused.
    _version(v)
    if v.startswith(("0.8", "0.9", "0.10")):
        raise Invalid("a Kafka version of 0.11.0 or later (the log always writes message format v2; "
                      "older clients' formats are converted)")


def _no_reauthentication(v: int) -> None:
    if v != 0:
        raise Invalid("0: Odradek does not re-authenticate connections (KIP-368 is not implemented)")


def _replica_selector_class(name: str | None) -> None:
    if name and name != RACK_AWARE_REPLICA_SELECTOR:
        raise Invalid(f"empty (consumers fetch from the leader) or {RACK_AWARE_REPLICA_SELECTOR}")


def _authorizer_class(name: str) -> None:
    if name and name not in AUTHORIZER_CLASSES:
        raise Invalid(f"empty (no authorizer) or {' or '.join(AUTHORIZER_CLASSES)}")


def parse_super_users(text: str | None) -> frozenset[str]:
    """``User:alice;User:bob`` -> {'User:alice', 'User:bob'} (Kafka splits at ';' and trims; Java's
    split drops trailing empty parts). A part that is not a principal raises ValueError."""
    parts = (text or "").split(";")
    while parts and not parts[-1].strip():
        parts.pop()
    users = set()
    for part in parts:
        principal_type, name = parse_principal(part.strip())
        users.add(f"{principal_type}:{name}")
    return frozenset(users)


def _super_users(text: str) -> None:
    try:
        parse_super_users(text)
    except ValueError:
        raise Invalid("principals separated by ';', each as principalType:principalName (User:alice)") from None


K = Key
_BROKER_KEYS: list[Key] = [
    # ZooKeeper
    K("zookeeper.connect", STR, REQUIRED, "ZooKeeper connection string host:port[,host:port...][/chroot]"),
    K("zookeeper.session.timeout.ms", I, 18000, "ZooKeeper session timeout", at_least(1)),
    K("zookeeper.connection.timeout.ms", I, None, "Max wait to connect to ZooKeeper; unset = session timeout",
      at_least(1)),
    K("zookeeper.max.in.flight.requests", I, 10, "Max unacknowledged requests sent to ZooKeeper", at_least(1)),
    K("zookeeper.set.acl", B, False, "Set secure ACLs on the znodes the broker creates"),
    # General
    K("broker.id", I, -1, "Broker id; -1 = generate one from the ZooKeeper sequence /brokers/seqid"),
    K("broker.id.generation.enable", B, True, "Allow automatic broker id generation when broker.id is -1"),
    K("reserved.broker.max.id", I, 1000, "Highest id that may be configured; generated ids start above it",
      at_least(0)),
    K("broker.rack", STR, None, "Rack of the broker, used for rack-aware replica assignment"),
    K("replica.selector.class", STR, None, "Where a consumer with a client.rack is sent to fetch (KIP-392); "
      "none: the leader", _replica_selector_class),
    K("message.max.bytes", I, 1048588, "Largest record batch size allowed (topic: max.message.bytes)",
      at_least(0)),
    K("num.network.threads", I, 3, "Threads receiving requests and sending responses", at_least(1)),
    K("num.io.threads", I, 8, "Threads processing requests", at_least(1)),
    K("background.threads", I, 10, "Threads for background processing tasks", at_least(1)),
    K("queued.max.requests", I, 500, "Queued requests allowed before network threads stop reading",
      at_least(1)),
    K("queued.max.request.bytes", L, -1, "Queued bytes allowed before no more requests are read; -1 = no limit"),
    K("request.timeout.ms", I, 30000, "Max time the broker's own clients wait for a response", at_least(0)),
    K("connections.max.idle.ms", L, 600000, "Idle connections are closed after this long"),
    K("max.connections", I, INT_MAX, "Max connections in the broker at any time", at_least(0)),
    K("max.connections.per.ip", I, INT_MAX, "Max connections allowed from one IP address", at_least(0)),
    K("max.connections.per.ip.overrides", STR, "", "Per-IP or hostname overrides: host:count,..."),
    K("delete.topic.enable", B, True, "Allow topics to be deleted"),
    K("auto.create.topics.enable", B, True, "Create a topic when metadata for an unknown topic is requested"),
    K("fetch.max.bytes", I, 57671680, "Max bytes returned for one fetch request", at_least(1024)),
    K("max.incremental.fetch.session.cache.slots", I, 1000, "Max incremental fetch sessions kept", at_least(0)),
    K("inter.broker.protocol.version", STR, "2.8-IV1", "Inter-broker protocol version", _version),
    K("metrics.num.samples", I, 2, "Samples kept to compute metrics", at_least(1)),
    K("metrics.sample.window.ms", L, 30000, "Window over which a metric sample is computed", at_least(1)),
    # Socket server
    K("listeners", STR, "PLAINTEXT://:9092", "Listeners NAME://host:port,...; empty host = all interfaces",
      NonEmpty()),
    K("advertised.listeners", STR, None, "Listeners published in ZooKeeper for clients; unset = listeners"),
    K("listener.security.protocol.map", STR,
      "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
      "Listener name to security protocol map NAME:PROTOCOL,...", NonEmpty()),
    K("inter.broker.listener.name", STR, None, "Listener used between brokers; unset = from "
      "security.inter.broker.protocol"),
    K("security.inter.broker.protocol", STR, "PLAINTEXT", "Security protocol used between brokers",
      OneOf(SECURITY_PROTOCOLS)),
    K("socket.send.buffer.bytes", I, 102400, "SO_SNDBUF of server sockets; -1 = OS default"),
    K("socket.receive.buffer.bytes", I, 102400, "SO_RCVBUF of server sockets; -1 = OS default"),
    K("socket.request.max.bytes", I, 104857600, "Largest request the broker accepts", at_least(1)),
    # Security: TLS and SASL of the listeners (broker/security/listener_config.py). Each may also be set per
    # listener as listener.name.<listener>.<key>; Java-only knobs (key/trust manager algorithms, providers) are
    # accepted at their defaults and warned about otherwise.
    K("ssl.protocol", STR, "TLSv1.3", "TLS protocol of the SSL context"),
    K("ssl.enabled.protocols", LIST, ["TLSv1.2", "TLSv1.3"], "TLS protocol versions enabled"),
    K("ssl.cipher.suites", LIST, [], "Cipher suites (IANA or OpenSSL names); empty = the library's defaults"),
    K("ssl.keystore.type", STR, "JKS", "Key store format; only PEM is read"),
    K("ssl.keystore.location", STR, None, "PEM file with the private key (PKCS#8) and the certificate chain"),
    K("ssl.keystore.password", STR, None, "Key store password (not allowed with PEM)"),
    K("ssl.keystore.certificate.chain", STR, None, "The certificate chain as PEM text"),
    K("ssl.keystore.key", STR, None, "The private key as PEM text"),
    K("ssl.key.password", STR, None, "Password of an encrypted private key"),
    K("ssl.truststore.type", STR, "JKS", "Trust store format; only PEM is read"),
    K("ssl.truststore.location", STR, None, "PEM file of trusted CA certificates"),
    K("ssl.truststore.password", STR, None, "Trust store password (not allowed with PEM)"),
    K("ssl.truststore.certificates", STR, None, "Trusted CA certificates as PEM text"),
    K("ssl.client.auth", STR, "none", "Client certificates: none, requested or required",
      OneOf(("none", "requested", "required"))),
    K("ssl.endpoint.identification.algorithm", STR, "https", "https: the broker's clients verify host names"),
    K("ssl.principal.mapping.rules", STR, "DEFAULT", "Rules mapping a certificate's subject to a principal name"),
    K("ssl.keymanager.algorithm", STR, "SunX509", "Java only; ignored"),
    K("ssl.trustmanager.algorithm", STR, "PKIX", "Java only; ignored"),
    K("ssl.secure.random.implementation", STR, None, "Java only; ignored"),
    K("ssl.provider", STR, None, "Java only; ignored"),
    K("ssl.engine.factory.class", STR, None, "Java only; must be unset"),
    K("sasl.enabled.mechanisms", LIST, ["GSSAPI"], "SASL mechanisms of SASL listeners (PLAIN, SCRAM-SHA-256, "
      "SCRAM-SHA-512)"),
    K("sasl.mechanism.inter.broker.protocol", STR, "GSSAPI", "SASL mechanism brokers authenticate with"),
    K("connections.max.reauth.ms", L, 0, "Re-authentication interval (KIP-368); only 0 (off) is supported",
      _no_reauthentication),
    K("sasl.server.max.receive.size", I, 524288, "Largest request a SASL connection may send before it has "
      "authenticated (per listener too)", at_least(1)),
    K("connection.failed.authentication.delay.ms", I, 100, "Delay before closing a connection whose "
      "authentication failed", at_least(0)),


    # Authorization (Kafka's AclAuthorizer; the last two keys are the authorizer's own)
    K("authorizer.class.name", STR, "", "Authorizer; empty = none (everything allowed)", _authorizer_class),
    K("super.users", STR, "", "Principals allowed everything, 'User:alice;User:bob'", _super_users),
    K("allow.everyone.if.no.acl.found", B, False, "Allow access to resources that have no ACL"),
    # Log
    K("log.dirs", LIST, None, "Directories holding log data; unset = log.dir"),
    K("log.dir", STR, "/tmp/kafka-logs", "Directory holding log data (used when log.dirs is unset)", NonEmpty()),
    K("num.partitions", I, 1, "Default number of partitions per topic", at_least(1)),
    K("log.segment.bytes", I, 1073741824, "Max size of one log segment file", at_least(14)),
    K("log.roll.ms", L, None, "Max age of a segment before it is rolled; unset = log.roll.hours", at_least(1)),
    K("log.roll.hours", I, 168, "Max age of a segment before it is rolled, in hours", at_least(1)),
    K("log.roll.jitter.ms", L, None, "Max jitter subtracted from the roll time; unset = log.roll.jitter.hours",
      at_least(0)),
    K("log.roll.jitter.hours", I, 0, "Max jitter subtracted from the roll time, in hours", at_least(0)),
    K("log.retention.ms", L, None, "Time-based retention; -1 = no limit; unset = log.retention.minutes"),
    K("log.retention.minutes", I, None, "Time-based retention in minutes; unset = log.retention.hours"),
    K("log.retention.hours", I, 168, "Time-based retention in hours"),
    K("log.retention.bytes", L, -1, "Max size of a partition's log before old segments go; -1 = no limit"),
    K("log.retention.check.interval.ms", L, 300000, "How often retention is checked", at_least(1)),
    K("log.cleanup.policy", LIST, ["delete"], "Default cleanup policy: delete, compact or both",
      OneOf(CLEANUP_POLICIES)),
    K("log.cleaner.enable", B, True, "Run the log cleaner (needed for compacted topics)"),
    K("log.cleaner.threads", I, 1, "Log cleaner threads", at_least(0)),
    K("log.cleaner.dedupe.buffer.size", L, 134217728, "Memory for log deduplication across cleaner threads"),
    K("log.cleaner.io.buffer.size", I, 524288, "I/O buffer memory across cleaner threads", at_least(0)),
    K("log.cleaner.io.buffer.load.factor", D, 0.9, "Load factor of the deduplication buffer"),
    K("log.cleaner.io.max.bytes.per.second", D, DOUBLE_MAX, "Cleaner I/O throttle"),
    K("log.cleaner.backoff.ms", L, 15000, "Sleep when there is nothing to clean", at_least(0)),
    K("log.cleaner.min.cleanable.ratio", D, 0.5, "Min dirty ratio before a log is cleaned", between(0, 1)),
    K("log.cleaner.delete.retention.ms", L, 86400000, "How long delete tombstones are kept", at_least(0)),
    K("log.cleaner.min.compaction.lag.ms", L, 0, "Min time a record stays uncompacted", at_least(0)),
    K("log.cleaner.max.compaction.lag.ms", L, LONG_MAX, "Max time a record stays uncompacted", at_least(1)),
    K("log.index.size.max.bytes", I, 10485760, "Max size of an offset index file", at_least(4)),
    K("log.index.interval.bytes", I, 4096, "Bytes between offset index entries", at_least(0)),
    K("log.flush.interval.messages", L, LONG_MAX, "Messages accumulated before a flush", at_least(1)),
    K("log.flush.interval.ms", L, None, "Max time a message waits before a flush; unset = "
      "log.flush.scheduler.interval.ms"),
    K("log.flush.scheduler.interval.ms", L, LONG_MAX, "How often the flusher checks for logs to flush"),
    K("log.flush.offset.checkpoint.interval.ms", I, 60000, "How often the recovery point is checkpointed",
      at_least(0)),
    K("log.flush.start.offset.checkpoint.interval.ms", I, 60000, "How often log start offsets are checkpointed",
      at_least(0)),
    K("log.segment.delete.delay.ms", L, 60000, "Wait before a deleted segment file is removed", at_least(0)),
    K("log.preallocate", B, False, "Preallocate segment files"),
    K("log.message.format.version", STR, "2.8-IV1", "Message format version appended to logs",
      _message_format_version),
    K("log.message.timestamp.type", STR, "CreateTime", "Timestamp stored in records",
      OneOf(TIMESTAMP_TYPES)),
    K("log.message.timestamp.difference.max.ms", L, LONG_MAX, "Max broker/record timestamp difference",
      at_least(0)),
    K("log.message.downconversion.enable", B, True, "Down-convert records for old fetchers"),
    K("num.recovery.threads.per.data.dir", I, 1, "Threads per data dir for recovery and shutdown flush",
      at_least(1)),
    K("min.insync.replicas", I, 1, "Min in-sync replicas for acks=all writes", at_least(1)),
    K("compression.type", STR, "producer", "Final compression of topic data; producer = keep the producer's",
      OneOf(COMPRESSION_TYPES)),
    # Replication
    K("default.replication.factor", I, 1, "Default replication factor of auto-created topics", at_least(1)),
    K("unclean.leader.election.enable", B, False, "Allow out-of-sync replicas to become leader"),
    K("controller.socket.timeout.ms", I, 30000, "Socket timeout of controller-to-broker channels"),
    K("replica.lag.time.max.ms", L, 30000, "A follower not caught up for this long leaves the ISR"),
    K("replica.socket.timeout.ms", I, 30000, "Socket timeout of replica fetch requests"),
    K("replica.socket.receive.buffer.bytes", I, 65536, "Receive buffer of replica fetch connections"),
    K("replica.fetch.max.bytes", I, 1048576, "Bytes fetched per partition by a follower", at_least(0)),
    K("replica.fetch.wait.max.ms", I, 500, "Max wait of a follower fetch request"),
    K("replica.fetch.min.bytes", I, 1, "Min bytes for a follower fetch response"),
    # Replication throttling (broker/replication_quota.py). The two rates are dynamic-only in Kafka 2.8
    # (DynamicConfig.Broker); we also take them from the static config and the cluster default.
    K("leader.replication.throttled.rate", L, LONG_MAX, "Bytes/s a leader sends to throttled replicas",
      at_least(0)),
    K("follower.replication.throttled.rate", L, LONG_MAX, "Bytes/s a follower fetches for throttled replicas",
      at_least(0)),
    K("replication.quota.window.num", I, 11, "Samples kept for replication quotas", at_least(1)),
    K("replication.quota.window.size.seconds", I, 1, "Time span of each replication quota sample", at_least(1)),
    # Moves of replicas between this broker's log dirs (broker/replica_log_dir_mover.py): the rate is
    # dynamic-only in Kafka 2.8 too; kafka-reassign-partitions' --replica-alter-log-dirs-throttle sets it.
    K("replica.alter.log.dirs.io.max.bytes.per.second", L, LONG_MAX, "Bytes/s copied by moves of replicas "
      "between this broker's log dirs", at_least(0)),
    K("alter.log.dirs.replication.quota.window.num", I, 11, "Samples kept for the log dir move quota",
      at_least(1)),
    K("alter.log.dirs.replication.quota.window.size.seconds", I, 1, "Time span of each log dir move quota "
      "sample", at_least(1)),
    # Client quotas (broker/quota/). The two static defaults are deprecated in Kafka 2.8 (dynamic <default>
    # quotas replace them) but still honoured, at the client-id level.
    K("quota.producer.default", L, LONG_MAX, "Deprecated: producer bytes/s of a client-id without a quota",
      at_least(1)),
    K("quota.consumer.default", L, LONG_MAX, "Deprecated: consumer bytes/s of a client-id without a quota",
      at_least(1)),
    K("quota.window.num", I, 11, "Samples kept for client quotas", at_least(1)),
    K("quota.window.size.seconds", I, 1, "Time span of each client quota sample", at_least(1)),
    K("replica.fetch.backoff.ms", I, 1000, "Sleep after a partition fetch error", at_least(0)),
    K("replica.fetch.response.max.bytes", I, 10485760, "Max bytes of a whole follower fetch response",
      at_least(0)),
    K("num.replica.fetchers", I, 1, "Fetchers (connections, fetch sessions) per source broker", at_least(1)),
    K("replica.high.watermark.checkpoint.interval.ms", L, 5000, "How often high watermarks are saved"),
    K("fetch.purgatory.purge.interval.requests", I, 1000, "Purge interval of the fetch purgatory"),
    K("producer.purgatory.purge.interval.requests", I, 1000, "Purge interval of the produce purgatory"),
    K("delete.records.purgatory.purge.interval.requests", I, 1, "Purge interval of the delete-records purgatory"),
    K("auto.leader.rebalance.enable", B, True, "Move leadership back to preferred replicas periodically"),
    K("leader.imbalance.per.broker.percentage", I, 10, "Allowed leader imbalance per broker, in percent"),
    K("leader.imbalance.check.interval.seconds", L, 300, "How often leader imbalance is checked"),
    # Controlled shutdown
    K("controlled.shutdown.enable", B, True, "Move leadership away before shutting down"),
    K("controlled.shutdown.max.retries", I, 3, "Controlled shutdown attempts before an unclean shutdown"),
    K("controlled.shutdown.retry.backoff.ms", L, 5000, "Wait between controlled shutdown attempts"),
    # Group coordinator
    K("group.min.session.timeout.ms", I, 6000, "Min session timeout a consumer may ask for"),
    K("group.max.session.timeout.ms", I, 1800000, "Max session timeout a consumer may ask for"),
    K("group.initial.rebalance.delay.ms", I, 3000, "Wait for more members before the first rebalance"),
    K("group.max.size", I, INT_MAX, "Max members of one consumer group", at_least(1)),
    # Offset management
    K("offset.metadata.max.bytes", I, 4096, "Max size of the metadata of an offset commit"),
    K("offsets.load.buffer.size", I, 5242880, "Batch size reading the offsets topic into the cache", at_least(1)),
    K("offsets.topic.replication.factor", S, 3, "Replication factor of __consumer_offsets", at_least(1)),
    K("offsets.topic.num.partitions", I, 50, "Partitions of __consumer_offsets", at_least(1)),
    K("offsets.topic.segment.bytes", I, 104857600, "Segment size of __consumer_offsets", at_least(1)),
    K("offsets.topic.compression.codec", I, 0, "Compression codec of the offsets topic (0 = none)"),
    K("offsets.retention.minutes", I, 10080, "Committed offsets of empty groups are kept this long",
      at_least(1)),
    K("offsets.retention.check.interval.ms", L, 600000, "How often stale offsets are checked", at_least(1)),
    K("offsets.commit.timeout.ms", I, 5000, "Max wait for an offset commit to be replicated", at_least(1)),
    K("offsets.commit.required.acks", S, -1, "Acks required before an offset commit is accepted"),
    # Transactions
    K("transactional.id.expiration.ms", I, 604800000, "Idle transactional ids expire after this long",
      at_least(1)),
    K("transaction.max.timeout.ms", I, 900000, "Max transaction timeout a producer may ask for", at_least(1)),
    K("transaction.state.log.load.buffer.size", I, 5242880, "Batch size reading the transaction log",
      at_least(1)),
    K("transaction.state.log.replication.factor", S, 3, "Replication factor of __transaction_state",
      at_least(1)),
    K("transaction.state.log.num.partitions", I, 50, "Partitions of __transaction_state", at_least(1)),
    K("transaction.state.log.segment.bytes", I, 104857600, "Segment size of __transaction_state", at_least(1)),
    K("transaction.state.log.min.isr", I, 2, "min.insync.replicas of __transaction_state", at_least(1)),
    K("transaction.abort.timed.out.transaction.cleanup.interval.ms", I, 10000,
      "How often timed-out transactions are rolled back", at_least(1)),
    K("transaction.remove.expired.transaction.cleanup.interval.ms", I, 3600000,
      "How often expired transactional ids are removed", at_least(1)),
    # Odradek's own (no Kafka counterpart)
    K("odradek.metrics.port", I, -1, "Odradek only: port of the Prometheus /metrics endpoint; -1 = off",
      between(-1, 65535)),
    K("odradek.metrics.host", STR, "", "Odradek only: address the /metrics endpoint binds; empty = every "
      "interface, as the JMX exporter agent without a host"),
    K("metrics.port", I, -1, "Odradek only: the /metrics port when odradek.metrics.port is not set (the name "
      "the Docker image uses: KAFKA_METRICS_PORT)", between(-1, 65535)),
    K("metrics.host", STR, "", "Odradek only: the /metrics address when odradek.metrics.host is not set "
      "(KAFKA_METRICS_HOST in the Docker image); empty = every interface"),
    K("odradek.state.change.log.dir", STR, None, "Odradek only: directory of state-change.log (Kafka's log4j "
      "logs/ directory); unset = the parent of the first log dir"),
    K("odradek.log.cleaner.isolation", STR, "process", "Odradek only: where the log cleaner's per-record work "
      "runs: process (a worker process per cleaner thread) or thread (inside the broker)",
      OneOf(("process", "thread"))),
    K("odradek.log.dir.free.space.warning.bytes", I, 1 << 30, "Odradek only: a log dir whose filesystem has "
      "less free space than this gets one WARNING naming it and its free space, once per fall below (checked "
      "every 5 s), so the operator hears of a filling disk before writes fail and the dir goes offline; 0 = off",
      at_least(0)),
]
BROKER_KEYS: dict[str, Key] = {k.name: k for k in _BROKER_KEYS}

# Real Kafka keys (or prefixes) Odradek does not implement: reported as unsupported, not as typos.
UNSUPPORTED_PREFIXES = ("ssl.", "sasl.", "zookeeper.ssl.", "zookeeper.clientCnxnSocket",
                        "authorizer.", "principal.builder.class", "security.providers",
                        "quota.", "client.quota.",
                        "metric.reporters", "kafka.metrics.", "metrics.recording.level", "create.topic.policy.",
                        "alter.config.policy.", "password.encoder.", "delegation.token.",
                        "host.name", "port", "advertised.host.name", "advertised.port", "process.roles",
                        "node.id", "controller.", "metadata.", "client.",
                        "max.connection.creation.rate", "num.quota.samples", "num.replica.alter.log.dirs.threads",
                        "zookeeper.sync.time.ms", "broker.heartbeat.", "broker.session.")

def is_unsupported(key: str) -> bool:
    return any(key == p or (p.endswith(".") and key.startswith(p)) for p in UNSUPPORTED_PREFIXES)


# Security settings Odradek does not implement (TLS to ZooKeeper, znode ACLs, a custom principal builder,
# delegation tokens): a broker given one refuses to start (fail closed) rather than run without the protection
# it asks for. A blank or false value asks for nothing. (zookeeper.set.acl=true is refused by KafkaConfig.)
FAIL_CLOSED = ("zookeeper.ssl.client.enable", "principal.builder.class", "delegation.token.master.key",
               "delegation.token.secret.key")


def is_fail_closed(key: str, value: str) -> bool:
    return key in FAIL_CLOSED and value.strip().lower() not in ("", "false")


# Real Kafka keys that parse and validate but have no effect here: warned about once, by name, at start-up,
# when set to something other than what the broker does anyway. key -> (the value it behaves as, or None:
# whatever is set; what the broker does instead).
NOT_IMPLEMENTED: dict[str, tuple[Any, str]] = {
    "log.preallocate": (False, "segment files are never preallocated (it matters on Windows' NTFS only)"),
    "replica.socket.receive.buffer.bytes": (None, "follower connections keep the operating system's buffer size"),
    "zookeeper.max.in.flight.requests": (None, "ZooKeeper requests are bounded by the broker's executor threads"),
    "offsets.topic.compression.codec": (0, "offset commits are written uncompressed"),
    "metrics.num.samples": (None, "metrics keep their own windows (request timings: 1028-sample reservoirs)"),
    "metrics.sample.window.ms": (None, "metrics keep their own windows (request timings: 1028-sample reservoirs)"),
}


def not_implemented(key: str, value: Any) -> str | None:
    """What the broker does instead of ``key=value``, or None when the setting works (or changes nothing)."""
    if key == "inter.broker.protocol.version":
        return None if str(value).startswith("2.8") else "brokers always speak Kafka 2.8's inter-broker protocol"
    entry = NOT_IMPLEMENTED.get(key)
    if entry is None or (entry[0] is not None and value == entry[0]):
        return None
    return entry[1]


def _throttled(val: list[str]) -> None:
    if val == ["*"]:
        return
    for item in val:
        p, _, b = item.partition(":")
        if not (p.strip().isdigit() and b.strip().isdigit()):
            raise Invalid("* or a comma-separated list of partition:brokerId")


# Topic-level keys (LogConfig 2.8): name -> (Key with the topic-level type/validator, broker synonym or None).
# Defaults come from the broker's effective value (KafkaConfig.topic_defaults()).
_T = [
    (K("segment.bytes", I, None, "Segment file size", at_least(14)), "log.segment.bytes"),
    (K("segment.ms", L, None, "Time after which a segment is rolled", at_least(1)), "log.roll.ms"),
    (K("segment.jitter.ms", L, None, "Max random jitter of segment.ms", at_least(0)), "log.roll.jitter.ms"),
    (K("segment.index.bytes", I, None, "Offset index file size", at_least(0)), "log.index.size.max.bytes"),
    (K("flush.messages", L, None, "Messages between forced flushes", at_least(0)), "log.flush.interval.messages"),
    (K("flush.ms", L, None, "Time between forced flushes", at_least(0)), "log.flush.interval.ms"),
    (K("retention.bytes", L, None, "Max partition size before old segments are deleted; -1 = none"),
     "log.retention.bytes"),
    (K("retention.ms", L, None, "Max age of old segments; -1 = no limit", at_least(-1)), "log.retention.ms"),
    (K("max.message.bytes", I, None, "Largest record batch allowed", at_least(0)), "message.max.bytes"),
    (K("index.interval.bytes", I, None, "Bytes between index entries", at_least(0)), "log.index.interval.bytes"),
    (K("delete.retention.ms", L, None, "How long tombstones are kept", at_least(0)),
     "log.cleaner.delete.retention.ms"),
    (K("min.compaction.lag.ms", L, None, "Min time before compaction", at_least(0)),
     "log.cleaner.min.compaction.lag.ms"),
    (K("max.compaction.lag.ms", L, None, "Max time before compaction", at_least(1)),
     "log.cleaner.max.compaction.lag.ms"),
    (K("file.delete.delay.ms", L, None, "Wait before a deleted file is removed", at_least(0)),
     "log.segment.delete.delay.ms"),
    (K("min.cleanable.dirty.ratio", D, None, "Dirty ratio that triggers cleaning", between(0, 1)),
     "log.cleaner.min.cleanable.ratio"),
    (K("cleanup.policy", LIST, None, "delete, compact or both", OneOf(CLEANUP_POLICIES)), "log.cleanup.policy"),
    (K("unclean.leader.election.enable", B, None, "Allow unclean leader election"),
     "unclean.leader.election.enable"),
    (K("min.insync.replicas", I, None, "Min in-sync replicas for acks=all", at_least(1)), "min.insync.replicas"),
    (K("compression.type", STR, None, "Final compression", OneOf(COMPRESSION_TYPES)), "compression.type"),
    (K("preallocate", B, None, "Preallocate segment files"), "log.preallocate"),
    (K("message.format.version", STR, None, "Message format version", _message_format_version),
     "log.message.format.version"),
    (K("message.timestamp.type", STR, None, "CreateTime or LogAppendTime", OneOf(TIMESTAMP_TYPES)),
     "log.message.timestamp.type"),
    (K("message.timestamp.difference.max.ms", L, None, "Max timestamp difference", at_least(0)),
     "log.message.timestamp.difference.max.ms"),
    (K("message.downconversion.enable", B, None, "Down-convert for old fetchers"),
     "log.message.downconversion.enable"),
    (K("leader.replication.throttled.replicas", LIST, None, "Throttled leader replicas partition:broker,...",
       _throttled),
     None),
    (K("follower.replication.throttled.replicas", LIST, None, "Throttled follower replicas partition:broker,...",
       _throttled),
     None),
]
TOPIC_KEYS: dict[str, Key] = {k.name: k for k, _ in _T}
TOPIC_SYNONYMS: dict[str, str | None] = {k.name: syn for k, syn in _T}
