"""ConsumerRebalanceListener: aiokafka's shape (kafka-python's has the same two methods).

Either method may be a plain function or a coroutine function; the group coordinator awaits the
latter. Revocation comes before the member rejoins (after the auto-commit, when on), so committing
there with the consumer's ``commit()`` still uses the generation that owned the partitions.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from ..types import TopicPartition

log = logging.getLogger(__name__)


class ConsumerRebalanceListener:
    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any:
        """The partitions this member gives up, before the group rebalances."""

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any:
        """The partitions this member owns after the rebalance (fetching starts from their committed offsets)."""


async def call_listener(listener: Any, method: str, partitions: set[TopicPartition]) -> None:
    """Call ``listener.method(partitions)`` (sync or async); its exceptions are logged, as Kafka's
    ConsumerCoordinator does, so a failing callback cannot wedge the group protocol."""
    callback = getattr(listener, method, None) if listener is not None else None
    if callback is None:
        return
    try:
        result = callback(set(partitions))
        if inspect.isawaitable(result):
            await result
    except Exception:  # the application's code: report it, keep the membership going
        log.exception("rebalance listener %s.%s failed", type(listener).__name__, method)
