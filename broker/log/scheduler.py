"""Background jobs of the logs (Kafka's KafkaScheduler, sized by ``background.threads``).

A roll asks for the segment it leaves to be flushed, a deleted segment or partition directory asks for
its files to be removed after ``file.delete.delay.ms``: neither is worth a wait on the thread that
appends, which is the broker's event loop. ``Scheduler`` runs such jobs on its worker threads, now
(``submit``) or after a delay (``schedule``, one timer thread keeps the delayed ones in a heap); the
broker's periodic jobs (retention, checkpoints) run on the same workers. A job that raises is logged
and forgotten, as Kafka's scheduler does.

``InlineScheduler`` runs every job at once on the caller's thread: what a Log does without a broker
around it (tests, tools).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

log = logging.getLogger(__name__)

Job = Callable[[], object]


class InlineScheduler:
    def submit(self, name: str, job: Job) -> None:
        job()

    def schedule(self, name: str, job: Job, delay_ms: int) -> None:
        job()


INLINE = InlineScheduler()


class Scheduler:
    def __init__(self, threads: int, name: str = "kafka-scheduler") -> None:
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)
        self._name = name
        self._delayed: list[tuple[float, int, str, Job]] = []
        self._sequence = itertools.count()
        self._wakeup = threading.Condition()
        self._stopped = False
        self._timer = threading.Thread(target=self._run_timer, name=f"{name}-timer", daemon=True)
        self._timer.start()

    def submit(self, name: str, job: Job) -> Future:
        return self.executor.submit(self._guarded, name, job)

    def schedule(self, name: str, job: Job, delay_ms: int) -> None:
        if delay_ms <= 0:
            self.submit(name, job)
            return
        with self._wakeup:
            heapq.heappush(self._delayed, (time.monotonic() + delay_ms / 1000, next(self._sequence), name, job))
            self._wakeup.notify()

    @property
    def pending(self) -> int:
        """Delayed jobs not yet handed to the workers."""
        with self._wakeup:
            return len(self._delayed)

    def _run_timer(self) -> None:
        with self._wakeup:
            while not self._stopped:
                now = time.monotonic()
                while self._delayed and self._delayed[0][0] <= now:
                    _, _, name, job = heapq.heappop(self._delayed)
                    self.submit(name, job)
                timeout = self._delayed[0][0] - now if self._delayed else None
                self._wakeup.wait(timeout)

    @staticmethod
    def _guarded(name: str, job: Job) -> None:
        try:
            job()
        except Exception:
            log.exception("Uncaught exception in scheduled task '%s'", name)

    def shutdown(self) -> None:
        """Finish the jobs already submitted; delayed ones are dropped (what they would delete is
        deleted on the next start: leftover ``.deleted`` files and ``-delete`` directories)."""
        with self._wakeup:
            self._stopped = True
            self._delayed.clear()
            self._wakeup.notify()
        self._timer.join()
        self.executor.shutdown(wait=True)
