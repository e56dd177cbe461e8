"""The broker services the group and transaction coordinators use, for their unit tests: a replica manager
on real Logs and a metadata cache that knows a fixed set of partitions."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from odradek.broker.log import Log
from odradek.broker.log.log_config import LogConfig
from odradek.broker.replica_manager import ProducePartitionResult
from odradek.protocol.errors import KafkaError
from odradek.protocol.records.control import ControlRecordType, build_control_batch

TopicPartition = tuple[str, int]


class LogReplicaManager:
    """Appends to a real Log per partition (``<directory>/<topic>-<partition>``, opened on first use), as the
    only replica and leader would at ``leader_epoch``. A log's refusal (a fenced producer epoch) answers with
    its error code, as the replica manager does; ``fail_with`` answers every partition with that code
    instead. ``replicate_later``: acks=-1 appends go into the log at once but answer through a future that
    ``replicate()`` resolves. ``appends`` counts append_records calls."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.logs: dict[TopicPartition, Log] = {}
        self.leader_epoch = 0
        self.fail_with = 0
        self.appends = 0
        self.replicate_later = False
        self.unreplicated: list[tuple[asyncio.Future, dict]] = []

    def log(self, tp: TopicPartition) -> Log:
        if tp not in self.logs:
            self.logs[tp] = Log(str(self.directory / f"{tp[0]}-{tp[1]}"), LogConfig())
        return self.logs[tp]

    def online_partition(self, topic: str, partition: int) -> SimpleNamespace:
        return SimpleNamespace(log=self.log((topic, partition)), leader_epoch=self.leader_epoch)

    def append_records(self, acks, timeout_ms, entries):
        self.appends += 1
        results = {}
        for tp, data in entries.items():
            if self.fail_with:
                results[tp] = ProducePartitionResult(self.fail_with)
                continue
            try:
                info = self.log(tp).append_as_leader(data, self.leader_epoch)
            except KafkaError as exc:
                results[tp] = ProducePartitionResult(exc.code)
                continue
            results[tp] = ProducePartitionResult(0, info.first_offset)
        if self.replicate_later and acks == -1:
            future = asyncio.get_running_loop().create_future()
            self.unreplicated.append((future, results))
            return future
        return results

    def replicate(self, error_code: int = 0) -> None:
        """The oldest write waiting for its replicas is durable (or, with ``error_code``, failed)."""
        future, results = self.unreplicated.pop(0)
        future.set_result({tp: ProducePartitionResult(error_code) if error_code else r for tp, r in results.items()})

    def append_marker(self, tp: TopicPartition, producer_id: int, producer_epoch: int, committed: bool) -> None:
        """The transaction marker (COMMIT or ABORT) the producer's transaction coordinator would write."""
        kind = ControlRecordType.COMMIT if committed else ControlRecordType.ABORT
        self.log(tp).append_as_leader(bytearray(build_control_batch(
            kind, producer_id=producer_id, producer_epoch=producer_epoch, coordinator_epoch=0)), self.leader_epoch)


class KnownPartitions:
    """A metadata cache that knows the partitions in ``known`` (topic, partition) and no other."""

    def __init__(self, known) -> None:
        self.known = set(known)

    def partition(self, topic: str, partition: int):
        return object() if (topic, partition) in self.known else None
