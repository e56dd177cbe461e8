"""The broker's memory tuning: megabyte buffers freed and allocated again reuse the heap instead of faulting in
fresh pages each time, an operator's own malloc settings are left alone, and what start-up built is frozen out
of full collections while its garbage is collected first. Each case runs in a process of its own, so that
this test process keeps glibc's and the collector's defaults."""

import subprocess
import sys

import pytest

from odradek.broker.memory_tuning import (
    REFREEZE_INTERVAL_S, REFREEZE_OLD_OBJECTS, REFREEZE_PARTITIONS, Refreezer, keep_freed_buffers, old_objects,
)

CHURN = """
import resource, sys
from odradek.broker.memory_tuning import (
    REFREEZE_INTERVAL_S, REFREEZE_OLD_OBJECTS, REFREEZE_PARTITIONS, Refreezer, keep_freed_buffers, old_objects,
)
tuned = keep_freed_buffers() if sys.argv[1] == "tune" else None
faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    blocks = [bytes(1 << 20) for _ in range(3)]  # warm-up: the heap grows to its working size
del blocks
before = faults()
for _ in range(200):  # what a broker does per consumer fetch of three partitions: read, answer, free
    blocks = [bytes(1 << 20) for _ in range(3)]
    del blocks
print(tuned, (faults() - before) / 200)
"""


def churn(mode: str) -> tuple[str, float]:
    out = subprocess.run([sys.executable, "-c", CHURN, mode], capture_output=True, text=True, check=True).stdout
    tuned, per_round = out.split()
    return tuned, float(per_round)


def test_megabyte_buffers_reuse_the_heap_once_tuned():
    tuned, faults_per_round = churn("tune")
    if tuned != "True":
        pytest.skip("no glibc mallopt here")
    # 3 MiB fresh from the kernel would be 768 page faults a round (glibc's defaults give tens to hundreds)
    assert faults_per_round < 10


