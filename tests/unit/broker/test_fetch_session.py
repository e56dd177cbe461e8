"""Fetch sessions (KIP-227): the cache's eviction rules and the four fetch contexts, as Kafka 2.8."""

from __future__ import annotations

import random
from dataclasses import dataclass

from odradek.broker import fetch_session
from odradek.broker.delayed_ops import FetchSpec
from odradek.broker.fetch_session import (
    EVICTION_MS, FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, MAX_EPOCH, CachedPartition, FetchManager,
    FetchSessionCache, FullFetchContext, IncrementalFetchContext, SessionErrorContext, SessionlessFetchContext,
    next_epoch,
)
from odradek.protocol import errors
from tests.fakes.clock import ManualClock


@dataclass
class Result:
    """What ReplicaManager.read_from_local_log returns per partition (FetchPartitionResult's fields)."""
    error_code: int = 0
    high_watermark: int = 10
    last_stable_offset: int = 10
    log_start_offset: int = 0
    records: bytes = b""
    withheld: bool = False


def spec(topic: str, partition: int, offset: int = 0) -> FetchSpec:
    return FetchSpec(topic, partition, offset, 1 << 20)


def results_for(keys, **fields) -> dict:
    return {key: Result(**fields) for key in keys}


def partitions(n: int) -> dict:
    return {("t", i): CachedPartition(spec("t", i)) for i in range(n)}


def manager(slots: int = 10) -> tuple[FetchManager, ManualClock]:
    clock = ManualClock()
    return FetchManager(FetchSessionCache(slots, rng=random.Random(7)), clock), clock


def open_session(fm: FetchManager, keys, follower: bool = False) -> int:
    ctx = fm.new_context(0, INITIAL_EPOCH, [spec(*k) for k in keys], [], is_follower=follower)
    assert isinstance(ctx, FullFetchContext)
    answer = ctx.answer(results_for(keys))
    assert answer.error_code == 0 and [k for k, _ in answer.partitions] == list(keys)
    return answer.session_id


# -- epochs and contexts ------------------------------------------------------------------------

def test_next_epoch_wraps_to_one_and_keeps_sessionless():
    assert next_epoch(INITIAL_EPOCH) == 1
    assert next_epoch(41) == 42
    assert next_epoch(MAX_EPOCH) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_epoch_minus_one_is_sessionless_and_closes_a_named_session():
    fm, _ = manager()
    sid = open_session(fm, [("t", 0)])
    ctx = fm.new_context(0, FINAL_EPOCH, [spec("t", 0), spec("t", 1)], [], is_follower=False)
    assert isinstance(ctx, SessionlessFetchContext)
    answer = ctx.answer(results_for([("t", 0), ("t", 1)]))
    assert (answer.session_id, len(answer.partitions)) == (INVALID_SESSION_ID, 2)
    assert fm.cache.get(sid) is not None
    fm.new_context(sid, FINAL_EPOCH, [spec("t", 0)], [], is_follower=False)
    assert fm.cache.get(sid) is None and len(fm.cache) == 0


def test_full_fetch_creates_a_session_at_epoch_one_and_a_full_fetch_naming_it_replaces_it():
    fm, _ = manager()
    sid = open_session(fm, [("t", 0), ("t", 1)])
    assert sid != INVALID_SESSION_ID
    session = fm.cache.get(sid)
    assert session.epoch == 1 and list(session.partitions) == [("t", 0), ("t", 1)]
    assert fm.cache.total_partitions == 2
    again = fm.new_context(sid, INITIAL_EPOCH, [spec("t", 0)], [], is_follower=False)
    assert fm.cache.get(sid) is None
    new_sid = again.answer(results_for([("t", 0)])).session_id
    assert new_sid not in (INVALID_SESSION_ID, sid) and fm.cache.total_partitions == 1


def test_unknown_session_and_wrong_epoch_are_top_level_errors_that_read_nothing():
    fm, _ = manager()
    sid = open_session(fm, [("t", 0)])
    unknown = fm.new_context(sid + 1, 1, [spec("t", 0)], [], is_follower=False)
    assert isinstance(unknown, SessionErrorContext) and unknown.specs() == []
    answer = unknown.answer({})
    assert (answer.error_code, answer.session_id, answer.partitions) == \
        (errors.FetchSessionIdNotFoundError.code, INVALID_SESSION_ID, [])
    stale = fm.new_context(sid, 2, [], [], is_follower=False)
    assert stale.answer({}).error_code == errors.InvalidFetchSessionEpochError.code
    # The error leaves the session as it was: epoch 1 still works.
    assert isinstance(fm.new_context(sid, 1, [], [], is_follower=False), IncrementalFetchContext)
    # Session id 0 with a positive epoch names no session.
    assert fm.new_context(0, 1, [], [], is_follower=False).answer({}).error_code == \
        errors.FetchSessionIdNotFoundError.code


