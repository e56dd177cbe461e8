"""Replica placement against Kafka 2.8.2's own: the same cases (brokers with and without racks, ids with gaps,
new partitions of an existing topic, start indexes past the broker count, impossible replication factors and
half-racked clusters) go to ``kafka.admin.AdminUtils.assignReplicasToBrokers`` from the kafka_2.13 jar
(tests/jvm/scripts/KafkaReplicaAssignment.java, one JVM for every case) and to ours, and the plans (or the
errors) must be the same. A fixed start index makes Kafka's placement deterministic: it is also the shift
of the followers, as in ours."""

from __future__ import annotations

import random
import subprocess

import pytest

from odradek.controller.replica_assignment import assign_replicas_to_brokers

from . import jvm

pytestmark = pytest.mark.jvm

SCRIPT = jvm.JVM_DIR / "scripts" / "KafkaReplicaAssignment.java"


def generated_cases(seed: int, count: int) -> list[tuple[dict[int, str | None], int, int, int, int]]:
    """(broker -> rack, partitions, replication factor, fixed start index, start partition id) cases."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        ids = sorted(rng.sample(range(0, 40), rng.randint(1, 12)))
        layout = rng.choice(["none", "racks", "racks", "partial"])
        racks_count = rng.randint(1, 4)
        racks: dict[int, str | None] = {b: None if layout == "none" else f"rack{rng.randrange(racks_count)}"
                                        for b in ids}
        if layout == "partial" and len(ids) > 1:
            racks[rng.choice(ids)] = None
        rf = rng.randint(1, len(ids) + (1 if rng.random() < 0.1 else 0))
        cases.append((racks, rng.randint(1, 40), rf, rng.randrange(2 * len(ids)), rng.choice([-1, 0, 3, 17])))
    return cases


def kafkas_plans(cases) -> list[str]:
    lines = []
    for i, (racks, partitions, rf, start, first) in enumerate(cases):
        brokers = ",".join(f"{b}:{r or '-'}" for b, r in racks.items())
        lines.append(f"{i} {brokers} {partitions} {rf} {start} {first}")
    done = subprocess.run([jvm.java(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp",
                           jvm.classpath(jvm.KAFKA_TOOLS_SET), str(SCRIPT)],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answers = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    return [answers[str(i)] for i in range(len(cases))]


def our_plan(racks, partitions, rf, start, first) -> str:
    try:
        plan = assign_replicas_to_brokers(list(racks), partitions, rf, fixed_start_index=start,
                                          start_partition_id=first, racks=racks)
    except Exception as exc:  # noqa: BLE001 - compared with Kafka's exception by name
        return f"ERROR {type(exc).__name__.removesuffix('Error')}Exception"
    return ";".join(f"{p}:{','.join(map(str, replicas))}" for p, replicas in sorted(plan.items()))


def test_placement_equals_kafkas_on_generated_cases():
    cases = generated_cases(seed=30, count=400)
    theirs = kafkas_plans(cases)
    differing = [(case, ours, kafka) for case, kafka in zip(cases, theirs)
                 if (ours := our_plan(*case)) != kafka]
    assert not differing, f"{len(differing)} of {len(cases)} differ, e.g. {differing[:3]}"
    # the cases reach every branch: plain, rack-aware, and both kinds of error
    assert {plan.split(" ")[0] == "ERROR" for plan in theirs} == {True, False}
    assert {"ERROR AdminOperationException", "ERROR InvalidReplicationFactorException"} <= set(theirs)
