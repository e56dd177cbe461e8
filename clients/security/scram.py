"""SCRAM (RFC 5802, RFC 7677) as Kafka speaks it: the formulas, the four messages, the stored credential.

Sans-IO and shared by both sides: the broker's ScramSaslServer (``broker/security/sasl_server.py``), our
clients' authenticator (``clients/security/sasl_client.py``), the SCRAM credential APIs and the tools
that write credentials into ZooKeeper. The message grammar is Kafka's (``ScramMessages``): a gs2 header
without channel binding ("n,,"), optional extensions after the nonce, and the credential text
``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`` that Kafka keeps in ZooKeeper.
Passwords are used as their UTF-8 bytes, without SASLprep (Kafka's ``ScramFormatter.normalize``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field

__all__ = ["ScramMechanism", "MECHANISMS", "ScramCredential", "ScramError", "ClientFirst", "ServerFirst",
           "ClientFinal", "ServerFinal", "ScramClient", "salted_password", "make_credential",
           "random_nonce", "random_salt", "sasl_name", "username_of", "DEFAULT_ITERATIONS", "MAX_ITERATIONS"]

DEFAULT_ITERATIONS = 4096  # kafka-configs.sh's default
MAX_ITERATIONS = 16384     # AlterUserScramCredentials refuses more (ZkAdminManager)


class ScramError(ValueError):
    """A malformed SCRAM message or credential, or a failed verification."""


@dataclass(frozen=True)
class ScramMechanism:
    name: str        # "SCRAM-SHA-256"
    hash_name: str   # hashlib's name
    type_id: int     # the int8 of the SCRAM credential APIs (ScramMechanism.type in Kafka)
    min_iterations: int = 4096

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256", 1)
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512", 2)
MECHANISMS: dict[str, ScramMechanism] = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
MECHANISMS_BY_TYPE: dict[int, ScramMechanism] = {m.type_id: m for m in MECHANISMS.values()}


# -- formulas (RFC 5802 section 3) ---------------------------------------------------------------------

def salted_password(mechanism: ScramMechanism, password: str | bytes, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): PBKDF2 with HMAC of the mechanism's hash, one block."""
    raw = password.encode("utf-8") if isinstance(password, str) else password
    return hashlib.pbkdf2_hmac(mechanism.hash_name, raw, salt, iterations)


def _xor(a: bytes, b: bytes) -> bytes:
    if len(a) != len(b):
        raise ScramError("proof of the wrong length")
    return bytes(x ^ y for x, y in zip(a, b))


def random_nonce() -> str:
    """Printable, comma-free, as Kafka's secureRandomString (130 random bits in base 36)."""
    return _base36(secrets.randbits(130))


def random_salt() -> bytes:
    """Kafka's salts are the ASCII bytes of a random base-36 string (ScramFormatter.secureRandomBytes)."""
    return random_nonce().encode("ascii")


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def sasl_name(username: str) -> str:
    """RFC 5802 saslname: '=' -> '=3D', ',' -> '=2C'."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username_of(name: str) -> str:
    """The inverse of ``sasl_name``; any other '=' is invalid (Kafka's ScramFormatter.username)."""
    decoded = name.replace("=2C", ",")
    if "=" in decoded.replace("=3D", ""):
        raise ScramError(f"Invalid username: {name}")
    return decoded.replace("=3D", "=")


@dataclass(frozen=True)
class ScramCredential:
    """What the server keeps of a password: never the password itself."""
    salt: bytes
    stored_key: bytes = field(repr=False)  # enough to impersonate the user or the server: never in a repr
    server_key: bytes = field(repr=False)
    iterations: int

    @classmethod
    def from_salted_password(cls, mechanism: ScramMechanism, salt: bytes, salted: bytes,
                             iterations: int) -> "ScramCredential":
        client_key = mechanism.hmac(salted, b"Client Key")
        return cls(salt, mechanism.hash(client_key), mechanism.hmac(salted, b"Server Key"), iterations)

    def to_text(self) -> str:
        """Kafka's ScramCredentialUtils.credentialToString, the value stored in /config/users/<user>."""
        b64 = lambda b: base64.b64encode(b).decode("ascii")  # noqa: E731
        return (f"salt={b64(self.salt)},stored_key={b64(self.stored_key)},server_key={b64(self.server_key)},"
                f"iterations={self.iterations}")

    @classmethod
    def from_text(cls, text: str) -> "ScramCredential":
        props: dict[str, str] = {}
        for token in text.split(","):
            key, sep, value = token.partition("=")
            if not sep or not key:
                raise ScramError(f"Credentials not valid: {text}")
            props[key] = value
        if set(props) != {"salt", "stored_key", "server_key", "iterations"}:
            raise ScramError(f"Credentials not valid: {text}")
        try:
            return cls(base64.b64decode(props["salt"], validate=True),
                       base64.b64decode(props["stored_key"], validate=True),
                       base64.b64decode(props["server_key"], validate=True), int(props["iterations"]))
        except (ValueError, binascii.Error):
            raise ScramError(f"Credentials not valid: {text}") from None


def make_credential(mechanism: ScramMechanism, password: str, iterations: int = DEFAULT_ITERATIONS,
                    salt: bytes | None = None) -> ScramCredential:
    """A new credential for ``password`` (ScramFormatter.generateCredential)."""
    salt = salt if salt is not None else random_salt()
    return ScramCredential.from_salted_password(mechanism, salt, salted_password(mechanism, password, salt,
                                                                                 iterations), iterations)


# -- messages (Kafka's ScramMessages grammar) --------------------------------------------------------------

_SAFE = r"[\x01-\x2B\x2D-\x3C\x3E-\x7F]"        # \x01-\x7F without ',' (2C) and '=' (3D)
_VALUE = r"[\x01-\x2B\x2D-\x7F]+"               # \x01-\x7F without ','
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"           # \x21-\x7E without ','
_SASLNAME = rf"(?:{_SAFE}|=2C|=3D)+"
_B64C = r"[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64C}{{4}})*(?:{_B64C}{{3}}=|{_B64C}{{2}}==)?"
_RESERVED = rf"(?:m={_VALUE},)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"

_CLIENT_FIRST = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?P<bare>{_RESERVED}n=(?P<saslname>{_SASLNAME}),"
                           rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}))")
