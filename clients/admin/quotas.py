"""Client-quota administration for ``AIOAdmin`` (mixed in): Kafka's ``Admin.describeClientQuotas`` and
``alterClientQuotas``, in snake_case.

    await admin.alter_client_quotas([ClientQuotaAlteration(
        ClientQuotaEntity({ClientQuotaEntity.CLIENT_ID: "slow"}), [ClientQuotaAlteration.Op("producer_byte_rate", 200000)])])
    quotas = await admin.describe_client_quotas(ClientQuotaFilter.contains_only(
        [ClientQuotaFilterComponent.of_entity(ClientQuotaEntity.CLIENT_ID, "slow")]))
    # {ClientQuotaEntity({'client-id': 'slow'}): {'producer_byte_rate': 200000.0}}

An entity maps entity types (``user``, ``client-id``) to names; None is the default entity. An ``Op`` with
value None removes the key. Both calls go to any broker (ZooKeeper holds the quotas), retried as
``admin_calls`` says; a broker error is raised as the ``odradek.protocol.errors`` class of its code
(``raise_errors=False``: alter returns each entity's error instead).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from ...protocol.errors import KafkaError, for_code  # type: ignore[attr-defined]
from ...protocol.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest
from .calls import ANY, AdminCalls, Try


class ClientQuotaEntity:
    """Entity type -> name (None: the default); hashable, so results can be keyed by it."""

    USER = "user"
    CLIENT_ID = "client-id"
    IP = "ip"

    __slots__ = ("entries",)

    def __init__(self, entries: Mapping[str, str | None]) -> None:
        self.entries: dict[str, str | None] = dict(entries)

    def _key(self) -> tuple:
        return tuple(sorted(self.entries.items(), key=lambda item: item[0]))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClientQuotaEntity) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"ClientQuotaEntity({self.entries!r})"


class ClientQuotaFilterComponent(NamedTuple):
    """One entity type of a filter: ``match`` a name (MATCH_EXACT), the default (MATCH_DEFAULT) or any
    specified name (MATCH_SPECIFIED)."""
    entity_type: str
    match_type: int
    match: str | None

    MATCH_EXACT = 0
    MATCH_DEFAULT = 1
    MATCH_SPECIFIED = 2

    @classmethod
    def of_entity(cls, entity_type: str, name: str) -> "ClientQuotaFilterComponent":
        return cls(entity_type, cls.MATCH_EXACT, name)

    @classmethod
    def of_default_entity(cls, entity_type: str) -> "ClientQuotaFilterComponent":
        return cls(entity_type, cls.MATCH_DEFAULT, None)

    @classmethod
    def of_entity_type(cls, entity_type: str) -> "ClientQuotaFilterComponent":
        return cls(entity_type, cls.MATCH_SPECIFIED, None)


class ClientQuotaFilter(NamedTuple):
    """Components, and ``strict``: leave out entities that have entity types the components do not name."""
    components: tuple[ClientQuotaFilterComponent, ...]
    strict: bool

    @classmethod
    def contains(cls, components: Iterable[ClientQuotaFilterComponent]) -> "ClientQuotaFilter":
        return cls(tuple(components), False)

    @classmethod
    def contains_only(cls, components: Iterable[ClientQuotaFilterComponent]) -> "ClientQuotaFilter":
        return cls(tuple(components), True)

    @classmethod
    def all(cls) -> "ClientQuotaFilter":
        return cls((), False)


class ClientQuotaAlteration(NamedTuple):
    entity: ClientQuotaEntity
    ops: Sequence["ClientQuotaAlteration.Op"]

    class Op(NamedTuple):
        key: str
        value: float | None  # None removes the key


class QuotaAdmin:
    """The client-quota part of ``AIOAdmin``; needs ``self._calls``."""

    _calls: AdminCalls

    async def describe_client_quotas(self, quota_filter: ClientQuotaFilter | None = None
                                     ) -> dict[ClientQuotaEntity, dict[str, float]]:
        """The quotas of every entity the filter matches (default: all): entity -> {key: value}."""
        quota_filter = quota_filter or ClientQuotaFilter.all()
        component_cls = DescribeClientQuotasRequest.ComponentData
        request = DescribeClientQuotasRequest(strict=quota_filter.strict, components=[
            component_cls(entity_type=c.entity_type, match_type=c.match_type, match=c.match)
            for c in quota_filter.components])

        async def attempt(t: Try) -> Any:
            assert t.conn is not None
            response = await t.conn.send(request, timeout=t.timeout)
            if response.error_code:
                raise for_code(response.error_code)(response.error_message or "DescribeClientQuotas")
            return response

        response = await self._calls.run("describeClientQuotas", ANY, attempt)
        return {ClientQuotaEntity({e.entity_type: e.entity_name for e in entry.entity}):
                {v.key: v.value for v in entry.values} for entry in response.entries or ()}

    async def alter_client_quotas(self, alterations: Iterable[ClientQuotaAlteration], validate_only: bool = False,
                                  *, raise_errors: bool = True) -> dict[ClientQuotaEntity, KafkaError | None]:
        """Set or remove quota keys of entities; entity -> None or its error (INVALID_REQUEST, ...)."""
        entry_cls = AlterClientQuotasRequest.EntryData
        alterations = list(alterations)
        request = AlterClientQuotasRequest(validate_only=validate_only, entries=[entry_cls(
            entity=[entry_cls.EntityData(entity_type=t, entity_name=n) for t, n in a.entity.entries.items()],
            ops=[entry_cls.OpData(key=op.key, value=0.0 if op.value is None else float(op.value),
                                  remove=op.value is None) for op in a.ops]) for a in alterations])

        async def attempt(t: Try) -> Any:
            assert t.conn is not None
            return await t.conn.send(request, timeout=t.timeout)

        response = await self._calls.run("alterClientQuotas", ANY, attempt)
        results: dict[ClientQuotaEntity, KafkaError | None] = {}
        for entry in response.entries:
            entity = ClientQuotaEntity({e.entity_type: e.entity_name for e in entry.entity})
            results[entity] = (for_code(entry.error_code)(entry.error_message or repr(entity))
                               if entry.error_code else None)
        failed = [error for error in results.values() if error is not None]
        if raise_errors and failed:
            raise failed[0]
        return results
