"""Active producers of partitions for ``AIOAdmin`` (mixed in): Kafka's ``Admin.describeProducers`` (KIP-664).

    states = await admin.describe_producers([TopicPartition("events", 0)])
    # {TopicPartition("events", 0): [ProducerState(producer_id=4000, producer_epoch=0, last_sequence=41,
    #                                              last_timestamp=1700000000000, coordinator_epoch=None,
    #                                              current_transaction_start_offset=None)]}

Each partition is asked of its leader (or of ``broker_id`` when given, as the Java option ``brokerId``), one
DescribeProducers request per broker, sent at once. A leader that moved is looked up again (until the
call's deadline, ``admin_calls``); other errors, and any error of the broker given as ``broker_id``,
raise. As in the Java ProducerState, a coordinator epoch or transaction start offset of -1 is None.
"""

from __future__ import annotations

import asyncio
from typing import Any, Iterable, NamedTuple

from ...protocol.errors import NotLeaderOrFollowerError, for_code  # type: ignore[attr-defined]
from ...protocol.messages import DescribeProducersRequest
from .calls import LEADERS, AdminCalls, Broker, Try, final
from ..types import TopicPartition


class ProducerState(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None
    current_transaction_start_offset: int | None


class ProducerAdmin:
    """The producer-state part of ``AIOAdmin``; needs ``self._client`` and ``self._calls``."""

    _client: Any
    _calls: AdminCalls

    async def describe_producers(self, partitions: Iterable[TopicPartition], *, broker_id: int | None = None,
                                 timeout_ms: int | None = None) -> dict[TopicPartition, list[ProducerState]]:
        pending = {TopicPartition(*tp) for tp in partitions}
        found: dict[TopicPartition, list[ProducerState]] = {}

        async def ask(node: int, tps: list[TopicPartition], t: Try) -> None:
            by_topic: dict[str, list[int]] = {}
            for tp in tps:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            request = DescribeProducersRequest(topics=[
                DescribeProducersRequest.TopicRequest(name=t, partition_indexes=ps) for t, ps in by_topic.items()])
            response = await self._client.send(node, request, timeout=t.timeout)
            for topic in response.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    if p.error_code == 0:
                        found[tp] = [_state(s) for s in p.active_producers]
                        pending.discard(tp)
                    elif broker_id is not None or not for_code(p.error_code).retriable:
                        raise final(for_code(p.error_code)(p.error_message or f"DescribeProducers of {tp}"))

        async def attempt(t: Try) -> dict[TopicPartition, list[ProducerState]]:
            if broker_id is not None:
                by_node = {broker_id: sorted(pending)}
            else:
                by_node = await self._client.partitions_by_leader(pending)
            await asyncio.gather(*(ask(node, tps, t) for node, tps in by_node.items()))
            if pending:  # answered NOT_LEADER_OR_FOLLOWER: the leader moved, look it up again
                raise NotLeaderOrFollowerError(f"DescribeProducers of {sorted(pending)}")
            return dict(sorted(found.items()))

        route = LEADERS if broker_id is None else Broker(broker_id)
        return await self._calls.run("describeProducers", route, attempt, timeout_ms)


def _state(s: Any) -> ProducerState:
    return ProducerState(s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp,
                         None if s.coordinator_epoch < 0 else s.coordinator_epoch,
                         None if s.current_txn_start_offset < 0 else s.current_txn_start_offset)