_SERVER_FIRST = re.compile(rf"{_RESERVED}r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),i=(?P<iterations>[0-9]+)"
                           rf"{_EXTENSIONS}")
_CLIENT_FINAL = re.compile(rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),"
                           rf"p=(?P<proof>{_BASE64})")
_SERVER_FINAL = re.compile(rf"(?:e=(?P<error>{_SAFE}+))|(?:v=(?P<signature>{_BASE64}){_EXTENSIONS})")


def _match(pattern: re.Pattern, data: bytes, what: str) -> re.Match:
    """The message's fields, or ScramError naming the message (Kafka's "Invalid SCRAM ... message format")."""
    try:
        message = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError(f"Invalid SCRAM {what} message format: not UTF-8") from None
    m = pattern.fullmatch(message)
    if m is None:
        raise ScramError(f"Invalid SCRAM {what} message format: {message}")
    return m


@dataclass(frozen=True)
class ClientFirst:
    """gs2 header + client-first-message-bare. ``bare`` is what goes into the AuthMessage."""
    sasl_name: str
    nonce: str
    authzid: str = ""
    extensions: tuple[tuple[str, str], ...] = ()
    bare: str = ""

    @classmethod
    def parse(cls, data: bytes) -> "ClientFirst":
        m = _match(_CLIENT_FIRST, data, "client first")
        extensions = tuple(tuple(item.split("=", 1)) for item in m.group("extensions").split(",")[1:])
        return cls(m.group("saslname"), m.group("nonce"), m.group("authzid") or "", extensions,  # type: ignore[arg-type]
                   m.group("bare"))

    @classmethod
    def build(cls, username: str, nonce: str, extensions: dict[str, str] | None = None) -> "ClientFirst":
        ext = tuple((extensions or {}).items())
        bare = f"n={sasl_name(username)},r={nonce}" + "".join(f",{k}={v}" for k, v in ext)
        return cls(sasl_name(username), nonce, "", ext, bare)

    def to_bytes(self) -> bytes:
        return f"n,{'a=' + self.authzid if self.authzid else ''},{self.bare}".encode("utf-8")


@dataclass(frozen=True)
class ServerFirst:
    nonce: str       # client nonce + server nonce
    salt: bytes
    iterations: int

    @classmethod
    def parse(cls, data: bytes) -> "ServerFirst":
        m = _match(_SERVER_FIRST, data, "server first")
        iterations = int(m.group("iterations"))
        if iterations <= 0 or iterations > 2**31 - 1:
            raise ScramError(f"Invalid SCRAM server first message format: invalid iterations {iterations}")
        return cls(m.group("nonce"), base64.b64decode(m.group("salt")), iterations)

    def text(self) -> str:
        return f"r={self.nonce},s={base64.b64encode(self.salt).decode('ascii')},i={self.iterations}"

    def to_bytes(self) -> bytes:
        return self.text().encode("utf-8")


