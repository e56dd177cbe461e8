"""Broker configuration: server.properties, environment variables and --override, as Kafka 2.8 reads them.

Sources, later wins (the order the Docker images apply them in):

1. the properties file (Java .properties syntax);
2. environment variables, confluent style first (`KAFKA_LOG_RETENTION_HOURS`), then bitnami style
   (`KAFKA_CFG_LOG_RETENTION_HOURS`), so the more explicit `KAFKA_CFG_` form wins when both name a key;
3. `--override key=value` arguments, in order.

Keys, types, defaults and validators are in `odradek.broker.config_keys`. Invalid values raise `ConfigError`
with a one-line message naming the key, the value and what is accepted. Unknown keys never pass silently:
they produce a warning (with the closest known key) and are kept in `KafkaConfig.unknown`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..clients.java_properties import parse_properties  # Java .properties syntax, shared with the tools
from .config_keys import (BROKER_KEYS, SECURITY_PROTOCOLS, TOPIC_KEYS, TOPIC_SYNONYMS, Invalid, Key,
                          is_fail_closed, is_unsupported, not_implemented)
from .security import listener_config

__all__ = ["ConfigError", "KafkaConfig", "Endpoint", "ZkConnect", "load_config", "parse_properties",
           "env_to_properties", "parse_listeners", "parse_zookeeper_connect", "validate_topic_config",
           "NON_CONFIG_ENV", "NON_CONFIG_ENV_PREFIXES"]


class ConfigError(ValueError):
    """An invalid or missing configuration value. The message is a single line."""


def _one_line(value: Any) -> str:
    s = str(value)
    return s.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


# The retention keys and their units, the finer first (it wins when several are set, as in Kafka)
_RETENTION_KEYS = (("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000))


def _invalid(key: str, value: Any, tail: str, source: str | None = None) -> ConfigError:
    msg = f"Invalid value {_one_line(value)} for configuration {key}: {tail}"
    if source:
        msg += f" (from {source})"
    return ConfigError(msg)


# --------------------------------------------------------------------------------------------------------------
# Environment variables

# Variables the images and Kafka's scripts use for something other than broker properties. They are skipped
# by the bare `KAFKA_*` (confluent) mapping; `KAFKA_CFG_*` variables are always properties.
NON_CONFIG_ENV = frozenset({
    # Apache scripts (kafka-run-class.sh, kafka-server-start.sh) and cp-kafka's exclusions
    "KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_DEBUG",
    "KAFKA_HOME", "KAFKA_VERSION", "KAFKA_SCALA_VERSION", "KAFKA_CLASSPATH", "KAFKA_TOOLS_LOG4J_LOGLEVEL",
    "KAFKA_ZOOKEEPER_CLIENT_CNXN_SOCKET",
    # bitnami/kafka's own settings (paths are directories of the image, KAFKA_LOG_DIR is the log4j directory)
    "KAFKA_BASE_DIR", "KAFKA_CONF_DIR", "KAFKA_CONF_FILE", "KAFKA_VOLUME_DIR", "KAFKA_DATA_DIR", "KAFKA_LOG_DIR",
    "KAFKA_MOUNTED_CONF_DIR", "KAFKA_INITSCRIPTS_DIR", "KAFKA_CERTS_DIR", "KAFKA_PID_FILE", "KAFKA_DAEMON_USER",
    "KAFKA_DAEMON_GROUP", "KAFKA_ENABLE_KRAFT", "KAFKA_KRAFT_CLUSTER_ID", "KAFKA_SKIP_KRAFT_STORAGE_INIT",
    "KAFKA_CERTIFICATE_PASSWORD", "KAFKA_ZOOKEEPER_PROTOCOL", "KAFKA_ZOOKEEPER_USER", "KAFKA_ZOOKEEPER_PASSWORD",
    "KAFKA_CLIENT_USERS", "KAFKA_CLIENT_PASSWORDS", "KAFKA_INTER_BROKER_USER", "KAFKA_INTER_BROKER_PASSWORD",
    "KAFKA_CONTROLLER_USER", "KAFKA_CONTROLLER_PASSWORD", "KAFKA_CLIENT_LISTENER_NAME",
})
NON_CONFIG_ENV_PREFIXES = ("KAFKA_JMX_", "KAFKA_LOG4J_", "KAFKA_TLS_", "KAFKA_ZOOKEEPER_TLS_", "KAFKA_CFG_")


def _bitnami_key(var: str) -> str:
    # libkafka.sh: strip KAFKA_CFG_, every `_` becomes `.`, lowercase; then its two special cases.
    key = var[len("KAFKA_CFG_"):].replace("_", ".").lower()
    return key.replace("sasl.ssl", "sasl_ssl").replace("sasl.plaintext", "sasl_plaintext")


def _confluent_key(var: str) -> str:
    # cp-kafka env_to_props: strip KAFKA_, lowercase, then `___` -> `-`, `__` -> `_`, `_` -> `.`.
    raw = var[len("KAFKA_"):].lower()
    return "-".join("_".join(p.replace("_", ".") for p in part.split("__")) for part in raw.split("___"))


def env_to_properties(environ: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """Map environment variables to (key, value, source) triples, lowest precedence first.

    Bare `KAFKA_X` (confluent rule) come first, `KAFKA_CFG_X` (bitnami rule) after, each group sorted by
    variable name. Empty values are skipped (as current bitnami images do).
    """
    bare, cfg = [], []
    for var in sorted(environ):
        value = environ[var]
        if not var.startswith("KAFKA_") or value == "":
            continue
        if var.startswith("KAFKA_CFG_"):
            if len(var) > len("KAFKA_CFG_"):
                cfg.append((_bitnami_key(var), value, f"environment variable {var}"))
        elif var not in NON_CONFIG_ENV and not var.startswith(NON_CONFIG_ENV_PREFIXES) and len(var) > 6:
            bare.append((_confluent_key(var), value, f"environment variable {var}"))
    return bare + cfg


# --------------------------------------------------------------------------------------------------------------
# Structured values

@dataclass(frozen=True)
class Endpoint:
    """One listener. An empty host means all interfaces (bind) or "this host's name" (advertised)."""
    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@dataclass(frozen=True)
class ZkConnect:
    """zookeeper.connect split into the servers (`hosts`, as given) and the chroot path ("" = none)."""
    hosts: str
    chroot: str
    servers: tuple[tuple[str, int], ...]


_LISTENER_RE = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")
_LISTENERS_EXPECTED = "expected a comma-separated list of NAME://host:port with a port in [0, 65535]"


def parse_protocol_map(value: str, key: str = "listener.security.protocol.map") -> dict[str, str]:
    out: dict[str, str] = {}
    for item in (p.strip() for p in value.split(",")):
        if not item:
            continue
        name, sep, proto = item.partition(":")
        name, proto = name.strip().upper(), proto.strip().upper()
        if not sep or not name or proto not in SECURITY_PROTOCOLS or name in out:
            raise _invalid(key, value, "expected a comma-separated list of NAME:PROTOCOL with distinct names "
                           "and PROTOCOL one of: " + ", ".join(SECURITY_PROTOCOLS))
        out[name] = proto
    return out


def parse_listeners(value: str, protocol_map: Mapping[str, str], key: str = "listeners") -> list[Endpoint]:
    """Parse `NAME://host:port,...`; names are upper-cased as Kafka does; `[v6addr]` brackets are removed."""
    eps: list[Endpoint] = []
    for item in (p.strip() for p in value.split(",")):
        if not item:
            continue
        m = _LISTENER_RE.match(item)
        if not m or not m.group(1) or not 0 <= int(m.group(3)) <= 65535:
            raise _invalid(key, value, _LISTENERS_EXPECTED)
        name = m.group(1).upper()
        if name not in protocol_map:
            raise _invalid(key, value, f"expected listener names defined in listener.security.protocol.map "
                           f"(no security protocol for {name})")
        eps.append(Endpoint(name, m.group(2), int(m.group(3)), protocol_map[name]))
    if not eps:
        raise _invalid(key, value, _LISTENERS_EXPECTED)
    names = [e.name for e in eps]
    if len(set(names)) != len(names):
        raise _invalid(key, value, "expected each listener name at most once")
    return eps


def parse_connection_overrides(value: str) -> dict[str, int]:
    """max.connections.per.ip.overrides: ``host:count,host:count`` (Kafka's parseCsvMap); raises ValueError."""
    overrides: dict[str, int] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host.strip():
            raise ValueError(f"{item!r} is not host:count")
        overrides[host.strip()] = int(count)
    return overrides


def parse_zookeeper_connect(value: str, key: str = "zookeeper.connect") -> ZkConnect:
    expected = "expected host:port[,host:port...][/chroot]"
    s = value.strip()
    hosts, slash, path = s.partition("/")
    chroot = "/" + path if slash else ""
    if chroot == "/":
        chroot = ""
    if chroot and (chroot.endswith("/") or "//" in chroot):
        raise _invalid(key, value, expected + " with a chroot path not ending in /")
    servers = []
    for item in (h.strip() for h in hosts.split(",")):
        if not item:
            continue
        host = item
        if item.startswith("["):
            end = item.find("]")
            host, rest = item[1:end], item[end + 1:]
            if end < 0 or (rest and not rest.startswith(":")):
                raise _invalid(key, value, expected)
            port_s = rest[1:] if rest else "2181"
        elif item.count(":") == 1:
            host, port_s = item.split(":")
        else:
            port_s = "2181"
        if not host or not port_s.isdigit() or not 0 < int(port_s) <= 65535:
            raise _invalid(key, value, expected)
        servers.append((host, int(port_s)))
    if not servers:
        raise _invalid(key, value, expected)
    return ZkConnect(hosts.strip(), chroot, tuple(servers))


# --------------------------------------------------------------------------------------------------------------
# KafkaConfig

def _format(val: Any) -> str | None:
    if val is None:
        return None
    if isinstance(val, bool):
        return "true" if val else "false"
    if isinstance(val, list):
        return ",".join(val)
    if isinstance(val, float):
        return _java_double(val)
    return str(val)


def _java_double(val: float) -> str:
    """Java's Double.toString, as Kafka shows a DOUBLE key: scientific ("1.0E7") from 10^7 and below 10^-3."""
    if val != val or val in (float("inf"), float("-inf")):
        return "NaN" if val != val else ("Infinity" if val > 0 else "-Infinity")
    if val == 0 or 1e-3 <= abs(val) < 1e7:
        return repr(val)
    digits = next(p for p in range(17) if float(f"{val:.{p}e}") == val)  # the shortest exact mantissa
    mantissa, exponent = f"{val:.{digits}e}".split("e")
    return f"{mantissa if '.' in mantissa else mantissa + '.0'}E{int(exponent)}"


class KafkaConfig:
    """A validated broker configuration.

    `get(key)` returns the typed value of any known key (None when a nullable key is unset). Keys also read
    as attributes with dots as underscores (`config.num_io_threads`). Derived attributes apply Kafka's
    precedence: `log_dirs`, `log_roll_ms`, `log_roll_jitter_ms`, `log_retention_ms`, `log_flush_interval_ms`,
    `zookeeper_connection_timeout_ms`, `listeners`, `advertised_listeners`, `inter_broker_listener_name`.
    """

    def __init__(self, props: Mapping[str, str], sources: Mapping[str, str] | None = None):
        self.originals: dict[str, str] = dict(props)
        self.sources: dict[str, str] = dict(sources or {})
        self.unknown: dict[str, str] = {}
        self.warnings: list[str] = []
        values: dict[str, Any] = {}
        for key, raw in self.originals.items():
            spec = BROKER_KEYS.get(key)
            if spec is None and listener_config.is_listener_scoped(key):
                continue  # listener.name.<l>.* and <mechanism>.sasl.jaas.config: checked with the listeners
            if spec is None:
                if is_fail_closed(key, raw):
                    raise _fail_closed(key, self.sources.get(key))
                self.unknown[key] = raw
                self.warnings.append(_unknown_warning(key, self.sources.get(key)))
                continue
            try:
                values[key] = spec.parse(raw)
            except Invalid as e:
                raise _invalid(key, raw, "expected " + str(e), self.sources.get(key)) from None
            instead = not_implemented(key, values[key])
            if instead is not None:
                self.warnings.append(f"Configuration '{key}' is accepted but not implemented: {instead}"
                                     f"{_from(self.sources.get(key))}")
        if values.get("zookeeper.set.acl"):
            raise _fail_closed("zookeeper.set.acl", self.sources.get("zookeeper.set.acl"))
        for key, spec in BROKER_KEYS.items():
            if key not in values:
                if spec.required:
                    raise ConfigError(f"Missing required configuration {key} which has no default value: "
                                      f"{_expected_for(key)}")
                values[key] = spec.default
        self._values = values
        self._derive()

    # -- derived values, Kafka's precedence rules ------------------------------------------------------------

    def _src(self, key: str) -> str | None:
        return self.sources.get(key)

    def _derive(self) -> None:
        v = self._values
        self.zookeeper_connect = parse_zookeeper_connect(v["zookeeper.connect"])
        self.zookeeper_connection_timeout_ms: int = (v["zookeeper.connection.timeout.ms"]
                                                     if v["zookeeper.connection.timeout.ms"] is not None
                                                     else v["zookeeper.session.timeout.ms"])
        self.log_dirs: list[str] = v["log.dirs"] if v["log.dirs"] is not None else [
            d.strip() for d in v["log.dir"].split(",") if d.strip()]
        if not self.log_dirs:
            raise _invalid("log.dirs", self.originals.get("log.dirs", ""), "expected a non-empty list of "
                           "directories", self._src("log.dirs"))
        self.log_roll_ms: int = v["log.roll.ms"] if v["log.roll.ms"] is not None else v["log.roll.hours"] * 3600000
        self.log_roll_jitter_ms: int = (v["log.roll.jitter.ms"] if v["log.roll.jitter.ms"] is not None
                                        else v["log.roll.jitter.hours"] * 3600000)
        retention_key, unit_ms = next((k, unit) for k, unit in _RETENTION_KEYS if v[k] is not None)
        ms = v[retention_key] * unit_ms
        if ms == 0:  # KafkaConfig.validateValues: a retention of 0 would delete every segment as it rolls
            raise _invalid(retention_key, 0, "expected -1 (unlimited) or a retention of at least 1 ms",
                           self._src(retention_key))
        self.log_retention_ms: int = -1 if ms < 0 else ms  # any negative value means "no time limit"
        threads, dedupe = v["log.cleaner.threads"], v["log.cleaner.dedupe.buffer.size"]
        if threads and dedupe // threads <= 1024 * 1024:  # KafkaConfig.validateValues (0 threads: no cleaner)
            raise _invalid("log.cleaner.dedupe.buffer.size", dedupe, f"expected more than 1 MiB per cleaner thread "
                           f"(log.cleaner.threads={threads})", self._src("log.cleaner.dedupe.buffer.size"))
        self._inter_broker_security: Any = None  # see inter_broker_client_security()
        self.log_flush_interval_ms: int = (v["log.flush.interval.ms"] if v["log.flush.interval.ms"] is not None
                                           else v["log.flush.scheduler.interval.ms"])

        self.listener_security_protocol_map = parse_protocol_map(v["listener.security.protocol.map"])
        self.listeners = parse_listeners(v["listeners"], self.listener_security_protocol_map)
        ports = [e.port for e in self.listeners if e.port != 0]
        if len(set(ports)) != len(ports):
            raise _invalid("listeners", v["listeners"], "expected each port at most once", self._src("listeners"))
        if v["advertised.listeners"] is not None:
            adv = parse_listeners(v["advertised.listeners"], self.listener_security_protocol_map,
                                  "advertised.listeners")
            names = {e.name for e in self.listeners}
            if not {e.name for e in adv} <= names:
                raise _invalid("advertised.listeners", v["advertised.listeners"], "expected listener names equal "
                               "to or a subset of those in listeners", self._src("advertised.listeners"))
            if any(e.host == "0.0.0.0" for e in adv):
                raise _invalid("advertised.listeners", v["advertised.listeners"], "expected a routable host, "
                               "not the meta-address 0.0.0.0", self._src("advertised.listeners"))
            self.advertised_listeners = adv
        else:
            self.advertised_listeners = list(self.listeners)

        ibl = v["inter.broker.listener.name"]
        if ibl is not None:
            if "security.inter.broker.protocol" in self.originals:
                raise _invalid("inter.broker.listener.name", ibl, "only one of inter.broker.listener.name and "
                               "security.inter.broker.protocol may be set", self._src("inter.broker.listener.name"))
            ibl = ibl.upper()
        else:
            ibl = v["security.inter.broker.protocol"]
        if ibl not in {e.name for e in self.advertised_listeners}:
            key = "inter.broker.listener.name"
            raise _invalid(key, ibl, "expected a listener name defined in advertised.listeners (set "
                           "inter.broker.listener.name when no listener is named after "
                           "security.inter.broker.protocol)", self._src(key))
        self.inter_broker_listener_name: str = ibl
        try:
            self.warnings += listener_config.check(self)
        except listener_config.ListenerSecurityError as exc:
            raise ConfigError(f"{exc}" + (f" (from {self._src(exc.key)})" if self._src(exc.key) else "")) from None
        self._listener_security: dict[str, listener_config.ListenerSecurity] | None = None

        bid, max_id = v["broker.id"], v["reserved.broker.max.id"]
        if v["broker.id.generation.enable"]:
            if not -1 <= bid <= max_id:
                raise _invalid("broker.id", bid, f"expected an integer in [-1, {max_id}] (reserved.broker.max.id)",
                               self._src("broker.id"))
        elif bid < 0:
            raise _invalid("broker.id", bid, "expected an integer >= 0 when broker.id.generation.enable is false",
                           self._src("broker.id"))
        if v["replica.fetch.wait.max.ms"] > v["replica.socket.timeout.ms"]:
            raise _invalid("replica.fetch.wait.max.ms", v["replica.fetch.wait.max.ms"], "expected at most "
                           f"replica.socket.timeout.ms ({v['replica.socket.timeout.ms']})",
                           self._src("replica.fetch.wait.max.ms"))
        if v["replica.fetch.wait.max.ms"] > v["replica.lag.time.max.ms"]:
            raise _invalid("replica.fetch.wait.max.ms", v["replica.fetch.wait.max.ms"], "expected at most "
                           f"replica.lag.time.max.ms ({v['replica.lag.time.max.ms']})",
                           self._src("replica.fetch.wait.max.ms"))
        acks = v["offsets.commit.required.acks"]
        if not -1 <= acks <= v["offsets.topic.replication.factor"] or acks == 0:
            raise _invalid("offsets.commit.required.acks", acks, "expected -1 or an integer in [1, "
                           "offsets.topic.replication.factor]", self._src("offsets.commit.required.acks"))
        self._check_connection_limits(v)
        if v["group.min.session.timeout.ms"] > v["group.max.session.timeout.ms"]:
            raise _invalid("group.min.session.timeout.ms", v["group.min.session.timeout.ms"], "expected at most "
                           f"group.max.session.timeout.ms ({v['group.max.session.timeout.ms']})",
                           self._src("group.min.session.timeout.ms"))

    def _check_connection_limits(self, v: dict[str, Any]) -> None:
        """Kafka 2.8's KafkaConfig.validateValues for the socket server's limits."""
        queued, largest = v["queued.max.request.bytes"], v["socket.request.max.bytes"]
        if 0 < queued < largest:
            raise _invalid("queued.max.request.bytes", queued, f"expected -1 (no limit) or at least "
                           f"socket.request.max.bytes ({largest})", self._src("queued.max.request.bytes"))
        key = "max.connections.per.ip.overrides"
        try:
            overrides = parse_connection_overrides(v[key])
        except ValueError:
            raise _invalid(key, v[key], "expected host:count[,host:count...]", self._src(key)) from None
        bad = [h for h in overrides if not _HOST_PATTERN.fullmatch(h)] + \
            [h for h, count in overrides.items() if count < 0]
        if bad:
            raise _invalid(key, v[key], f"expected valid hosts and counts >= 0 (not {', '.join(bad)})", self._src(key))
        if v["max.connections.per.ip"] == 0 and not overrides:
            raise _invalid("max.connections.per.ip", 0, f"expected an integer >= 1, or 0 with {key} set",
                           self._src("max.connections.per.ip"))

    # -- access --------------------------------------------------------------------------------------------------

    def get(self, key: str) -> Any:
        """The typed value of a known broker key (as set, or its default). Raises KeyError for unknown keys."""
        if key not in self._values:
            raise KeyError(key)
        return self._values[key]

    def is_default(self, key: str) -> bool:
        """True when `key` was not set by file, environment or override."""
        return key not in self.originals

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        key = name.replace("_", ".")
        values = self.__dict__.get("_values", {})
        if key in values:
            return values[key]
        raise AttributeError(f"KafkaConfig has no attribute {name!r} (no configuration {key!r})")

    @property
    def broker_id(self) -> int:
        return self._values["broker.id"]

    def listener_security(self) -> dict[str, "listener_config.ListenerSecurity"]:
        """Each listener's TLS context and SASL settings, key and trust stores loaded on the first call
        (``ConfigError`` when they cannot be)."""
        if self._listener_security is None:
            try:
                self._listener_security = listener_config.build(self)
                self._inter_broker_security = listener_config.inter_broker_security(self)
            except listener_config.ListenerSecurityError as exc:
                raise ConfigError(str(exc)) from None
        return self._listener_security

    def inter_broker_client_security(self) -> Any:
        """How this broker's own clients (controller, replica fetchers, transaction markers, controlled
        shutdown) reach the inter-broker listener: a ClientSecurity, None for PLAINTEXT."""
        self.listener_security()
        return self._inter_broker_security

    @property
    def metrics_host(self) -> str:
        """Where /metrics listens: odradek.metrics.host when set, else metrics.host; empty = every interface."""
        if self.is_default("odradek.metrics.host"):
            return self._values["metrics.host"]
        return self._values["odradek.metrics.host"]

    @property
    def metrics_port(self) -> int:
        """Odradek's Prometheus endpoint port: odradek.metrics.port when set, else metrics.port; -1 = off."""
        if self.is_default("odradek.metrics.port"):
            return self._values["metrics.port"]
        return self._values["odradek.metrics.port"]

    def values(self) -> dict[str, Any]:
        return dict(self._values)

    def __repr__(self) -> str:
        return f"KafkaConfig(broker.id={self.broker_id}, listeners={[str(e) for e in self.listeners]}, " \
               f"zookeeper.connect={self._values['zookeeper.connect']!r})"

    # -- topic level ---------------------------------------------------------------------------------------------

    def topic_defaults(self) -> dict[str, str]:
        """Topic-level keys with this broker's effective default, as strings (as DescribeConfigs reports)."""
        derived = {"log.roll.ms": self.log_roll_ms, "log.roll.jitter.ms": self.log_roll_jitter_ms,
                   "log.retention.ms": self.log_retention_ms, "log.flush.interval.ms": self.log_flush_interval_ms}
        out: dict[str, str] = {}
        for name, syn in TOPIC_SYNONYMS.items():
            val = "" if syn is None else derived.get(syn, self._values[syn])
            out[name] = _format(val) or ""
        return out

    def validate_topic_overrides(self, configs: Mapping[str, str | None]) -> list[str]:
        """``validate_topic_config`` for callers that hold a config but must not import the broker
        package (the controller's admin client)."""
        return validate_topic_config(configs)

    def topic_config(self, overrides: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Typed topic configuration: broker defaults with per-topic `overrides` applied (validated)."""
        merged = {**self.topic_defaults(), **{k: v for k, v in (overrides or {}).items() if v is not None}}
        errors = validate_topic_config(overrides or {})
        if errors:
            raise ConfigError(errors[0])
        return {k: TOPIC_KEYS[k].parse(v) for k, v in merged.items()}


def _expected_for(key: str) -> str:
    if key == "zookeeper.connect":
        return "expected host:port[,host:port...][/chroot]"
    return "expected " + BROKER_KEYS[key].expected()


# Kafka's Utils.validHostPattern: a host name or an IPv4/IPv6 address
_HOST_PATTERN = re.compile(r"[0-9a-zA-Z\-%._:]+")


def _from(source: str | None) -> str:
    return f" (from {source})" if source else ""


def _fail_closed(key: str, source: str | None) -> ConfigError:
    return ConfigError(f"Configuration '{key}' asks for security Odradek does not implement yet; refusing to start "
                       f"without it (remove the setting to run unprotected){_from(source)}")


def _unknown_warning(key: str, source: str | None) -> str:
    where = f" (from {source})" if source else ""
    close = difflib.get_close_matches(key, list(BROKER_KEYS), n=1, cutoff=0.9)
    if is_unsupported(key) and not close:
        return f"Configuration '{key}' is a Kafka setting Odradek does not support; it was ignored{where}"
    close = close or difflib.get_close_matches(key, list(BROKER_KEYS), n=1, cutoff=0.75)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"Unknown configuration '{key}'{hint} was ignored{where}"


def validate_topic_config(configs: Mapping[str, str | None]) -> list[str]:
    """Check topic-level overrides (CreateTopics, AlterConfigs); returns one-line error messages, [] if valid.

    A None value (AlterConfigs "delete"/"use default") is accepted.
    """
    errors: list[str] = []
    typed: dict[str, Any] = {}
    for key, raw in configs.items():
        spec: Key | None = TOPIC_KEYS.get(key)
        if spec is None:
            close = difflib.get_close_matches(key, list(TOPIC_KEYS), n=1, cutoff=0.75)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            errors.append(f"Unknown topic config name: {key}{hint}")
            continue
        if raw is None:
            continue
        try:
            typed[key] = spec.parse(raw)
        except Invalid as e:
            errors.append(str(_invalid(key, raw, "expected " + str(e))))
    lo, hi = typed.get("min.compaction.lag.ms"), typed.get("max.compaction.lag.ms")
    if lo is not None and hi is not None and lo > hi:
        errors.append(str(_invalid("min.compaction.lag.ms", lo, f"expected at most max.compaction.lag.ms ({hi})")))
    return errors


# --------------------------------------------------------------------------------------------------------------
# Loading

def _parse_overrides(overrides: Iterable[str]) -> list[tuple[str, str, str]]:
    out = []
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"Invalid override {_one_line(item)}: expected key=value")
        out.append((key.strip(), value, f"--override {_one_line(item)}"))
    return out


def load_config(properties_path: str | None, overrides: list[str],
                environ: Mapping[str, str]) -> tuple[KafkaConfig, list[str]]:
    """Build the broker configuration from a properties file, environment variables and overrides.

    Precedence (later wins): file < environment (`KAFKA_*` < `KAFKA_CFG_*`) < `--override`, as the Docker images
    apply environment variables over the shipped file. Returns the config and warnings (unknown or unsupported
    keys, keys repeated in the file). Raises ConfigError on unreadable files and invalid or missing values.
    """
    warnings: list[str] = []
    entries: list[tuple[str, str, str]] = []
    if properties_path is not None:
        try:
            with open(properties_path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ConfigError(f"Cannot read properties file {properties_path}: {e.strerror or e}") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("latin-1")  # java.util.Properties.load(InputStream) reads ISO-8859-1
        seen: dict[str, int] = {}
        for key, value, lineno in parse_properties(text):
            if key in seen:
                warnings.append(f"Configuration '{key}' is set twice in {properties_path} (lines {seen[key]} "
                                f"and {lineno}); the last one wins")
            seen[key] = lineno
            entries.append((key, value, f"{properties_path} line {lineno}"))
    entries += env_to_properties(environ)
    entries += _parse_overrides(overrides)
    props: dict[str, str] = {}
    sources: dict[str, str] = {}
    for key, value, source in entries:
        props[key] = value
        sources[key] = source
    config = KafkaConfig(props, sources)
    warnings += config.warnings
    return config, warnings
