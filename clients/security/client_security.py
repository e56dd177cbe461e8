"""How a client reaches a secured listener: TLS and/or SASL, from kafka-python's names or Kafka's.

    ClientSecurity.from_kwargs(security_protocol="SASL_SSL", ssl_cafile="ca.pem",
                               sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice",
                               sasl_plain_password="alice-secret")
    ClientSecurity.from_properties({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                    "sasl.jaas.config": 'org.apache...ScramLoginModule required username="a" password="b";',
                                    "ssl.truststore.type": "PEM", "ssl.truststore.location": "ca.pem"})

Our Producer, Consumer and Admin (and their async twins) take the kafka-python / aiokafka keyword
names listed in ``SECURITY_DEFAULTS``; the tools read Kafka's property names from --command-config
(``security_kwargs_from_properties``). ``BrokerConnection.connect(..., security=...)`` applies it.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any, Mapping

from ...protocol.errors import (  # type: ignore[attr-defined]
    IllegalSaslStateError, SaslAuthenticationFailedError, UnsupportedSaslMechanismError,
)
from ..types import KafkaConfigurationError
from .jaas import JaasError, parse_jaas
from .scram import MECHANISMS as SCRAM_MECHANISMS
from .tls import SslConfigError, SslSettings, client_context

__all__ = ["ClientSecurity", "AUTHENTICATION_ERRORS", "client_security", "file_security_kwargs", "SECURITY_DEFAULTS", "SECURITY_PROTOCOLS", "SASL_MECHANISMS",
           "TLS_PROTOCOLS", "SASL_PROTOCOLS",
           "security_kwargs_from_properties", "SECURITY_PROPERTY_PREFIXES", "SECURITY_PROPERTIES",
           "unread_security_properties"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})  # the security protocols that run over TLS
SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})  # those that authenticate with SASL
SASL_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
# kafka-python's (and aiokafka's) security keyword arguments and their defaults.
SECURITY_DEFAULTS: dict[str, Any] = {
    "security_protocol": "PLAINTEXT",
    "ssl_context": None,
    "ssl_check_hostname": True,
    "ssl_cafile": None,
    "ssl_certfile": None,
    "ssl_keyfile": None,
    "ssl_password": None,
    "ssl_crlfile": None,
    "ssl_ciphers": None,
    "sasl_mechanism": None,
    "sasl_plain_username": None,
    "sasl_plain_password": None,
}
# A broker's answers that end a client's attempts (Java's AuthenticationException is not retried).
AUTHENTICATION_ERRORS = (SaslAuthenticationFailedError, UnsupportedSaslMechanismError, IllegalSaslStateError)
# Kafka client property names that ``security_kwargs_from_properties`` consumes.
SECURITY_PROPERTY_PREFIXES = ("security.protocol", "ssl.", "sasl.")
# The ones it reads; any other ssl.* / sasl.* property is reported (never taken silently).
SECURITY_PROPERTIES = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.jaas.config", "ssl.protocol", "ssl.enabled.protocols",
    "ssl.cipher.suites", "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
    "ssl.endpoint.identification.algorithm",
})


def unread_security_properties(props: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The ``<prefix>ssl.*`` / ``<prefix>sasl.*`` properties our clients do not read (Java-only knobs, GSSAPI
    and OAUTHBEARER settings, callback handlers), for the caller to warn about by name."""
    return sorted(k for k in props if k.startswith(prefix) and k[len(prefix):].startswith(SECURITY_PROPERTY_PREFIXES)
                  and k[len(prefix):] not in SECURITY_PROPERTIES)


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)  # never in a log line or traceback

    @property
    def uses_ssl(self) -> bool:
        return self.protocol in TLS_PROTOCOLS

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in SASL_PROTOCOLS

    @classmethod
    def from_kwargs(cls, *, security_protocol: str = "PLAINTEXT", ssl_context: ssl.SSLContext | None = None,
                    ssl_check_hostname: bool = True, ssl_cafile: str | None = None, ssl_certfile: str | None = None,
                    ssl_keyfile: str | None = None, ssl_password: str | None = None, ssl_crlfile: str | None = None,
                    ssl_ciphers: str | None = None, sasl_mechanism: str | None = None,
                    sasl_plain_username: str | None = None, sasl_plain_password: str | None = None) -> "ClientSecurity":
        """kafka-python's keywords (ValueError for a bad combination, naming the keyword)."""
        protocol = (security_protocol or "PLAINTEXT").upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security_protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                             f"not {security_protocol!r}")
        context = None
        if protocol in TLS_PROTOCOLS:
            context = ssl_context or _kwargs_context(ssl_check_hostname, ssl_cafile, ssl_certfile, ssl_keyfile,
                                                     ssl_password, ssl_crlfile, ssl_ciphers)
        if protocol in SASL_PROTOCOLS:
            if sasl_mechanism not in SASL_MECHANISMS:
                raise ValueError(f"sasl_mechanism must be one of {', '.join(SASL_MECHANISMS)} with security_protocol "
                                 f"{protocol}, not {sasl_mechanism!r}")
            if not sasl_plain_username or sasl_plain_password is None:
                raise ValueError(f"sasl_plain_username and sasl_plain_password are required for {sasl_mechanism}")
        return cls(protocol, context, sasl_mechanism, sasl_plain_username, sasl_plain_password)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "ClientSecurity":
        """From a client's config dict (the keys of ``SECURITY_DEFAULTS`` it holds)."""
        return cls.from_kwargs(**{k: config[k] for k in SECURITY_DEFAULTS if k in config})

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> "ClientSecurity":
        return cls.from_kwargs(**security_kwargs_from_properties(props))


