import pytest

from odradek.broker.purgatory import DelayedOperation, DelayedOperationPurgatory, Timer
from tests.fakes.clock import ManualClock


class MockOp(DelayedOperation):
    """Completes when ``ready`` is set; records every callback."""

    def __init__(self, delay_ms, ready=False, ready_on_try=None):
        super().__init__(delay_ms)
        self.ready = ready
        self.ready_on_try = ready_on_try  # become ready on the n-th try (1-based)
        self.tries = 0
        self.completions = 0
        self.expirations = 0

    def try_complete(self):
        self.tries += 1
        if self.ready_on_try is not None and self.tries >= self.ready_on_try:
            self.ready = True
        return self.force_complete() if self.ready else False

    def on_complete(self):
        self.completions += 1

    def on_expiration(self):
        self.expirations += 1


@pytest.fixture
def env():
    clock = ManualClock(1000)
    timer = Timer(tick_ms=1, wheel_size=20, time_ms=clock)
    return DelayedOperationPurgatory("test", timer, purge_interval=1000), timer, clock


def test_completes_immediately_if_possible(env):
    purgatory, timer, clock = env
    op = MockOp(100, ready=True)
    assert purgatory.try_complete_else_watch(op, [("t", 0)])
    assert op.is_completed and op.completions == 1 and op.tries == 1
    assert purgatory.watched == 0 and purgatory.num_delayed == 0


def test_second_try_after_watching_closes_the_race(env):
    purgatory, timer, clock = env
    op = MockOp(100, ready_on_try=2)  # the event happened between try 1 and the watch
    assert purgatory.try_complete_else_watch(op, [("t", 0)])
    assert op.tries == 2 and op.completions == 1
    assert purgatory.num_delayed == 0  # never reached the timer
    assert purgatory.check_and_complete(("t", 0)) == 0
    assert purgatory.watched == 0


def test_watched_under_several_keys_and_completed_via_any(env):
    purgatory, timer, clock = env
    keys = [("t", 0), ("t", 1), ("u", 3)]
    op = MockOp(100)
    assert not purgatory.try_complete_else_watch(op, keys)
    assert purgatory.watched == 3 and purgatory.num_delayed == 1 and purgatory.delayed == 1
    assert purgatory.check_and_complete(("t", 1)) == 0
    op.ready = True
    assert purgatory.check_and_complete(("u", 3)) == 1
    assert op.completions == 1 and op.expirations == 0
    assert purgatory.num_delayed == 0  # force_complete cancelled the timer task
    # The other keys still list it until they are checked or purged; checking them removes it.
    assert purgatory.check_and_complete(("t", 0)) == 0
    assert purgatory.check_and_complete(("t", 1)) == 0
    assert purgatory.watched == 0 and purgatory.watched_keys() == []
    timer.advance_clock(5000)
    assert op.expirations == 0


def test_check_and_complete_counts_only_its_completions(env):
    purgatory, timer, clock = env
    key = ("t", 0)
    ops = [MockOp(100) for _ in range(4)]
    for op in ops:
        purgatory.try_complete_else_watch(op, [key])
    ops[0].ready = ops[2].ready = True
    assert purgatory.check_and_complete(key) == 2
    assert purgatory.watched == 2 and purgatory.num_delayed == 2
    assert purgatory.check_and_complete(("unknown", 9)) == 0


def test_expiration_calls_on_complete_then_on_expiration(env):
    purgatory, timer, clock = env
    expired, done = MockOp(50), MockOp(50)
    purgatory.try_complete_else_watch(expired, [("t", 0)])
    purgatory.try_complete_else_watch(done, [("t", 1)])
    done.ready = True
    purgatory.check_and_complete(("t", 1))
    timer.advance_clock(1049)
    assert expired.completions == 0
    timer.advance_clock(1050)
    assert (expired.completions, expired.expirations) == (1, 1)
    assert (done.completions, done.expirations) == (1, 0)
    assert purgatory.num_delayed == 0


def test_exactly_once_when_expiration_and_completion_race(env):
    purgatory, timer, clock = env
    key = ("t", 0)

    # Expiration first: a later completion attempt loses.
    a = MockOp(10)
    purgatory.try_complete_else_watch(a, [key])
    clock.now = 1010
    timer.advance_clock()
    a.ready = True
    assert purgatory.check_and_complete(key) == 0
    assert not a.force_complete()
    assert (a.completions, a.expirations) == (1, 1)

    # Completion first: the timer never runs it.
    b = MockOp(10)
    purgatory.try_complete_else_watch(b, [key])
    b.ready = True
    assert purgatory.check_and_complete(key) == 1
    clock.now = 2000
    timer.advance_clock()
    assert (b.completions, b.expirations) == (1, 0)

    # Completion from inside the expiring op's own on_complete (re-entrancy) still runs once.
    class Reentrant(MockOp):
        def on_complete(self):
            super().on_complete()
            self.ready = True
            purgatory.check_and_complete(key)
            self.force_complete()

    clock.now = 2000
    c = Reentrant(10)
    purgatory.try_complete_else_watch(c, [key])
    clock.now = 2010
    timer.advance_clock()
    assert (c.completions, c.expirations) == (1, 1)


