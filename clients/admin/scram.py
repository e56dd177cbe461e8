"""SCRAM credential administration for ``AIOAdmin`` (mixed in), as Kafka's Admin (KIP-554):

    await admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("alice", "SCRAM-SHA-256", iterations=4096, password="alice-secret"),
        UserScramCredentialDeletion("bob", "SCRAM-SHA-512")])            # -> {"alice": None, "bob": None}
    await admin.describe_user_scram_credentials(["alice"])
    # {"alice": UserScramCredentialsDescription("alice", [ScramCredentialInfo("SCRAM-SHA-256", 4096)], None)}

The password never leaves the client: as the Java Admin, we send a random salt and the salted password
(Hi(password, salt, iterations)); the broker derives the stored and server keys. Alterations go to the
controller (NOT_CONTROLLER is retried there), descriptions to any broker. Per-user errors come back as
``odradek.protocol.errors`` instances (``None`` for success).
"""

from __future__ import annotations

from typing import Any, Iterable, NamedTuple

from ...protocol.errors import KafkaError, for_code  # type: ignore[attr-defined]
from ...protocol.messages import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest
from .calls import ANY, AdminCalls, Try, at_controller
from ..security.scram import DEFAULT_ITERATIONS, MECHANISMS, MECHANISMS_BY_TYPE, random_salt, salted_password

__all__ = ["ScramAdmin", "ScramCredentialInfo", "UserScramCredentialsDescription", "UserScramCredentialUpsertion",
           "UserScramCredentialDeletion"]


class ScramCredentialInfo(NamedTuple):
    mechanism: str  # "SCRAM-SHA-256" or "SCRAM-SHA-512"
    iterations: int


class UserScramCredentialsDescription(NamedTuple):
    user: str
    credential_infos: list[ScramCredentialInfo]
    error: KafkaError | None = None


class UserScramCredentialUpsertion(NamedTuple):
    user: str
    mechanism: str
    password: str | bytes
    iterations: int = DEFAULT_ITERATIONS
    salt: bytes | None = None  # None: a random one (Kafka's clients always pick it)

    def __repr__(self) -> str:  # never the password, in a log line or a traceback
        return (f"UserScramCredentialUpsertion(user={self.user!r}, mechanism={self.mechanism!r}, "
                f"iterations={self.iterations})")


class UserScramCredentialDeletion(NamedTuple):
    user: str
    mechanism: str


def _mechanism(name: str) -> Any:
    try:
        return MECHANISMS[name]
    except KeyError:
        raise ValueError(f"unknown SCRAM mechanism {name!r} (expected one of {', '.join(MECHANISMS)})") from None


class ScramAdmin:
    """The SCRAM part of ``AIOAdmin``; needs ``self._calls``."""

    _calls: AdminCalls

    async def describe_user_scram_credentials(self, users: Iterable[str] | None = None
                                              ) -> dict[str, UserScramCredentialsDescription]:
        """user -> its SCRAM mechanisms and iterations (``users=None``: every user that has any)."""
        names = None if users is None else list(users)
        request = DescribeUserScramCredentialsRequest(
            users=None if names is None else [DescribeUserScramCredentialsRequest.UserName(name=n) for n in names])
        async def attempt(t: Try) -> Any:
            assert t.conn is not None
            response = await t.conn.send(request, timeout=t.timeout)
            if response.error_code:
                raise for_code(response.error_code)(response.error_message or "")  # type: ignore[misc]
            return response

        response = await self._calls.run("describeUserScramCredentials", ANY, attempt)
        out = {}
        for r in response.results:
            infos = [ScramCredentialInfo(MECHANISMS_BY_TYPE[i.mechanism].name if i.mechanism in MECHANISMS_BY_TYPE
                                         else "UNKNOWN", i.iterations) for i in r.credential_infos]
            error = for_code(r.error_code)(r.error_message or "") if r.error_code else None  # type: ignore[misc]
            out[r.user] = UserScramCredentialsDescription(r.user, infos, error)
        return out

    async def alter_user_scram_credentials(
            self, alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion]
    ) -> dict[str, KafkaError | None]:
        """Add, change or remove SCRAM credentials; user -> None or the broker's error for that user."""
        upsertions, deletions = [], []
        for a in alterations:
            mechanism = _mechanism(a.mechanism)
            if isinstance(a, UserScramCredentialDeletion):
                deletions.append(AlterUserScramCredentialsRequest.ScramCredentialDeletion(
                    name=a.user, mechanism=mechanism.type_id))
                continue
            salt = a.salt if a.salt is not None else random_salt()
            upsertions.append(AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
                name=a.user, mechanism=mechanism.type_id, iterations=a.iterations, salt=salt,
                salted_password=salted_password(mechanism, a.password, salt, a.iterations)))
        users = {name: name for name in [u.name for u in upsertions] + [d.name for d in deletions]}

        def request(names: list[str], t: Try) -> Any:
            return AlterUserScramCredentialsRequest(upsertions=[u for u in upsertions if u.name in names],
                                                    deletions=[d for d in deletions if d.name in names])

        return await at_controller(self._calls, "alterUserScramCredentials", users, request,
                                   lambda response: [(r.user, r.error_code, r.error_message or "")
                                                     for r in response.results], None, item="user")
