"""The Topics page's list, kept as a snapshot refreshed in the background.

For 10,000 partitions, Metadata, two ListOffsets rounds, DescribeLogDirs and DescribeConfigs take a second
or more together against a loaded cluster; the page instead gets the latest snapshot at once, with its age
(at most about one refresh interval). A change made through the console (create, delete, add partitions)
refreshes it before the change's answer, so the list the page reloads shows it. Nobody asking for the list
for ``IDLE_S`` stops the refreshes (the next ask then waits for a fresh one and starts them again).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..clients import TopicPartition
from .cluster_clients import ClusterClients
from .cluster_reads import EARLIEST, LATEST, list_offsets, replica_sizes, topic_configs
from .periodic import Periodic


IDLE_S = 120.0


async def settled(**calls: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Run the awaitables together: (name -> result for those that succeeded, name -> error text)."""
    from .json_api import error_text

    names = list(calls)
    results = await asyncio.gather(*calls.values(), return_exceptions=True)
    done, errors = {}, {}
    for name, result in zip(names, results):
        if isinstance(result, BaseException):
            if isinstance(result, asyncio.CancelledError):
                raise result
            errors[name] = error_text(result)
        else:
            done[name] = result
    return done, errors


async def read_topic_list(console: ClusterClients) -> dict[str, Any]:
    """Every topic with partitions, replication factor, size (largest replica per partition), messages
    (log end minus log start) and cleanup policy; a part that failed is null and named in ``errors``."""
    metadata = await console.client.metadata_response(None)
    leaders = {TopicPartition(t.name, p.partition_index): p.leader_id for t in metadata.topics for p in t.partitions}
    names = sorted({t.name for t in metadata.topics})
    done, errors = await settled(
        starts=list_offsets(console.client, leaders, EARLIEST, leaders),
        ends=list_offsets(console.client, leaders, LATEST, leaders),
        log_dirs=console.admin.describe_log_dirs(),
        configs=topic_configs(console.client, names, ["cleanup.policy"]))
    sizes = replica_sizes(done["log_dirs"])[0] if "log_dirs" in done else None
    starts, ends, configs = done.get("starts"), done.get("ends"), done.get("configs")
    out = []
    for topic in sorted(metadata.topics, key=lambda t: t.name):
        tps = [TopicPartition(topic.name, p.partition_index) for p in topic.partitions]
        messages = None
        if starts is not None and ends is not None:
            known = [(starts[tp], ends[tp]) for tp in tps if starts.get(tp) is not None and ends.get(tp) is not None]
            messages = sum(end - start for start, end in known)
        out.append({
            "name": topic.name, "internal": topic.is_internal, "partitions": len(topic.partitions),
            "replication_factor": max((len(p.replica_nodes) for p in topic.partitions), default=0),
            "size": sum(sizes.get(tp, 0) for tp in tps) if sizes is not None else None,
            "messages": messages,
            "cleanup_policy": (configs or {}).get(topic.name, {}).get("cleanup.policy"),
            "under_replicated": sum(1 for p in topic.partitions if len(p.isr_nodes) < len(p.replica_nodes)),
            "offline": sum(1 for p in topic.partitions if p.leader_id < 0),
        })
    return {"topics": out, "errors": errors}


class TopicList(Periodic):
    def __init__(self, console: ClusterClients, interval_s: float = 5.0) -> None:
        super().__init__(interval_s)
        self.console = console
        self.snapshot: dict[str, Any] | None = None
        self.taken = 0.0
        self.asked = 0.0  # monotonic time of the last ask
        self._lock = asyncio.Lock()

    def wanted(self) -> bool:
        return time.monotonic() - self.asked < IDLE_S

    async def run_once(self) -> None:
        async with self._lock:  # one refresh at a time; a refresh asked for meanwhile waits for its own
            snapshot = await read_topic_list(self.console)
            self.snapshot, self.taken = snapshot, time.time()

    async def current(self) -> dict[str, Any]:
        """The latest snapshot (taken now when there is none yet) with its age in seconds."""
        self.asked = time.monotonic()
        if self.snapshot is None or time.time() - self.taken > 3 * self.interval_s:  # none, or taken before
            await self.run_once()                                                       # an idle spell
        assert self.snapshot is not None
        return {**self.snapshot, "age_s": round(time.time() - self.taken, 1)}