def test_zero_delay_expires_at_once_and_is_not_left_in_timer(env):
    purgatory, timer, clock = env
    op = MockOp(0)
    assert not purgatory.try_complete_else_watch(op, [("t", 0)])
    assert op.is_completed and op.expirations == 1
    assert purgatory.num_delayed == 0


def test_needs_a_key(env):
    purgatory, _, _ = env
    with pytest.raises(ValueError):
        purgatory.try_complete_else_watch(MockOp(10), [])


def test_purge_drops_expired_ops_from_watcher_lists():
    clock = ManualClock(0)
    purgatory = DelayedOperationPurgatory("p", Timer(time_ms=clock), purge_interval=10)
    ops = [MockOp(5) for _ in range(11)]
    for i, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [("t", i % 2)])
    clock.now = 5
    purgatory.timer.advance_clock()  # all expire; still listed by their watchers
    assert all(op.expirations == 1 for op in ops)
    assert purgatory.watched == 11 and purgatory.num_delayed == 0 and purgatory.purges == 0
    # 11 completed-but-watched ops exceed purge_interval=10; the next watch triggers the purge.
    live = MockOp(100)
    purgatory.try_complete_else_watch(live, [("t", 0)])
    assert purgatory.purges == 1
    assert purgatory.watched == 1 and purgatory.watched_keys() == [("t", 0)]
    assert purgatory.purge_completed() == 0


def test_no_purge_while_ops_are_still_delayed():
    clock = ManualClock(0)
    purgatory = DelayedOperationPurgatory("p", Timer(time_ms=clock), purge_interval=5)
    for i in range(20):
        purgatory.try_complete_else_watch(MockOp(1000), [("t", i)])
    assert purgatory.purges == 0 and purgatory.num_delayed == 20


def test_cancel_for_key(env):
    purgatory, timer, clock = env
    a, b = MockOp(100), MockOp(100)
    purgatory.try_complete_else_watch(a, [("t", 0)])
    purgatory.try_complete_else_watch(b, [("t", 0), ("t", 1)])
    cancelled = purgatory.cancel_for_key(("t", 0))
    assert cancelled == [a, b]
    assert purgatory.num_delayed == 0 and purgatory.watched == 1
    assert purgatory.cancel_for_key(("t", 0)) == []
    timer.advance_clock(5000)
    assert a.expirations == b.expirations == 0 and not a.is_completed


def test_shutdown_forgets_everything(env):
    purgatory, timer, clock = env
    ops = [MockOp(100) for _ in range(3)]
    for i, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [("t", i)])
    purgatory.shutdown()
    assert purgatory.watched == 0 and purgatory.num_delayed == 0
    timer.advance_clock(5000)
    assert all(op.completions == 0 for op in ops)


def test_op_completed_during_watch_loop_stops_watching(env):
    purgatory, timer, clock = env
    key_a, key_b = ("t", 0), ("t", 1)
    blocker = MockOp(100)
    purgatory.try_complete_else_watch(blocker, [key_a])

    op = MockOp(100)
    op.force_complete()  # completed elsewhere before it could be watched
    assert not purgatory.try_complete_else_watch(op, [key_a, key_b])
    assert purgatory.watched == 1  # only blocker


class FailingOp(MockOp):
    """Raises from the chosen callback; records what the purgatory told it."""

    def __init__(self, delay_ms, fail_in):
        super().__init__(delay_ms)
        self.fail_in = fail_in
        self.errors = []

    def try_complete(self):
        if self.fail_in == "try":
            raise OSError(22, "Invalid argument")
        return super().try_complete()

    def on_complete(self):
        super().on_complete()
        if self.fail_in == "complete":
            raise ValueError("broken answer")

    def on_expiration(self):
        super().on_expiration()
        if self.fail_in == "expire":
            raise RuntimeError("broken metric")

    def on_error(self, exc):
        self.errors.append(exc)


def test_an_op_that_raises_while_checked_fails_alone(env):
    purgatory, timer, clock = env
    bad, good = FailingOp(1000, "try"), MockOp(1000)
    purgatory.try_complete_else_watch(good, [("t", 0)])
    bad.fail_in = None
    purgatory.try_complete_else_watch(bad, [("t", 0)])
    bad.fail_in = "try"
    good.ready = True
    assert purgatory.check_and_complete(("t", 0)) == 2  # no exception reaches the caller
    assert bad.is_completed and [type(e) for e in bad.errors] == [OSError] and bad.completions == 0
    assert good.completions == 1
    assert purgatory.num_delayed == 0 and purgatory.watched == 0


def test_an_op_that_raises_while_completing_or_expiring_is_failed_and_the_timer_goes_on(env):
    purgatory, timer, clock = env
    completing, expiring, later = FailingOp(10, "complete"), FailingOp(10, "expire"), MockOp(20)
    for op in (completing, expiring, later):
        purgatory.try_complete_else_watch(op, [("t", 0)])
    completing.ready = True
    assert purgatory.check_and_complete(("t", 0)) == 1
    assert [type(e) for e in completing.errors] == [ValueError]
    clock.now += 10
    timer.advance_clock()
    assert expiring.completions == 1 and expiring.expirations == 1 and expiring.errors == []
    clock.now += 10
    timer.advance_clock()
    assert later.completions == 1 and later.expirations == 1