def test_an_operators_malloc_settings_are_left_alone():
    assert keep_freed_buffers({"MALLOC_TRIM_THRESHOLD_": "1048576"}) is False
    assert keep_freed_buffers({"MALLOC_MMAP_THRESHOLD_": "131072"}) is False
    assert keep_freed_buffers({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1048576"}) is False


FREEZE = """
import gc, weakref
from odradek.broker.memory_tuning import collect_and_freeze
gc.disable()  # only the call under test collects


class Node:
    pass


kept = [Node() for _ in range(1000)]  # alive at the end of start-up
cycle = Node()
cycle.self = cycle  # start-up garbage that only the cyclic collector can free
collected = []
weakref.finalize(cycle, collected.append, True)
del cycle
frozen = collect_and_freeze()
tracked = {id(o) for o in gc.get_objects()}
print(frozen >= 1000, collected == [True], any(id(node) in tracked for node in kept))
"""


def test_start_up_garbage_is_collected_and_what_lives_is_frozen_out_of_full_collections():
    out = subprocess.run([sys.executable, "-c", FREEZE], capture_output=True, text=True, check=True).stdout
    frozen_enough, garbage_collected, still_walked = out.split()
    assert garbage_collected == "True"  # collected before the freeze, not kept forever
    assert frozen_enough == "True" and still_walked == "False"


def test_growth_freezes_what_is_new_and_shrinking_or_ten_minutes_refreeze_everything():
    done: list[str] = []
    refreezer = Refreezer(partitions_now=10, now=0.0, freeze_new=lambda: done.append("new") or 0,
                          refreeze_all=lambda: done.append("all") or 0, count_old=lambda: 0)
    assert refreezer.check(10 + REFREEZE_PARTITIONS - 1, 1.0) is None
    assert refreezer.check(10 + REFREEZE_PARTITIONS, 2.0) == "new" and done == ["new"]
    assert refreezer.check(10 + REFREEZE_PARTITIONS, 3.0) is None  # counted from the last freeze
    assert refreezer.check(10, 4.0) == "all"  # as many deleted: their dead cycles are among the frozen
    assert refreezer.check(10 + 2 * REFREEZE_PARTITIONS, REFREEZE_INTERVAL_S - 1) == "new"
    # the interval runs from the last full refreeze (at 4.0), not from the last freeze of what was new
    assert refreezer.check(10 + 2 * REFREEZE_PARTITIONS, 4.0 + REFREEZE_INTERVAL_S - 1) is None
    assert refreezer.check(10 + 2 * REFREEZE_PARTITIONS, 4.0 + REFREEZE_INTERVAL_S) == "all"
    assert done == ["new", "all", "new", "all"]


def test_survivors_piling_up_in_the_oldest_generation_are_collected_and_frozen():
    done: list[str] = []
    old = [REFREEZE_OLD_OBJECTS - 1]
    refreezer = Refreezer(partitions_now=10, now=0.0, freeze_new=lambda: done.append("new") or 0,
                          refreeze_all=lambda: done.append("all") or 0, freeze_old=lambda: done.append("old") or 0,
                          count_old=lambda: old[0])
    assert refreezer.check(10, 1.0) is None
    old[0] = REFREEZE_OLD_OBJECTS
    assert refreezer.check(10, 2.0) == "old"
    assert refreezer.check(10 + REFREEZE_PARTITIONS, 3.0) == "new"  # growth first: its freeze takes them too
    assert done == ["old", "new"]


def test_the_oldest_generation_is_counted_without_the_frozen():
    out = subprocess.run([sys.executable, "-c", OLD_COUNT], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True"]


OLD_COUNT = """
import gc
from odradek.broker.memory_tuning import collect_and_freeze, old_objects
gc.disable()
collect_and_freeze()
kept = [[] for _ in range(5000)]
gc.collect()  # the lists survive into the oldest generation
grown = old_objects()
collect_and_freeze()
print(grown >= 5000, old_objects() < 100)
"""


FREEZE_YOUNG = """
import gc, weakref
from odradek.broker.memory_tuning import collect_and_freeze, freeze_young
gc.disable()


class Node:
    pass


collect_and_freeze()
old = Node()
old.self = old
old_died = []
weakref.finalize(old, old_died.append, True)
gc.collect()  # survives into the oldest generation, alive
del old        # now old garbage: only a full collection of it would free it
young = Node()
young.self = young
young_died = []
weakref.finalize(young, young_died.append, True)
del young      # young garbage
kept = [Node() for _ in range(1000)]
before = gc.get_freeze_count()
freeze_young()
tracked = {id(o) for o in gc.get_objects()}
print(young_died == [True], old_died == [], gc.get_freeze_count() - before >= 1000,
      any(id(node) in tracked for node in kept))
"""


def test_freezing_what_is_new_collects_the_young_garbage_and_leaves_old_garbage_for_the_refreeze():
    out = subprocess.run([sys.executable, "-c", FREEZE_YOUNG], capture_output=True, text=True, check=True).stdout
    young_collected, old_left, new_frozen, still_walked = out.split()
    assert young_collected == "True"
    assert old_left == "True"  # no full collection ran: that is the point (it is refreeze's job)
    assert new_frozen == "True" and still_walked == "False"


REFREEZE = """
import gc, weakref
from odradek.broker.memory_tuning import collect_and_freeze, refreeze
gc.disable()


class Node:
    pass


cycle = Node()
cycle.self = cycle  # alive at the freeze, garbage later
died = []
weakref.finalize(cycle, died.append, True)
collect_and_freeze()
del cycle
gc.collect()
after_collect = list(died)
refreeze()
print(after_collect == [], died == [True])
"""


def test_a_refreeze_reclaims_cycles_that_died_among_frozen_objects():
    out = subprocess.run([sys.executable, "-c", REFREEZE], capture_output=True, text=True, check=True).stdout
    missed_by_a_plain_collection, reclaimed = out.split()
    assert missed_by_a_plain_collection == "True"  # frozen: full collections do not see it
    assert reclaimed == "True"
