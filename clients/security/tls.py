"""TLS contexts from Kafka's ``ssl.*`` settings, for brokers (listeners) and clients alike.

Kafka's keys and defaults (SslConfigs, 2.8) are read through ``SslSettings.from_lookup``; only PEM stores
exist here: ``ssl.keystore.type``/``ssl.truststore.type`` must be PEM when a store is configured (JKS and
PKCS12 are refused by name: fail closed, never a listener without its certificate). A PEM key store is
either one file (``ssl.keystore.location``: the private key, PKCS#8, and the certificate chain) or the
PEM text itself (``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``); ``ssl.key.password`` opens an
encrypted key. A trust store is a file of CA certificates (``ssl.truststore.location``) or their text
(``ssl.truststore.certificates``); without one the system's CAs are trusted, as the JVM's default.

``ssl.cipher.suites`` takes Kafka's (IANA) names, translated to OpenSSL's, or OpenSSL's own; Python
cannot narrow the TLS 1.3 suites, so TLS 1.3 names are accepted and reported in ``warnings``.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from dataclasses import dataclass, field
from typing import Callable

__all__ = ["SslSettings", "SslConfigError", "server_context", "client_context", "SSL_DEFAULTS"]

SSL_DEFAULTS: dict[str, str] = {
    "ssl.protocol": "TLSv1.3",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.cipher.suites": "",
    "ssl.keystore.type": "JKS",
    "ssl.truststore.type": "JKS",
    "ssl.endpoint.identification.algorithm": "https",
    "ssl.client.auth": "none",
}
_PROTOCOLS = {"TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
              "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_TLS13_SUITES = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
                 "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256"}


class SslConfigError(ValueError):
    """A bad ``ssl.*`` setting: ``key`` names it, the message is one line."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass
class SslSettings:
    """Kafka's ssl.* values for one listener or client (strings as configured, None when unset)."""
    keystore_type: str = "JKS"
    keystore_location: str | None = None
    keystore_password: str | None = None
    keystore_certificate_chain: str | None = None
    keystore_key: str | None = None
    key_password: str | None = None
    truststore_type: str = "JKS"
    truststore_location: str | None = None
    truststore_password: str | None = None
    truststore_certificates: str | None = None
    protocol: str = "TLSv1.3"
    enabled_protocols: list[str] = field(default_factory=lambda: ["TLSv1.2", "TLSv1.3"])
    cipher_suites: list[str] = field(default_factory=list)
    endpoint_identification_algorithm: str = "https"
    client_auth: str = "none"
    crl_file: str | None = None  # kafka-python's ssl_crlfile (no Kafka key)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_lookup(cls, get: Callable[[str], str | None], prefix: str = "") -> "SslSettings":
        """Read ``<prefix>ssl.*`` through ``get(key)`` (None when unset); defaults are Kafka's."""
        def value(key: str) -> str | None:
            raw = get(prefix + key)
            return raw if raw is not None else SSL_DEFAULTS.get(key)

        def listed(key: str) -> list[str]:
            return [p.strip() for p in (value(key) or "").split(",") if p.strip()]

        s = cls(keystore_type=(value("ssl.keystore.type") or "JKS").strip(),
                keystore_location=value("ssl.keystore.location") or None,
                keystore_password=value("ssl.keystore.password") or None,
                keystore_certificate_chain=value("ssl.keystore.certificate.chain") or None,
                keystore_key=value("ssl.keystore.key") or None,
                key_password=value("ssl.key.password") or None,
                truststore_type=(value("ssl.truststore.type") or "JKS").strip(),
                truststore_location=value("ssl.truststore.location") or None,
                truststore_password=value("ssl.truststore.password") or None,
                truststore_certificates=value("ssl.truststore.certificates") or None,
                protocol=(value("ssl.protocol") or "TLSv1.3").strip(),
                enabled_protocols=listed("ssl.enabled.protocols"),
                cipher_suites=listed("ssl.cipher.suites"),
                endpoint_identification_algorithm=(value("ssl.endpoint.identification.algorithm") or "").strip(),
                client_auth=(value("ssl.client.auth") or "none").strip().lower())
        s.validate(prefix)
        return s

    @property
    def has_keystore(self) -> bool:
        return bool(self.keystore_location or self.keystore_certificate_chain or self.keystore_key)

    @property
    def has_truststore(self) -> bool:
        return bool(self.truststore_location or self.truststore_certificates)

    def validate(self, prefix: str = "") -> None:
        """Kafka's checks (DefaultSslEngineFactory, PEM stores) and ours; raises ``SslConfigError``."""
        def bad(key: str, value: object, expected: str) -> SslConfigError:
            return SslConfigError(prefix + key, f"Invalid value {value} for configuration {prefix}{key}: {expected}")

        if self.has_keystore and self.keystore_type.upper() != "PEM":
            raise bad("ssl.keystore.type", self.keystore_type, "expected PEM (Odradek reads PEM key stores only; "
                      "convert a JKS or PKCS12 store to a PEM file holding the key and the certificate chain)")
        if self.has_truststore and self.truststore_type.upper() != "PEM":
            raise bad("ssl.truststore.type", self.truststore_type, "expected PEM (Odradek reads PEM trust stores "
                      "only; export the CA certificates to a PEM file)")
        if self.keystore_location and (self.keystore_certificate_chain or self.keystore_key):
            raise bad("ssl.keystore.location", self.keystore_location, "expected either ssl.keystore.location or "
                      "ssl.keystore.certificate.chain and ssl.keystore.key, not both")
        if bool(self.keystore_certificate_chain) != bool(self.keystore_key):
            key = "ssl.keystore.key" if self.keystore_certificate_chain else "ssl.keystore.certificate.chain"
            raise bad(key, "(unset)", "expected both ssl.keystore.certificate.chain and ssl.keystore.key")
        if self.has_keystore and self.keystore_password:
            raise bad("ssl.keystore.password", "(hidden)", "SSL key store password cannot be specified with PEM "
                      "format, only key password may be specified (ssl.key.password)")
        if self.has_truststore and self.truststore_password:
            raise bad("ssl.truststore.password", "(hidden)", "SSL trust store password cannot be specified for "
                      "PEM format")
        if self.truststore_location and self.truststore_certificates:
            raise bad("ssl.truststore.location", self.truststore_location, "expected either "
                      "ssl.truststore.location or ssl.truststore.certificates, not both")
        unknown = [p for p in self.enabled_protocols if p not in _PROTOCOLS]
        if unknown or not self.enabled_protocols:
            raise bad("ssl.enabled.protocols", ",".join(self.enabled_protocols),
                      "expected a list of: " + ", ".join(_PROTOCOLS))
        order = list(_PROTOCOLS)
        indexes = sorted({order.index(p) for p in self.enabled_protocols})
        if indexes != list(range(indexes[0], indexes[-1] + 1)):  # Python enables a range of versions, no gaps
            raise bad("ssl.enabled.protocols", ",".join(self.enabled_protocols),
                      "expected consecutive versions (e.g. TLSv1.2,TLSv1.3): every version between the lowest and "
                      "the highest listed would be enabled")
        if self.protocol not in (*_PROTOCOLS, "TLS"):
            raise bad("ssl.protocol", self.protocol, "expected one of: TLS, " + ", ".join(_PROTOCOLS))
        if self.client_auth not in _CLIENT_AUTH:
            raise bad("ssl.client.auth", self.client_auth, "expected one of: none, requested, required")
        if self.endpoint_identification_algorithm.lower() not in ("", "https"):
            raise bad("ssl.endpoint.identification.algorithm", self.endpoint_identification_algorithm,
                      "expected https or an empty value")
        self.openssl_ciphers(prefix)  # raises for unknown names

    def openssl_ciphers(self, prefix: str = "") -> str | None:
        """The OpenSSL cipher string for the TLS 1.2 suites of ``ssl.cipher.suites`` (None: library default)."""
        if not self.cipher_suites:
            return None
        names, tls13 = [], []
        for suite in self.cipher_suites:
            if suite in _TLS13_SUITES:
                tls13.append(suite)
                continue
            name = _openssl_name(suite)
            try:
                ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).set_ciphers(name)
            except ssl.SSLError:
                raise SslConfigError(prefix + "ssl.cipher.suites", f"Invalid value {suite} for configuration "
                                     f"{prefix}ssl.cipher.suites: not a cipher suite this OpenSSL knows") from None
            names.append(name)
        if tls13:
            message = (f"Configuration {prefix}ssl.cipher.suites: the TLS 1.3 suites {', '.join(tls13)} cannot be "
                       "narrowed in Python; every TLS 1.3 suite stays enabled")
            if message not in self.warnings:
                self.warnings.append(message)
        return ":".join(names) if names else None


def _openssl_name(suite: str) -> str:
    """IANA (Java) name -> OpenSSL name: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 -> ECDHE-RSA-AES128-GCM-SHA256."""
    m = re.fullmatch(r"TLS_(?P<kx>[A-Z0-9_]+?)_WITH_(?P<cipher>[A-Z0-9_]+)", suite)
    if m is None:
        return suite  # an OpenSSL name already (or nonsense, which set_ciphers refuses)
    kx = {"RSA": ""}.get(m.group("kx"), m.group("kx").replace("_", "-"))
    cipher = m.group("cipher")
    cipher = re.sub(r"^AES_(\d+)_", r"AES\1_", cipher)
    cipher = cipher.replace("_CBC_SHA", "_SHA").replace("CHACHA20_POLY1305_SHA256", "CHACHA20_POLY1305")
    cipher = cipher.replace("_", "-")
    return f"{kx}-{cipher}" if kx else cipher