def test_incremental_fetch_reads_the_cached_offsets_and_answers_only_what_changed():
    fm, _ = manager()
    keys = [("a", 0), ("a", 1), ("b", 0)]
    sid = open_session(fm, keys)
    ctx = fm.new_context(sid, 1, [], [], is_follower=False)
    assert [(s.topic, s.partition, s.fetch_offset) for s in ctx.specs()] == [("a", 0, 0), ("a", 1, 0), ("b", 0, 0)]
    results = results_for(keys)
    results[("a", 1)] = Result(records=b"batch", high_watermark=11)
    answer = ctx.answer(results)
    assert (answer.error_code, answer.session_id) == (0, sid)
    assert [k for k, _ in answer.partitions] == [("a", 1)]
    # The answered partition moved to the back; the fetcher names it with its new offset.
    ctx = fm.new_context(sid, 2, [spec("a", 1, 11)], [], is_follower=False)
    assert [(s.topic, s.partition, s.fetch_offset) for s in ctx.specs()] == [("a", 0, 0), ("b", 0, 0), ("a", 1, 11)]
    same = results_for(keys)
    same[("a", 1)] = Result(high_watermark=11)
    assert ctx.answer(same).partitions == []
    assert fm.cache.get(sid).epoch == 3


def test_high_watermark_last_stable_and_log_start_changes_and_errors_are_answered():
    cached = CachedPartition(spec("t", 0), Result())
    assert not cached.must_respond(Result())
    assert cached.must_respond(Result(high_watermark=12, last_stable_offset=12))
    assert not cached.must_respond(Result(high_watermark=12, last_stable_offset=12))
    assert cached.must_respond(Result(high_watermark=12, last_stable_offset=11))
    assert cached.must_respond(Result(high_watermark=12, last_stable_offset=11, log_start_offset=5))
    assert not cached.must_respond(Result(high_watermark=12, last_stable_offset=11, log_start_offset=5))
    # An error is always answered, and the partition is answered again once the error is gone.
    assert cached.must_respond(Result(error_code=6, high_watermark=-1, last_stable_offset=11, log_start_offset=5))
    assert cached.must_respond(Result(high_watermark=12, last_stable_offset=11, log_start_offset=5))
    # Without update the cached values stay: the question can be asked twice.
    assert cached.must_respond(Result(high_watermark=13, last_stable_offset=11, log_start_offset=5), update=False)
    assert cached.must_respond(Result(high_watermark=13, last_stable_offset=11, log_start_offset=5), update=False)


def test_a_partition_added_to_a_session_is_always_in_the_next_answer():
    fm, _ = manager()
    sid = open_session(fm, [("t", 0)])
    ctx = fm.new_context(sid, 1, [spec("t", 1)], [], is_follower=False)
    answer = ctx.answer(results_for([("t", 0), ("t", 1)]))
    assert [k for k, _ in answer.partitions] == [("t", 1)]


def test_forgotten_partitions_leave_the_session_and_forgetting_all_closes_it():
    fm, _ = manager()
    sid = open_session(fm, [("t", 0), ("t", 1)])
    ctx = fm.new_context(sid, 1, [], [("t", 0), ("x", 9)], is_follower=False)
    assert [(s.topic, s.partition) for s in ctx.specs()] == [("t", 1)]
    assert fm.cache.total_partitions == 1
    ctx.answer(results_for([("t", 1)]))
    last = fm.new_context(sid, 2, [spec("u", 0)], [("t", 1)], is_follower=False)
    assert fm.cache.get(sid) is not None  # u-0 was added, so the session lives on
    assert [(s.topic, s.partition) for s in last.specs()] == [("u", 0)]
    closing = fm.new_context(sid, 3, [], [("u", 0)], is_follower=False)
    assert isinstance(closing, SessionlessFetchContext)
    assert fm.cache.get(sid) is None and fm.cache.total_partitions == 0
    assert closing.answer({}).session_id == INVALID_SESSION_ID


def test_a_request_that_waited_while_another_moved_the_epoch_gets_invalid_epoch():
    fm, _ = manager()
    sid = open_session(fm, [("t", 0)])
    parked = fm.new_context(sid, 1, [], [], is_follower=False)
    fm.new_context(sid, 2, [], [], is_follower=False)  # a retry overtook the parked request
    answer = parked.answer(results_for([("t", 0)], records=b"x"))
    assert (answer.error_code, answer.session_id, answer.partitions) == \
        (errors.InvalidFetchSessionEpochError.code, sid, [])


def test_duplicate_partitions_in_a_request_are_answered_once():
    fm, _ = manager()
    ctx = fm.new_context(0, INITIAL_EPOCH, [spec("t", 0), spec("t", 0, 5)], [], is_follower=False)
    assert [s.fetch_offset for s in ctx.specs()] == [5]
    assert len(ctx.answer(results_for([("t", 0)])).partitions) == 1


