"""Purgatory and timing-wheel cost, with a fake clock (no sleeping).

    python benchmarks/bench_purgatory.py [N]
"""
import random
import sys
import time

from odradek.broker.purgatory import CallbackTask, DelayedOperation, DelayedOperationPurgatory, Timer


class Clock:
    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def bench_timer(n):
    rng = random.Random(1)
    clock = Clock()
    timer = Timer(tick_ms=1, wheel_size=20, time_ms=clock)
    fired = [0]

    def cb():
        fired[0] += 1

    delays = [rng.randrange(1, 30_000) for _ in range(n)]
    tasks = [CallbackTask(d, cb) for d in delays]
    t0 = time.perf_counter()
    for t in tasks:
        timer.add(t)
    t1 = time.perf_counter()
    # Advance in 1 ms ticks, as a driver waking per bucket would see it.
    end = max(delays) + 1
    while clock.now <= end:
        timer.advance_clock()
        clock.now += 1
    t2 = time.perf_counter()
    assert fired[0] == n and timer.size == 0
    print(f"timer: {n} tasks, delays 1..30000 ms, tick 1 ms, wheel 20")
    print(f"  add            {n / (t1 - t0):>12,.0f} tasks/s  ({(t1 - t0) / n * 1e6:.2f} us/task)")
    print(f"  expire         {n / (t2 - t1):>12,.0f} tasks/s  ({(t2 - t1) / n * 1e6:.2f} us/task, {end} ticks)")
    print(f"  add+expire     {n / (t2 - t0):>12,.0f} tasks/s")

    # Cancellation: add then cancel (the common case for a completed delayed operation).
    timer = Timer(time_ms=clock)
    tasks = [CallbackTask(d, cb) for d in delays]
    t0 = time.perf_counter()
    for t in tasks:
        timer.add(t)
        t.cancel()
    t1 = time.perf_counter()
    print(f"  add+cancel     {n / (t1 - t0):>12,.0f} tasks/s  ({(t1 - t0) / n * 1e6:.2f} us/task)")


class Op(DelayedOperation):
    __slots__ = ("ready",)

    def __init__(self, delay_ms):
        super().__init__(delay_ms)
        self.ready = False

    def try_complete(self):
        return self.force_complete() if self.ready else False

    def on_complete(self):
        pass

    def on_expiration(self):
        pass


def bench_purgatory(n, partitions=100):
    clock = Clock()
    purgatory = DelayedOperationPurgatory("produce", Timer(time_ms=clock))
    keys = [("topic", p) for p in range(partitions)]
    ops = [Op(30_000) for _ in range(n)]
    t0 = time.perf_counter()
    for i, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [keys[i % partitions]])
    t1 = time.perf_counter()
    for op in ops:
        op.ready = True
    completed = 0
    for key in keys:
        completed += purgatory.check_and_complete(key)
    t2 = time.perf_counter()
    assert completed == n and purgatory.num_delayed == 0 and purgatory.watched == 0
    # One op per check: the produce path (append to a partition, then check its key).
    ops = [Op(30_000) for _ in range(n)]
    t3 = time.perf_counter()
    for i, op in enumerate(ops):
        key = keys[i % partitions]
        purgatory.try_complete_else_watch(op, [key])
        op.ready = True
        purgatory.check_and_complete(key)
    t4 = time.perf_counter()
    print(f"purgatory: {n} ops over {partitions} keys, delay 30 s, completed by check_and_complete")
    print(f"  try_complete_else_watch   {(t1 - t0) / n * 1e6:.2f} us/op (watch + timer add)")
    print(f"  check_and_complete        {(t2 - t1) / n * 1e6:.2f} us/op (batched per key)")
    print(f"  watch + complete one by one {(t4 - t3) / n * 1e6:.2f} us/op")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    bench_timer(n)
    bench_purgatory(n)
