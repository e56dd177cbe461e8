import random

import pytest

from odradek.broker.purgatory import CallbackTask, Timer, TimerTaskEntry, TimerTaskList, TimingWheel
from odradek.broker.purgatory.timer import _Counter
from tests.fakes.clock import ManualClock


def make_timer(tick_ms=1, wheel_size=20, start=1000):
    clock = ManualClock(start)
    return Timer(tick_ms, wheel_size, time_ms=clock), clock


def entry(expiration, fired=None):
    return TimerTaskEntry(CallbackTask(0, lambda: fired.append(expiration) if fired is not None else None), expiration)


# --- TimerTaskList -------------------------------------------------------------------------


def test_task_list_add_remove_and_counter():
    counter = _Counter()
    bucket = TimerTaskList(counter)
    entries = [entry(i) for i in range(5)]
    for e in entries:
        bucket.add(e)
    assert counter.value == 5 and len(bucket) == 5
    entries[2].remove()
    assert counter.value == 4
    assert [e.expiration_ms for e in bucket] == [0, 1, 3, 4]
    # Adding to another bucket moves the entry (never in two lists).
    other = TimerTaskList(counter)
    other.add(entries[0])
    assert counter.value == 4 and len(bucket) == 3 and len(other) == 1
    seen = []
    bucket.set_expiration(10)
    bucket.flush(seen.append)
    assert [e.expiration_ms for e in seen] == [1, 3, 4]
    assert bucket.expiration_ms == -1 and counter.value == 1


def test_set_expiration_reports_change():
    bucket = TimerTaskList(_Counter())
    assert bucket.set_expiration(5)
    assert not bucket.set_expiration(5)
    assert bucket.set_expiration(6)


def test_readding_a_task_drops_its_old_entry():
    task = CallbackTask(0, lambda: None)
    first = TimerTaskEntry(task, 10)
    bucket = TimerTaskList(_Counter())
    bucket.add(first)
    second = TimerTaskEntry(task, 20)
    assert first.cancelled and not second.cancelled
    assert first.list is None and len(bucket) == 0


# --- TimingWheel arithmetic ------------------------------------------------------------------


