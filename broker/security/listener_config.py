"""Each listener's security, from Kafka's keys: ``ssl.*``, ``sasl.*`` and their per-listener overrides.

A listener reads ``listener.name.<listener, lower case>.<key>`` before ``<key>`` (Kafka's
``valuesWithPrefixOverride``). SASL listeners take their mechanisms from ``sasl.enabled.mechanisms`` (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512; Kafka's default GSSAPI is refused by name) and, per mechanism, a JAAS entry
``[listener.name.<l>.]<mechanism>.sasl.jaas.config``: PlainLoginModule's ``user_<name>="<password>"`` options
are the PLAIN users; ``username``/``password`` are what this broker itself sends when the listener is the
inter-broker one. SCRAM users live in ZooKeeper (``credential_cache.py``).

``check(config)`` validates without touching files (at config load); ``build(config)`` then loads the key
and trust stores once, at start-up, and ``inter_broker_security(config)`` is how this broker's own clients
(controller, replica fetchers, transaction markers, controlled shutdown) reach the inter-broker listener.
"""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass, field
from typing import Any, Callable

from ...clients.security.client_security import SASL_PROTOCOLS, TLS_PROTOCOLS, ClientSecurity
from ...clients.security.jaas import PLAIN_MODULE, SCRAM_MODULE, JaasConfig, JaasError, parse_jaas
from ...clients.security.scram import MECHANISMS as SCRAM_MECHANISMS
from ...clients.security.tls import SslConfigError, SslSettings, client_context, server_context
from .ssl_principal import SslPrincipalMapper

__all__ = ["ListenerSecurity", "ListenerSecurityError", "check", "build", "inter_broker_security",
           "is_listener_scoped", "SUPPORTED_MECHANISMS"]

SUPPORTED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
_JAAS_KEY = re.compile(r"(?P<mechanism>[a-z0-9-]+)\.sasl\.jaas\.config")
_LISTENER_KEY = re.compile(r"listener\.name\.(?P<listener>[^.]+)\.(?P<key>.+)")
# Java-only knobs: accepted at their defaults, warned about when set to anything else.
_JAVA_ONLY = {"ssl.keymanager.algorithm": "SunX509", "ssl.trustmanager.algorithm": "PKIX",
              "ssl.secure.random.implementation": None, "ssl.provider": None}
_EXPECTED_MODULE = {"PLAIN": PLAIN_MODULE, **{m: SCRAM_MODULE for m in SCRAM_MECHANISMS}}
# The keys a listener reads with its listener.name.<l>. prefix first (besides <mechanism>.sasl.jaas.config).
_LISTENER_KEYS = frozenset({
    "ssl.protocol", "ssl.enabled.protocols", "ssl.cipher.suites", "ssl.keystore.type", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
    "ssl.client.auth", "ssl.endpoint.identification.algorithm", "ssl.principal.mapping.rules",
    "sasl.enabled.mechanisms", "sasl.server.max.receive.size",
})


class ListenerSecurityError(ValueError):
    """A bad security setting: ``key`` is the configuration key (as the user wrote it), the message one line."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def is_listener_scoped(key: str) -> bool:
    """Keys that are not in the key table but belong to a listener's security (checked by ``check``)."""
    return key.startswith("listener.name.") or _JAAS_KEY.fullmatch(key) is not None


def _lookup(originals: dict[str, str], listener: str) -> Callable[[str], str | None]:
    prefix = f"listener.name.{listener.lower()}."
    return lambda key: originals.get(prefix + key, originals.get(key))


def _key_used(originals: dict[str, str], listener: str, key: str) -> str:
    prefixed = f"listener.name.{listener.lower()}.{key}"
    return prefixed if prefixed in originals else key


def _mechanisms(config: Any, listener: str) -> list[str]:
    raw = _lookup(config.originals, listener)("sasl.enabled.mechanisms")
    names = [m.strip() for m in (raw if raw is not None else "GSSAPI").split(",") if m.strip()]
    key = _key_used(config.originals, listener, "sasl.enabled.mechanisms")
    unsupported = [m for m in names if m not in SUPPORTED_MECHANISMS]
    if unsupported or not names:
        raise ListenerSecurityError(key, f"Invalid value {','.join(names)} for configuration {key}: expected a list of: "
                                    f"{', '.join(SUPPORTED_MECHANISMS)} (listener {listener}; "
                                    f"{', '.join(unsupported) or 'an empty list'} not supported)")
    return names


def _max_receive_size(config: Any, listener: str) -> int:
    """sasl.server.max.receive.size, the listener's own first (Kafka reads it with the listener prefix)."""
    key = _key_used(config.originals, listener, "sasl.server.max.receive.size")
    if key == "sasl.server.max.receive.size":
        return int(config.get(key))
    raw = config.originals[key]
    try:
        value = int(raw.strip(), 10)
    except ValueError:
        value = 0
    if not 1 <= value <= 2**31 - 1:
        raise ListenerSecurityError(key, f"Invalid value {raw} for configuration {key}: expected an integer >= 1")
    return value