def _versions(ctx: ssl.SSLContext, settings: SslSettings, client: bool = False, prefix: str = "") -> None:
    enabled = sorted(_PROTOCOLS[p] for p in settings.enabled_protocols)
    highest = enabled[-1]
    if client and settings.protocol in _PROTOCOLS:
        # Kafka's ssl.protocol: a client set to TLSv1.2 does not use TLSv1.3 even when it is enabled
        highest = min(highest, _PROTOCOLS[settings.protocol])
    if highest < enabled[0]:
        raise SslConfigError(prefix + "ssl.protocol", f"Invalid value {settings.protocol} for configuration "
                             f"{prefix}ssl.protocol: expected a version no older than those of ssl.enabled.protocols")
    ctx.minimum_version, ctx.maximum_version = enabled[0], highest


def _load_keystore(ctx: ssl.SSLContext, s: SslSettings, prefix: str) -> None:
    password = s.key_password
    try:
        if s.keystore_location:
            ctx.load_cert_chain(s.keystore_location, password=password)
            return
        # PEM text in the config: Python loads key stores from files only, so through a private temp dir
        with tempfile.TemporaryDirectory(prefix="odradek-keystore-") as tmp:
            chain, key = os.path.join(tmp, "chain.pem"), os.path.join(tmp, "key.pem")
            for path, text in ((chain, s.keystore_certificate_chain), (key, s.keystore_key)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(text or "")
            ctx.load_cert_chain(chain, key, password=password)
    except FileNotFoundError as exc:
        raise SslConfigError(prefix + "ssl.keystore.location", f"Invalid value {s.keystore_location} for "
                             f"configuration {prefix}ssl.keystore.location: {exc.strerror}") from None
    except (ssl.SSLError, OSError, ValueError) as exc:
        where = "ssl.keystore.location" if s.keystore_location else "ssl.keystore.key"
        raise SslConfigError(prefix + where, f"Cannot load the PEM key store of {prefix}{where}: {exc} (expected a "
                             "PKCS#8 private key and its certificate chain; an encrypted key needs "
                             f"{prefix}ssl.key.password)") from None


def _load_truststore(ctx: ssl.SSLContext, s: SslSettings, prefix: str) -> None:
    try:
        if s.truststore_location:
            ctx.load_verify_locations(cafile=s.truststore_location)
        elif s.truststore_certificates:
            ctx.load_verify_locations(cadata=s.truststore_certificates)
        else:
            # a client checks servers against the system CAs; a server checks clients against them
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH if ctx.protocol == ssl.PROTOCOL_TLS_CLIENT
                                   else ssl.Purpose.CLIENT_AUTH)
    except (ssl.SSLError, OSError, ValueError) as exc:
        key = "ssl.truststore.location" if s.truststore_location else "ssl.truststore.certificates"
        raise SslConfigError(prefix + key, f"Cannot load the PEM trust store of {prefix}{key}: {exc}") from None
    if s.crl_file:
        ctx.load_verify_locations(cafile=s.crl_file)
        ctx.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF


def _ciphers(ctx: ssl.SSLContext, s: SslSettings, prefix: str) -> None:
    ciphers = s.openssl_ciphers(prefix)
    if ciphers:
        ctx.set_ciphers(ciphers)


def server_context(settings: SslSettings, prefix: str = "") -> ssl.SSLContext:
    """A listener's context: its key store (required), the trust store for client certificates
    (``ssl.client.auth``), protocols and ciphers."""
    if not settings.has_keystore:
        raise SslConfigError(prefix + "ssl.keystore.location", f"Missing configuration {prefix}ssl.keystore.location "
                             "(or ssl.keystore.certificate.chain and ssl.keystore.key): an SSL listener needs its "
                             "key and certificate")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _versions(ctx, settings)
    _load_keystore(ctx, settings, prefix)
    ctx.verify_mode = _CLIENT_AUTH[settings.client_auth]
    if settings.client_auth != "none":
        _load_truststore(ctx, settings, prefix)
    _ciphers(ctx, settings, prefix)
    return ctx


def client_context(settings: SslSettings, prefix: str = "") -> ssl.SSLContext:
    """A client's context: the server's certificate is always verified against the trust store; its host
    name only with ``ssl.endpoint.identification.algorithm=https`` (Kafka's default); a key store, when
    given, is presented for mutual TLS."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = settings.endpoint_identification_algorithm.lower() == "https"
    _versions(ctx, settings, client=True, prefix=prefix)
    _load_truststore(ctx, settings, prefix)
    if settings.has_keystore:
        _load_keystore(ctx, settings, prefix)
    _ciphers(ctx, settings, prefix)
    return ctx