# -- the cache ----------------------------------------------------------------------------------

def test_no_slots_means_no_session_but_the_full_answer_still_comes():
    fm, _ = manager(slots=0)
    ctx = fm.new_context(0, INITIAL_EPOCH, [spec("t", 0)], [], is_follower=True)
    answer = ctx.answer(results_for([("t", 0)]))
    assert (answer.session_id, len(answer.partitions), len(fm.cache)) == (INVALID_SESSION_ID, 1, 0)


def test_a_full_cache_evicts_a_stale_session_first():
    cache = FetchSessionCache(2, rng=random.Random(1))
    t = 0
    a = cache.maybe_create_session(t, True, 5, lambda: partitions(5))
    b = cache.maybe_create_session(t + 10, True, 5, lambda: partitions(5))
    # Neither is stale nor evictable yet (followers' sessions, young): no room for a consumer.
    assert cache.maybe_create_session(t + 20, False, 1, lambda: partitions(1)) == INVALID_SESSION_ID
    # Past the eviction time the least recently used goes, whoever asks.
    c = cache.maybe_create_session(t + EVICTION_MS + 5, False, 1, lambda: partitions(1))
    assert c != INVALID_SESSION_ID and cache.get(a) is None and cache.get(b) is not None
    assert cache.evictions == 1 and cache.total_partitions == 6


def test_touching_a_session_keeps_it_from_being_the_stale_one():
    cache = FetchSessionCache(2)
    a = cache.maybe_create_session(0, False, 1, lambda: partitions(1))
    b = cache.maybe_create_session(10, False, 1, lambda: partitions(1))
    cache.touch(cache.get(a), 20)
    cache.maybe_create_session(EVICTION_MS + 15, False, 1, lambda: partitions(1))
    assert cache.get(a) is not None and cache.get(b) is None


def test_followers_evict_young_consumer_sessions_but_consumers_cannot():
    cache = FetchSessionCache(2)
    consumer = cache.maybe_create_session(0, False, 3, lambda: partitions(3))
    follower = cache.maybe_create_session(0, True, 1, lambda: partitions(1))
    assert cache.maybe_create_session(100, False, 50, lambda: partitions(50)) == INVALID_SESSION_ID
    new = cache.maybe_create_session(100, True, 1, lambda: partitions(1))
    assert new != INVALID_SESSION_ID
    assert cache.get(consumer) is None and cache.get(follower) is not None
    # A young follower session is not evictable, even by a bigger follower session.
    assert cache.maybe_create_session(200, True, 100, lambda: partitions(100)) == INVALID_SESSION_ID


def test_among_evictable_sessions_the_smallest_goes_and_only_for_a_bigger_one():
    cache = FetchSessionCache(2)
    small = cache.maybe_create_session(0, False, 2, lambda: partitions(2))
    big = cache.maybe_create_session(0, False, 4, lambda: partitions(4))
    now = EVICTION_MS + 1
    for sid in (small, big):  # used again after the eviction time: evictable by all, not stale
        cache.touch(cache.get(sid), now)
    assert cache.maybe_create_session(now + 1, False, 1, lambda: partitions(1)) == INVALID_SESSION_ID
    assert cache.maybe_create_session(now + 1, False, 2, lambda: partitions(2)) == INVALID_SESSION_ID
    third = cache.maybe_create_session(now + 1, False, 3, lambda: partitions(3))
    assert third != INVALID_SESSION_ID and cache.get(small) is None and cache.get(big) is not None


def test_old_follower_sessions_are_evictable_by_followers():
    cache = FetchSessionCache(1)
    old = cache.maybe_create_session(0, True, 5, lambda: partitions(5))
    cache.touch(cache.get(old), EVICTION_MS + 1)
    assert cache.maybe_create_session(EVICTION_MS + 2, True, 4, lambda: partitions(4)) == INVALID_SESSION_ID
    assert cache.maybe_create_session(EVICTION_MS + 2, True, 6, lambda: partitions(6)) != INVALID_SESSION_ID
    assert cache.get(old) is None


def test_session_ids_are_positive_and_unique():
    cache = FetchSessionCache(50, rng=random.Random(3))
    ids = {cache.maybe_create_session(0, False, 1, lambda: partitions(1)) for _ in range(50)}
    assert len(ids) == 50 and all(0 < i < MAX_EPOCH for i in ids)
    assert cache.remove(next(iter(ids))) is not None and len(cache) == 49


# -- a fetch throttled by a client quota ----------------------------------------------------------