def test_wheel_places_entries_in_tick_buckets():
    queued = []
    wheel = TimingWheel(tick_ms=10, wheel_size=8, start_ms=1003, queue=queued.append)
    assert wheel.current_time == 1000 and wheel.interval == 80
    assert not wheel.add(entry(1009))  # within the current tick: already expired
    assert wheel.add(entry(1010))
    assert wheel.add(entry(1019))  # same bucket as 1010
    assert wheel.add(entry(1079))
    b = wheel.buckets[(1010 // 10) % 8]
    assert b.expiration_ms == 1010 and len(b) == 2
    assert wheel.buckets[(1079 // 10) % 8].expiration_ms == 1070
    # A bucket is queued once per expiration, not once per entry.
    assert [q.expiration_ms for q in queued] == [1010, 1070]
    assert wheel.overflow_wheel is None


def test_overflow_wheels_created_on_demand():
    queued = []
    wheel = TimingWheel(tick_ms=1, wheel_size=10, start_ms=0, queue=queued.append)
    assert wheel.add(entry(9))
    assert wheel.overflow_wheel is None
    assert wheel.add(entry(10))  # beyond interval 10 → overflow tick 10
    ov = wheel.overflow_wheel
    assert ov is not None and ov.tick_ms == 10 and ov.interval == 100
    assert ov.buckets[1].expiration_ms == 10
    assert wheel.add(entry(555))  # beyond 100 → second overflow, tick 100
    ov2 = ov.overflow_wheel
    assert ov2 is not None and ov2.tick_ms == 100
    assert ov2.buckets[5].expiration_ms == 500
    assert wheel.add(entry(99))
    assert ov.buckets[9].expiration_ms == 90


def test_wheel_advance_clock_moves_overflow_too():
    wheel = TimingWheel(tick_ms=1, wheel_size=10, start_ms=0)
    wheel.add(entry(50))
    wheel.advance_clock(37)
    assert wheel.current_time == 37 and wheel.overflow_wheel.current_time == 30
    wheel.advance_clock(36)  # never backwards
    assert wheel.current_time == 37


def test_cancelled_entry_is_not_added():
    wheel = TimingWheel(tick_ms=1, wheel_size=10, start_ms=0)
    e = entry(5)
    e.task.cancel()
    assert not wheel.add(e)


# --- Timer ---------------------------------------------------------------------------------


def test_expired_task_runs_on_add():
    timer, clock = make_timer()
    fired = []
    timer.add(CallbackTask(0, lambda: fired.append("now")))
    timer.add(CallbackTask(-5, lambda: fired.append("past")))
    assert fired == ["now", "past"] and timer.size == 0


def test_expiry_order_and_advance_result():
    timer, clock = make_timer()
    fired = []
    for d in (30, 5, 17, 5, 400, 1):
        timer.add(CallbackTask(d, lambda d=d: fired.append(d)))
    assert timer.size == 6
    assert not timer.advance_clock(1000)
    assert timer.advance_clock(1005)
    assert fired == [1, 5, 5]
    timer.advance_clock(1029)
    assert fired == [1, 5, 5, 17]
    timer.advance_clock(2000)
    assert fired == [1, 5, 5, 17, 30, 400] and timer.size == 0
    assert timer.next_expiration_ms() is None


def test_reinsert_from_overflow_into_finer_wheel():
    timer, clock = make_timer(tick_ms=1, wheel_size=10, start=0)
    fired = []
    timer.add(CallbackTask(57, lambda: fired.append(57)))
    ov = timer.wheel.overflow_wheel
    assert ov.buckets[5].expiration_ms == 50
    assert timer.next_expiration_ms() == 50
    # Reaching the overflow bucket does not fire the task: it moves down to the 1 ms wheel.
    assert timer.advance_clock(50)
    assert fired == [] and timer.size == 1
    assert timer.wheel.buckets[7].expiration_ms == 57 and len(ov.buckets[5]) == 0
    assert timer.next_expiration_ms() == 57
    timer.advance_clock(56)
    assert fired == []
    timer.advance_clock(57)
    assert fired == [57]


def test_one_big_jump_cascades_through_all_levels():
    timer, clock = make_timer(tick_ms=1, wheel_size=4, start=0)
    fired = []
    for d in (3, 7, 15, 63, 64, 250):
        timer.add(CallbackTask(d, lambda d=d: fired.append(d)))
    timer.advance_clock(1000)
    assert fired == [3, 7, 15, 63, 64, 250] and timer.size == 0


def test_cancel_removes_from_bucket():
    timer, clock = make_timer()
    fired = []
    tasks = [CallbackTask(d, lambda d=d: fired.append(d)) for d in (10, 10, 500)]
    for t in tasks:
        timer.add(t)
    tasks[0].cancel()
    tasks[2].cancel()
    tasks[2].cancel()  # idempotent
    assert timer.size == 1
    timer.advance_clock(5000)
    assert fired == [10] and timer.size == 0


def test_fully_cancelled_bucket_is_not_a_wakeup():
    timer, clock = make_timer()
    a = CallbackTask(10, lambda: None)
    b = CallbackTask(40, lambda: None)
    timer.add(a)
    timer.add(b)
    assert timer.next_expiration_ms() == 1010
    a.cancel()
    assert timer.next_expiration_ms() == 1040
    b.cancel()
    assert timer.next_expiration_ms() is None
    # The unscheduled bucket is scheduled again by a later add.
    timer.add(CallbackTask(10, lambda: None))
    assert timer.next_expiration_ms() == 1010


def test_readded_task_fires_once():
    timer, clock = make_timer()
    fired = []
    t = CallbackTask(10, lambda: fired.append(clock.now))
    timer.add(t)
    clock.now = 1005
    timer.add(t)  # restart: old entry dropped
    assert timer.size == 1
    clock.now = 1010
    timer.advance_clock()
    assert fired == []
    clock.now = 1015
    timer.advance_clock()
    assert fired == [1015]


def test_failing_task_does_not_stop_others():
    timer, clock = make_timer()
    fired = []

    def boom():
        raise RuntimeError("boom")

    timer.add(CallbackTask(5, boom))
    timer.add(CallbackTask(5, lambda: fired.append(5)))
    timer.advance_clock(1010)
    assert fired == [5] and timer.size == 0


def test_task_added_from_a_running_task():
    timer, clock = make_timer()
    fired = []
    timer.add(CallbackTask(5, lambda: timer.add(CallbackTask(5, lambda: fired.append(clock.now)))))
    clock.now = 1005
    timer.advance_clock()
    assert fired == []
    clock.now = 1010
    timer.advance_clock()
    assert fired == [1010]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_delays_fire_on_time_when_advanced_in_ticks(seed):
    rng = random.Random(seed)
    timer, clock = make_timer(tick_ms=1, wheel_size=20, start=rng.randrange(10**6))
    start = clock.now
    fired = {}
    expected = {}
    for i in range(3000):
        # Add while the clock moves, so tasks land relative to different wheel positions.
        if i % 100 == 0:
            for _ in range(rng.randrange(50)):
                clock.now += 1
                timer.advance_clock()
        d = rng.choice([rng.randrange(0, 25), rng.randrange(0, 500), rng.randrange(0, 20000)])
        expected[i] = clock.now + d
        timer.add(CallbackTask(d, lambda i=i: fired.setdefault(i, clock.now)))
    end = max(expected.values()) + 1
    while clock.now <= end:
        timer.advance_clock()
        clock.now += 1
    assert set(fired) == set(expected) and timer.size == 0
    for i, at in fired.items():
        assert expected[i] <= at <= expected[i] + 1, (i, expected[i], at)
    assert start < end


def test_coarse_tick_fires_within_one_tick_of_expiration():
    # Kafka's granularity: with tick_ms > 1 a task fires at the start of its tick.
    rng = random.Random(7)
    timer, clock = make_timer(tick_ms=10, wheel_size=8, start=0)
    fired, expected = {}, {}
    for i in range(500):
        d = rng.randrange(0, 3000)
        expected[i] = d
        timer.add(CallbackTask(d, lambda i=i: fired.setdefault(i, clock.now)))
    while clock.now <= 3010:
        timer.advance_clock()
        clock.now += 10
    assert len(fired) == 500
    for i, at in fired.items():
        assert abs(at - expected[i]) < 10
