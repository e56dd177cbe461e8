"""Consumer-group lag: computed from the group's committed offsets and the partitions' log end offsets, and
sampled in the background into a 15-minute history per group for the lag plot."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

from ..clients import TopicPartition
from .cluster_clients import ClusterClients
from .cluster_reads import LATEST, list_offsets
from .periodic import Periodic


WINDOW_S = 15 * 60
MAX_GROUPS_SAMPLED = 200


async def group_lag(console: ClusterClients, group_id: str) -> dict[str, Any]:
    """{"partitions": [{topic, partition, committed, end, lag}], "total": sum of lags} for the group's
    committed partitions (lag None where the end offset could not be read)."""
    committed = await console.admin.list_consumer_group_offsets(group_id)
    topics = sorted({tp.topic for tp in committed})
    leaders: dict[TopicPartition, int] = {}
    if topics:
        metadata = await console.client.metadata(topics)
        leaders = {TopicPartition(t, p): info.leader for t in topics if t in metadata.topics
                   for p, info in metadata.topics[t].partitions.items()}
    ends = await list_offsets(console.client, committed, LATEST, leaders)
    rows, total = [], 0
    for tp, offset in committed.items():
        end = ends.get(tp)
        lag = None if end is None else max(0, end - offset.offset)
        total += lag or 0
        rows.append({"topic": tp.topic, "partition": tp.partition, "committed": offset.offset, "end": end,
                     "lag": lag, "metadata": offset.metadata})
    return {"partitions": rows, "total": total}


class LagHistory(Periodic):
    def __init__(self, console: ClusterClients, interval_s: float = 5.0) -> None:
        super().__init__(interval_s)
        self.console = console
        self.series: dict[str, deque[tuple[float, int]]] = {}

    def record(self, group_id: str, total: int) -> None:
        series = self.series.setdefault(group_id, deque(maxlen=int(WINDOW_S / self.interval_s) + 1))
        series.append((time.time(), total))

    def history(self, group_id: str) -> list[list[float]]:
        return [[t, v] for t, v in self.series.get(group_id, ())]

    async def run_once(self) -> None:
        groups = await self.console.admin.list_consumer_groups()
        wanted = sorted(g.group_id for g in groups)[:MAX_GROUPS_SAMPLED]

        async def one(group_id: str) -> None:
            try:
                self.record(group_id, (await group_lag(self.console, group_id))["total"])
            except Exception:  # noqa: BLE001 - this group is skipped this round
                pass

        await asyncio.gather(*(one(g) for g in wanted))
        for gone in set(self.series) - set(wanted):
            del self.series[gone]