@dataclass(frozen=True)
class ClientFinal:
    channel_binding: bytes
    nonce: str
    proof: bytes
    without_proof: str

    @classmethod
    def parse(cls, data: bytes) -> "ClientFinal":
        m = _match(_CLIENT_FINAL, data, "client final")
        return cls(base64.b64decode(m.group("channel")), m.group("nonce"), base64.b64decode(m.group("proof")),
                   m.group("without_proof"))

    @classmethod
    def build(cls, gs2_header: bytes, nonce: str, proof: bytes) -> "ClientFinal":
        without = f"c={base64.b64encode(gs2_header).decode('ascii')},r={nonce}"
        return cls(gs2_header, nonce, proof, without)

    def to_bytes(self) -> bytes:
        return f"{self.without_proof},p={base64.b64encode(self.proof).decode('ascii')}".encode("utf-8")


@dataclass(frozen=True)
class ServerFinal:
    error: str | None = None
    signature: bytes | None = None

    @classmethod
    def parse(cls, data: bytes) -> "ServerFinal":
        m = _match(_SERVER_FINAL, data, "server final")
        if m.group("error") is not None:
            return cls(error=m.group("error"))
        return cls(signature=base64.b64decode(m.group("signature")))

    def to_bytes(self) -> bytes:
        if self.error is not None:
            return f"e={self.error}".encode("utf-8")
        return f"v={base64.b64encode(self.signature or b'').decode('ascii')}".encode("utf-8")


def auth_message(client_first: ClientFirst, server_first: ServerFirst, client_final_without_proof: str) -> bytes:
    return f"{client_first.bare},{server_first.text()},{client_final_without_proof}".encode("utf-8")


def client_signature(mechanism: ScramMechanism, stored_key: bytes, message: bytes) -> bytes:
    return mechanism.hmac(stored_key, message)


def verify_proof(mechanism: ScramMechanism, credential: ScramCredential, message: bytes, proof: bytes) -> bool:
    """The server's check: H(ClientProof XOR ClientSignature) == StoredKey, in constant time."""
    signature = client_signature(mechanism, credential.stored_key, message)
    if len(proof) != len(signature):
        return False
    return hmac.compare_digest(mechanism.hash(_xor(signature, proof)), credential.stored_key)


def server_signature(mechanism: ScramMechanism, server_key: bytes, message: bytes) -> bytes:
    return mechanism.hmac(server_key, message)


class ScramClient:
    """The client side of one SCRAM exchange: ``first()``, ``final(server_first)``, ``verify(server_final)``."""

    GS2_HEADER = b"n,,"

    def __init__(self, mechanism: ScramMechanism, username: str, password: str, nonce: str | None = None,
                 extensions: dict[str, str] | None = None) -> None:
        self.mechanism = mechanism
        self.password = password
        self.client_first = ClientFirst.build(username, nonce or random_nonce(), extensions)
        self._expected_signature: bytes | None = None

    def first(self) -> bytes:
        return self.client_first.to_bytes()

    def final(self, server_first_bytes: bytes) -> bytes:
        server_first = ServerFirst.parse(server_first_bytes)
        if not server_first.nonce.startswith(self.client_first.nonce) or \
                len(server_first.nonce) == len(self.client_first.nonce):
            raise ScramError("Invalid server nonce: does not start with client nonce")
        if server_first.iterations < self.mechanism.min_iterations:
            raise ScramError(f"Requested iterations {server_first.iterations} is less than the minimum "
                             f"{self.mechanism.min_iterations} for {self.mechanism.name}")
        salted = salted_password(self.mechanism, self.password, server_first.salt, server_first.iterations)
        client_key = self.mechanism.hmac(salted, b"Client Key")
        without_proof = ClientFinal.build(self.GS2_HEADER, server_first.nonce, b"").without_proof
        message = auth_message(self.client_first, server_first, without_proof)
        proof = _xor(client_key, client_signature(self.mechanism, self.mechanism.hash(client_key), message))
        self._expected_signature = server_signature(self.mechanism, self.mechanism.hmac(salted, b"Server Key"),
                                                    message)
        return ClientFinal.build(self.GS2_HEADER, server_first.nonce, proof).to_bytes()

    def verify(self, server_final_bytes: bytes) -> None:
        server_final = ServerFinal.parse(server_final_bytes)
        if server_final.error is not None:
            raise ScramError(f"Sasl authentication using SCRAM failed with error: {server_final.error}")
        if self._expected_signature is None or not hmac.compare_digest(server_final.signature or b"",
                                                                       self._expected_signature):
            raise ScramError("Invalid server signature in server final message")