def _jaas(config: Any, listener: str, mechanism: str) -> JaasConfig | None:
    key = f"{mechanism.lower()}.sasl.jaas.config"
    text = _lookup(config.originals, listener)(key)
    if text is None:
        return None
    used = _key_used(config.originals, listener, key)
    try:
        jaas = parse_jaas(text)
    except JaasError as exc:
        raise ListenerSecurityError(used, f"Invalid value for configuration {used}: {exc}") from None
    if jaas.module != _EXPECTED_MODULE[mechanism]:
        raise ListenerSecurityError(used, f"Invalid value for configuration {used}: expected the login module "
                                    f"{_EXPECTED_MODULE[mechanism]} for {mechanism}, not {jaas.module}")
    return jaas


def _ssl_settings(config: Any, listener: str, protocol: str = "SSL") -> SslSettings:
    lookup = _lookup(config.originals, listener)
    if protocol == "SASL_SSL":
        # Kafka 2.8 (KIP-684): a SASL_SSL listener asks for client certificates only when its own
        # listener.name.<l>.ssl.client.auth says so; the broker-wide key is for SSL listeners.
        own = f"listener.name.{listener.lower()}.ssl.client.auth"
        lookup = (lambda get: lambda key: config.originals.get(own) if key == "ssl.client.auth" else get(key))(lookup)
    try:
        return SslSettings.from_lookup(lookup)
    except SslConfigError as exc:
        key = _key_used(config.originals, listener, exc.key)
        raise ListenerSecurityError(key, f"listener {listener}: {exc}") from None


def check(config: Any) -> list[str]:
    """Validate every listener's security settings (no file is read); returns warnings."""
    warnings: list[str] = []
    names = {e.name for e in config.listeners}
    for key in config.originals:
        m = _LISTENER_KEY.fullmatch(key)
        if m is None:
            continue
        if m.group("listener").upper() not in names:
            warnings.append(f"Configuration '{key}' names listener {m.group('listener')}, which is not in listeners; "
                            "it was ignored")
        else:
            warnings += _listener_key_warnings(key, m.group("key"), config.originals[key])
    for key, default in _JAVA_ONLY.items():
        value = config.originals.get(key)
        if value is not None and value.strip() != (default or ""):
            warnings.append(f"Configuration '{key}' is a Java setting with no meaning for Odradek; it was ignored")
    client_auth = (config.originals.get("ssl.client.auth") or "none").strip().lower()
    if client_auth != "none" and any(
            e.security_protocol == "SASL_SSL" and f"listener.name.{e.name.lower()}.ssl.client.auth" not in config.originals
            for e in config.listeners):
        warnings.append("Broker configuration 'ssl.client.auth' is applied only to SSL listeners. Listener-prefixed "
                        "configuration can be used to enable SSL client authentication for SASL_SSL listeners.")
    if config.originals.get("ssl.engine.factory.class"):
        raise ListenerSecurityError("ssl.engine.factory.class", "Invalid value for configuration "
                                    "ssl.engine.factory.class: expected no value (Odradek uses Python's ssl)")
    for endpoint in config.listeners:
        protocol, name = endpoint.security_protocol, endpoint.name
        if protocol in TLS_PROTOCOLS:
            settings = _ssl_settings(config, name, protocol)
            if not settings.has_keystore:
                key = _key_used(config.originals, name, "ssl.keystore.location")
                raise ListenerSecurityError(key, f"Missing configuration {key}: listener {name} ({protocol}) needs "
                                            "a key store (ssl.keystore.type=PEM with ssl.keystore.location, or "
                                            "ssl.keystore.certificate.chain and ssl.keystore.key)")
            warnings += settings.warnings
            rules = _lookup(config.originals, name)("ssl.principal.mapping.rules")
            try:
                SslPrincipalMapper(rules or "DEFAULT")
            except ValueError as exc:
                key = _key_used(config.originals, name, "ssl.principal.mapping.rules")
                raise ListenerSecurityError(key, f"Invalid value {rules} for configuration {key}: {exc}") from None
        if protocol in SASL_PROTOCOLS:
            _max_receive_size(config, name)
            for mechanism in _mechanisms(config, name):
                jaas = _jaas(config, name, mechanism)
                if mechanism == "PLAIN" and (jaas is None or not jaas.plain_users()):
                    key = _key_used(config.originals, name, "plain.sasl.jaas.config")
                    warnings.append(f"Listener {name} enables PLAIN but {key} defines no user_<name> option: no "
                                    "PLAIN client can authenticate")
    _check_inter_broker(config)
    return warnings


