"""An in-memory stand-in for the KafkaZkClient calls of the controller and the broker's IsrManager."""

from __future__ import annotations

from typing import Callable

from odradek.controller.zk_data import LeaderIsrAndControllerEpoch, TopicAssignment

TopicPartition = tuple[str, int]


class FakeZk:
    """ZooKeeper's data as dicts, with KafkaZkClient's version rules.

    Partition state znodes: ``znodes[(topic, partition)] = (state, version)``; a conditional write succeeds
    only at the znode's version (else None, as a BADVERSION), every write attempt is kept in ``writes`` as
    (partition, state, expected version), and ``conflict[partition] = state`` makes the next write to that
    partition meet a state another writer (a leader changing its ISR) put there just before. ISR change
    notifications go to ``isr_notifications``; ``topic_configs`` are /config/topics.
    Topics: ``assignments`` (topic -> TopicAssignment, read at version 3), ``partition_ids`` (the partition
    znodes that exist), data watches in ``watches`` (path -> callback) with removals in ``unwatched``, and
    assignment writes in ``assignment_writes``."""

    ASSIGNMENT_VERSION = 3

    def __init__(self, znodes: dict[TopicPartition, tuple[LeaderIsrAndControllerEpoch | None, int]] | None = None,
                 assignments: dict[str, TopicAssignment] | None = None) -> None:
        self.znodes = dict(znodes or {})
        self.writes: list[tuple[TopicPartition, LeaderIsrAndControllerEpoch, int]] = []
        self.conflict: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self.isr_notifications: list[list[TopicPartition]] = []
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.assignments = dict(assignments or {})
        self.partition_ids: dict[str, list[int]] = {t: sorted(a.partitions) for t, a in self.assignments.items()}
        self.watches: dict[str, Callable] = {}
        self.unwatched: list[str] = []
        self.assignment_writes: list[tuple] = []

    # -- partition state znodes ----------------------------------------------------------------------------
    def create_partition_states(self, states, epoch_zk_version=None) -> dict[TopicPartition, bool]:
        created = {}
        for tp, state in states.items():
            created[tp] = tp not in self.znodes
            self.znodes.setdefault(tp, (state, 0))
        return created

    def get_partition_states(self, partitions) -> dict:
        return {tp: self.znodes[tp] for tp in partitions if tp in self.znodes}

    def update_partition_states(self, updates, epoch_zk_version=None) -> dict[TopicPartition, int | None]:
        """New versions by partition, None where the expected version was not the znode's (a znode never
        created is a KeyError: no caller writes one)."""
        out = {}
        for tp, (state, expected_version) in updates.items():
            self.writes.append((tp, state, expected_version))
            if tp in self.conflict:
                self.znodes[tp] = (self.conflict.pop(tp), self.znodes[tp][1] + 1)
            if self.znodes[tp][1] != expected_version:
                out[tp] = None
                continue
            self.znodes[tp] = (state, expected_version + 1)
            out[tp] = expected_version + 1
        return out

    def propagate_isr_changes(self, partitions) -> str:
        self.isr_notifications.append(list(partitions))
        return f"isr_change_{len(self.isr_notifications) - 1:010d}"

    def get_entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        assert entity_type == "topics"
        return self.topic_configs.get(name, {})

    # -- topics --------------------------------------------------------------------------------------------
    def watch_data(self, path: str, callback: Callable) -> Callable[[], None]:
        self.watches[path] = callback
        return lambda: self.unwatched.append(path)

    def get_topic_assignments_with_versions(self, topics) -> dict[str, tuple[TopicAssignment, int]]:
        return {t: (self.assignments[t], self.ASSIGNMENT_VERSION) for t in topics if t in self.assignments}

    def get_topic_partition_ids(self, topic: str) -> list[int]:
        return self.partition_ids.get(topic, [])

    def set_topic_assignment(self, topic, assignment, expected_version=-1, epoch_zk_version=None) -> int:
        self.assignment_writes.append((topic, assignment, expected_version, epoch_zk_version))
        return self.ASSIGNMENT_VERSION + 1