def test_a_throttled_full_fetch_answers_nothing_and_creates_no_session():
    fm, _ = manager()
    keys = [("t", 0), ("t", 1)]
    ctx = fm.new_context(0, INITIAL_EPOCH, [spec(*k) for k in keys], [], is_follower=False)
    preview = ctx.preview(results_for(keys, records=b"x"))
    assert [k for k, _ in preview.partitions] == keys and len(fm.cache) == 0  # sized without side effects
    throttled = ctx.throttled_answer()
    assert (throttled.error_code, throttled.session_id, throttled.partitions) == (0, INVALID_SESSION_ID, [])
    assert len(fm.cache) == 0


def test_a_throttled_incremental_fetch_keeps_the_session_and_sends_the_changes_later():
    fm, _ = manager()
    keys = [("t", 0), ("t", 1)]
    sid = open_session(fm, keys)
    ctx = fm.new_context(sid, 1, [], [], is_follower=False)
    changed = {("t", 0): Result(records=b"new", high_watermark=11), ("t", 1): Result()}
    assert [k for k, _ in ctx.preview(changed).partitions] == [("t", 0)]
    throttled = ctx.throttled_answer()
    assert (throttled.error_code, throttled.session_id, throttled.partitions) == (0, sid, [])
    # the next request goes on at the advanced epoch and still hears of partition 0
    again = fm.new_context(sid, 2, [], [], is_follower=False)
    assert isinstance(again, IncrementalFetchContext)
    assert [k for k, _ in again.answer(changed).partitions] == [("t", 0)]


# -- what an incremental fetch reads ---------------------------------------------------------------

class Changes:
    """The replica manager's change log (ChangeSource), by hand."""

    def __init__(self) -> None:
        self.change_seq = 0
        self.log: dict = {}

    def note(self, key) -> None:
        self.change_seq += 1
        self.log.pop(key, None)
        self.log[key] = self.change_seq

    def changed_since(self, seq: int):
        return [key for key, at in reversed(self.log.items()) if at > seq]


def test_incremental_fetch_reads_what_changed_what_it_names_and_what_was_held_back_not_the_whole_session():
    clock, changes = ManualClock(), Changes()
    fm = FetchManager(FetchSessionCache(10, rng=random.Random(7)), clock, changes)
    keys = [("t", i) for i in range(100)]
    full = fm.new_context(0, INITIAL_EPOCH, [spec(*k) for k in keys], [], is_follower=True)
    assert len(full.to_read()) == 100
    sid = full.answer(results_for(keys)).session_id

    def read(epoch: int, named=(), results=None) -> list:
        ctx = fm.new_context(sid, epoch, [spec(*k, 3) for k in named], [], is_follower=True)
        keys_read = [(s.topic, s.partition) for s in ctx.to_read()]
        ctx.answer(results or results_for(keys_read))
        return keys_read

    assert read(1) == []                                   # idle: nothing read
    changes.note(("t", 5))
    changes.note(("t", 9))
    assert sorted(read(2)) == [("t", 5), ("t", 9)]        # the changes since the last answer
    assert read(3, named=[("t", 1)]) == [("t", 1)]        # a partition the request names
    changes.note(("t", 2))
    assert read(4) == [("t", 2)]
    # held back (a throttle, max_bytes): read again until it goes out
    assert read(5, named=[("t", 4)], results={("t", 4): Result(withheld=True)}) == [("t", 4)]
    assert read(6) == [("t", 4)]
    assert read(7) == []
    clock.now += 60_000                                    # once in a while the whole session
    assert len(read(8)) == 100


def test_the_read_of_the_whole_session_is_spread_over_fetches_a_slice_at_a_time(monkeypatch):
    """A follower session of 3,333 partitions read at once held the leader's loop 40-60 ms every 30 s."""
    monkeypatch.setattr(fetch_session, "FULL_READ_SLICE", 30)
    clock, changes = ManualClock(), Changes()
    fm = FetchManager(FetchSessionCache(10, rng=random.Random(7)), clock, changes)
    keys = [("t", i) for i in range(100)]
    sid = fm.new_context(0, INITIAL_EPOCH, [spec(*k) for k in keys], [], is_follower=True).answer(
        results_for(keys)).session_id
    epoch = 1

    def read() -> list:
        nonlocal epoch
        ctx = fm.new_context(sid, epoch, [], [], is_follower=True)
        epoch += 1
        keys_read = [(s.topic, s.partition) for s in ctx.to_read()]
        ctx.answer(results_for(keys_read))
        return keys_read

    assert read() == []
    clock.now += fetch_session.FULL_READ_MS
    changes.note(("t", 0))
    slices = [read() for _ in range(5)]
    assert [len(s) for s in slices] == [31, 30, 30, 10, 0]  # the first also holds the change
    assert set().union(*slices) == set(keys)
    clock.now += fetch_session.FULL_READ_MS - 1
    assert read() == []                                    # the next pass is counted from the last one's start
    clock.now += 1
    assert len(read()) == 30