def _listener_key_warnings(key: str, base: str, value: str) -> list[str]:
    """A ``listener.name.<l>.<base>`` key the listener reads is fine; any other is warned about by name (never
    accepted and silently ignored); a re-authentication interval other than 0 is refused (KIP-368)."""
    if base in _LISTENER_KEYS or _JAAS_KEY.fullmatch(base):
        return []
    if base == "ssl.engine.factory.class" and value.strip():
        raise ListenerSecurityError(key, f"Invalid value for configuration {key}: expected no value (Odradek uses "
                                    "Python's ssl)")
    if base.endswith("connections.max.reauth.ms"):  # [<mechanism>.]connections.max.reauth.ms
        if value.strip() not in ("0", ""):
            raise ListenerSecurityError(key, f"Invalid value {value} for configuration {key}: expected 0: Odradek "
                                        "does not re-authenticate connections (KIP-368 is not implemented)")
        return []
    if base in _JAVA_ONLY:
        return [] if value.strip() == (_JAVA_ONLY[base] or "") else \
            [f"Configuration '{key}' is a Java setting with no meaning for Odradek; it was ignored"]
    if base.startswith(("ssl.", "sasl.")):
        return [f"Configuration '{key}' is a Kafka setting Odradek does not support; it was ignored"]
    return [f"Unknown configuration '{key}' was ignored (a listener takes the ssl.* and sasl.* keys Odradek reads "
            "and <mechanism>.sasl.jaas.config)"]


def _check_inter_broker(config: Any) -> None:
    endpoint = next(e for e in config.advertised_listeners if e.name == config.inter_broker_listener_name)
    if endpoint.security_protocol not in SASL_PROTOCOLS:
        return
    name, key = endpoint.name, "sasl.mechanism.inter.broker.protocol"
    mechanism = config.get(key)
    if mechanism not in _mechanisms(config, name):
        raise ListenerSecurityError(key, f"Invalid value {mechanism} for configuration {key}: expected one of the "
                                    f"mechanisms enabled on the inter-broker listener {name}: "
                                    f"{', '.join(_mechanisms(config, name))}")
    jaas = _jaas(config, name, mechanism)
    if jaas is None or not jaas.username or jaas.password is None:
        jaas_key = f"listener.name.{name.lower()}.{mechanism.lower()}.sasl.jaas.config"
        raise ListenerSecurityError(jaas_key, f"Missing configuration {jaas_key}: the inter-broker listener {name} "
                                    f"uses {mechanism}, and brokers need its username and password to reach each other")


@dataclass
class ListenerSecurity:
    """What a listener's connections go through: TLS (a server context), SASL (mechanisms and PLAIN users)."""
    name: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: SslPrincipalMapper | None = None
    sasl_mechanisms: list[str] = field(default_factory=list)
    plain_users: dict[str, str] = field(default_factory=dict, repr=False)  # passwords: never in a repr
    failed_authentication_delay_ms: int = 100
    max_receive_size: int = 524288  # sasl.server.max.receive.size: the largest frame before authentication

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in SASL_PROTOCOLS


def build(config: Any) -> dict[str, ListenerSecurity]:
    """Every listener's security, with key and trust stores loaded (``ListenerSecurityError`` if they cannot be)."""
    out: dict[str, ListenerSecurity] = {}
    delay = config.get("connection.failed.authentication.delay.ms")
    for endpoint in config.listeners:
        name, protocol = endpoint.name, endpoint.security_protocol
        security = ListenerSecurity(name, protocol, failed_authentication_delay_ms=delay)
        if protocol in TLS_PROTOCOLS:
            settings = _ssl_settings(config, name, protocol)
            try:
                security.ssl_context = server_context(settings)
            except SslConfigError as exc:
                raise ListenerSecurityError(_key_used(config.originals, name, exc.key),
                                            f"listener {name}: {exc}") from None
        if protocol == "SSL":  # on SASL_SSL the principal is the SASL user, whatever certificate came
            security.principal_mapper = SslPrincipalMapper(
                _lookup(config.originals, name)("ssl.principal.mapping.rules") or "DEFAULT")
        if protocol in SASL_PROTOCOLS:
            security.max_receive_size = _max_receive_size(config, name)
            security.sasl_mechanisms = _mechanisms(config, name)
            if "PLAIN" in security.sasl_mechanisms:
                jaas = _jaas(config, name, "PLAIN")
                security.plain_users = jaas.plain_users() if jaas is not None else {}
        out[name] = security
    return out


def inter_broker_security(config: Any) -> ClientSecurity | None:
    """How this broker's clients reach the inter-broker listener (None: PLAINTEXT). The TLS side uses the
    listener's trust store, and its key store for mutual TLS; SASL uses sasl.mechanism.inter.broker.protocol
    with the username and password of that mechanism's JAAS entry on the listener."""
    name = config.inter_broker_listener_name
    endpoint = next(e for e in config.advertised_listeners if e.name == name)
    protocol = endpoint.security_protocol
    if protocol == "PLAINTEXT":
        return None
    context = None
    if protocol in TLS_PROTOCOLS:
        try:
            context = client_context(_ssl_settings(config, name))
        except SslConfigError as exc:
            raise ListenerSecurityError(exc.key, f"inter-broker listener {name}: {exc}") from None
    mechanism = username = password = None
    if protocol in SASL_PROTOCOLS:
        mechanism = config.get("sasl.mechanism.inter.broker.protocol")
        jaas = _jaas(config, name, mechanism)
        assert jaas is not None  # check() made sure
        username, password = jaas.username, jaas.password
    return ClientSecurity(protocol, context, mechanism, username, password)
