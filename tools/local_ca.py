"""A local certificate authority for secured test and development clusters (the ``cryptography`` package).

    ca = LocalCA(directory)                      # ca.pem (certificate) and ca-key.pem, made once
    ca.issue("broker", hosts=["localhost", "127.0.0.1"])   # broker.pem: PKCS#8 key + certificate + CA
    ca.issue("alice", client=True)               # a client certificate for mutual TLS (CN=alice)

Each issued file is a Kafka PEM key store (``ssl.keystore.type=PEM``, ``ssl.keystore.location``): the
private key (PKCS#8, encrypted when ``key_password`` is given) followed by the certificate chain; ``ca.pem``
is the trust store (``ssl.truststore.location``). Keys are EC P-256, cheap to handshake with.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path
from typing import Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["LocalCA"]

_DAY = datetime.timedelta(days=1)


def _private_write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _name(common_name: str, unit: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Odradek")]
    if unit:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, unit))
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


class LocalCA:
    def __init__(self, directory: str | os.PathLike, name: str = "Odradek Local CA") -> None:
        self.directory = Path(directory)
        self.cert_path = self.directory / "ca.pem"
        self.key_path = self.directory / "ca-key.pem"
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.cert_path.exists() and self.key_path.exists():
            self._key = serialization.load_pem_private_key(self.key_path.read_bytes(), None)
            self._cert = x509.load_pem_x509_certificate(self.cert_path.read_bytes())
            return
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        subject = _name(name)
        self._cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                      .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
                      .not_valid_before(now - _DAY).not_valid_after(now + 3650 * _DAY)
                      .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                      .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                   content_commitment=False, key_encipherment=False,
                                                   data_encipherment=False, key_agreement=False,
                                                   encipher_only=False, decipher_only=False), critical=True)
                      .sign(self._key, hashes.SHA256()))
        _private_write(self.key_path, self._key.private_bytes(serialization.Encoding.PEM,
                                                              serialization.PrivateFormat.PKCS8,
                                                              serialization.NoEncryption()))
        self.cert_path.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    @property
    def certificate_pem(self) -> str:
        return self.cert_path.read_text()

    def issue(self, common_name: str, hosts: Sequence[str] = ("localhost", "127.0.0.1"), *, client: bool = False,
              unit: str | None = None, key_password: str | None = None, valid_days: float = 825,
              expired: bool = False, path: str | os.PathLike | None = None) -> Path:
        """Write ``<common_name>.pem`` (or ``path``): the PKCS#8 key, then the certificate and the CA's.

        Server certificates name ``hosts`` (DNS names or IP addresses) as subject alternative names;
        ``expired=True`` makes one that ran out yesterday (for tests)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        start, end = (now - 30 * _DAY, now - _DAY) if expired else (now - _DAY, now + valid_days * _DAY)
        sans: list[x509.GeneralName] = []
        for host in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        usage = [ExtendedKeyUsageOID.CLIENT_AUTH] if client else [ExtendedKeyUsageOID.SERVER_AUTH,
                                                                  ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = (x509.CertificateBuilder().subject_name(_name(common_name, unit)).issuer_name(self._cert.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(start).not_valid_after(end)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage(usage), critical=False))
        if sans and not client:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        encryption = (serialization.BestAvailableEncryption(key_password.encode()) if key_password
                      else serialization.NoEncryption())
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
        pem += cert.public_bytes(serialization.Encoding.PEM) + self._cert.public_bytes(serialization.Encoding.PEM)
        out = Path(path) if path is not None else self.directory / f"{common_name}.pem"
        _private_write(out, pem)
        return out