def client_security(config: Mapping[str, Any]) -> ClientSecurity | None:
    """A client's security from its config dict (None for PLAINTEXT); bad settings raise
    ``KafkaConfigurationError`` as every other bad client setting does."""
    try:
        security = ClientSecurity.from_config(config)
    except ValueError as exc:
        raise KafkaConfigurationError(str(exc)) from None
    return None if security.protocol == "PLAINTEXT" else security


def _kwargs_context(check_hostname: bool, cafile: str | None, certfile: str | None, keyfile: str | None,
                    password: str | None, crlfile: str | None, ciphers: str | None) -> ssl.SSLContext:
    """kafka-python's context: TLS 1.2+, the CA file (else the system's CAs), an optional client certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = bool(check_hostname)
    try:
        ctx.load_verify_locations(cafile) if cafile else ctx.load_default_certs()
        if certfile:
            ctx.load_cert_chain(certfile, keyfile, password=password)
        if crlfile:
            ctx.load_verify_locations(crlfile)
            ctx.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
        if ciphers:
            ctx.set_ciphers(ciphers)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"cannot build the TLS context (ssl_cafile/ssl_certfile/ssl_keyfile): {exc}") from None
    return ctx


def security_kwargs_from_properties(props: Mapping[str, str]) -> dict[str, Any]:
    """Kafka client properties -> ``ClientSecurity.from_kwargs`` keywords.

    security.protocol, sasl.mechanism, sasl.jaas.config (PlainLoginModule / ScramLoginModule with username and
    password) and the ssl.* keys of a PEM trust store / key store (files or PEM text), as an SSLContext.
    Raises ValueError naming the property."""
    kwargs = _protocol_and_sasl(props)
    if kwargs["security_protocol"] in TLS_PROTOCOLS:
        try:
            kwargs["ssl_context"] = client_context(SslSettings.from_lookup(lambda key: props.get(key)))
        except SslConfigError as exc:
            raise ValueError(str(exc)) from None
    return kwargs


def file_security_kwargs(props: Mapping[str, str], prefix: str = "") -> dict[str, Any]:
    """Like ``security_kwargs_from_properties`` but only picklable values (file names, no SSLContext), for
    settings that travel to other processes (Spark executors): PEM stores must be files."""
    kwargs = _protocol_and_sasl(props, prefix)
    if kwargs["security_protocol"] not in TLS_PROTOCOLS:
        return kwargs
    try:
        settings = SslSettings.from_lookup(props.get, prefix)
    except SslConfigError as exc:
        raise ValueError(str(exc)) from None
    for text_key in ("ssl.truststore.certificates", "ssl.keystore.certificate.chain", "ssl.keystore.key"):
        if props.get(prefix + text_key):
            raise ValueError(f"Option '{prefix}{text_key}' is not supported here: give the PEM file with "
                             f"'{prefix}ssl.truststore.location' / '{prefix}ssl.keystore.location'")
    kwargs.update(ssl_cafile=settings.truststore_location, ssl_password=settings.key_password,
                  ssl_check_hostname=settings.endpoint_identification_algorithm.lower() == "https")
    if settings.keystore_location:
        kwargs.update(ssl_certfile=settings.keystore_location, ssl_keyfile=settings.keystore_location)
    if settings.cipher_suites:
        kwargs["ssl_ciphers"] = settings.openssl_ciphers(prefix)
    return kwargs


def _protocol_and_sasl(props: Mapping[str, str], prefix: str = "") -> dict[str, Any]:
    protocol = (props.get(prefix + "security.protocol") or "PLAINTEXT").strip().upper()
    kwargs: dict[str, Any] = {"security_protocol": protocol}
    if protocol in SASL_PROTOCOLS:
        mechanism = (props.get(prefix + "sasl.mechanism") or "GSSAPI").strip()
        kwargs["sasl_mechanism"] = mechanism
        jaas_text = props.get(prefix + "sasl.jaas.config")
        if not jaas_text:
            raise ValueError(f"{prefix}sasl.jaas.config is required for {prefix}sasl.mechanism={mechanism} "
                             "(Odradek's clients have no JAAS file)")
        try:
            jaas = parse_jaas(jaas_text)
        except JaasError as exc:
            raise ValueError(f"Invalid value for configuration {prefix}sasl.jaas.config: {exc}") from None
        kwargs["sasl_plain_username"] = jaas.username
        kwargs["sasl_plain_password"] = jaas.password
    return kwargs
