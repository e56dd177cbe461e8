"""What a Log leaves to its scheduler: the flush after a roll and the delayed removal of deleted files."""

from __future__ import annotations

import os
import threading
import time

import pytest

from odradek.broker.log import Log, LogConfig
from odradek.broker.log.scheduler import Scheduler

from .helpers import make_batch


class RecordingScheduler:
    """Keeps every job until the test runs it."""

    def __init__(self) -> None:
        self.jobs: list[tuple[str, object, int]] = []

    def submit(self, name, job):
        self.jobs.append((name, job, 0))

    def schedule(self, name, job, delay_ms):
        self.jobs.append((name, job, delay_ms))

    def run(self, name: str) -> int:
        ran = [j for j in self.jobs if j[0] == name]
        self.jobs = [j for j in self.jobs if j[0] != name]
        for _, job, _ in ran:
            job()
        return len(ran)


def held_fsyncs(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """fsyncs on the thread named "flusher" set the first event, then wait for the second."""
    inside, release = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def slow_fsync(fd):
        if threading.current_thread().name == "flusher":
            inside.set()
            release.wait(10)
        real_fsync(fd)
    monkeypatch.setattr(os, "fsync", slow_fsync)
    return inside, release


def small_log(path, scheduler, **config) -> Log:
    return Log(str(path / "t-0"), LogConfig(segment_bytes=300, **config), scheduler=scheduler)


def test_a_roll_leaves_its_flush_to_the_scheduler_and_the_recovery_point_waits_for_it(tmp_path):
    jobs = RecordingScheduler()
    log = small_log(tmp_path, jobs)
    for _ in range(3):
        log.append_as_leader(make_batch(1, value_size=200), 0)  # each append rolls the last one away
    assert log.num_segments == 3
    assert log.recovery_point == 0  # nothing fsynced yet: recovery would scan everything
    assert [name for name, _, _ in jobs.jobs] == ["flush-log", "flush-log"]
    assert jobs.run("flush-log") == 2
    assert log.recovery_point == 2  # up to the active segment's base, as Kafka's flush(newOffset)


def test_a_flush_holds_the_lock_only_around_its_fsyncs(tmp_path, monkeypatch):
    jobs = RecordingScheduler()
    log = small_log(tmp_path, jobs)
    log.append_as_leader(make_batch(1, value_size=200), 0)
    log.append_as_leader(make_batch(1, value_size=200), 0)
    inside, release = held_fsyncs(monkeypatch)
    flusher = threading.Thread(target=jobs.run, args=("flush-log",), name="flusher")
    flusher.start()
    assert inside.wait(10)
    started = time.monotonic()
    info = log.append_as_leader(make_batch(1, value_size=10), 0)  # would wait for the fsync under the lock
    assert time.monotonic() - started < 5 and info.first_offset == 2
    assert log.recovery_point == 0
    release.set()
    flusher.join(10)
    assert log.recovery_point == 1


def test_a_truncation_during_a_flush_keeps_the_recovery_point(tmp_path, monkeypatch):
    jobs = RecordingScheduler()
    log = small_log(tmp_path, jobs)
    for _ in range(3):
        log.append_as_leader(make_batch(1, value_size=200), 0)
    inside, release = held_fsyncs(monkeypatch)
    first_flush = jobs.jobs.pop(0)[1]  # flush(1), asked for by the first roll
    flusher = threading.Thread(target=first_flush, name="flusher")
    flusher.start()
    assert inside.wait(10)
    log.truncate_to(0)  # while it fsyncs offset 0
    log.append_as_leader(make_batch(1, value_size=10), 0)  # a new, unflushed offset 0
    release.set()
    flusher.join(10)
    assert log.recovery_point == 0  # that fsync did not cover the new record
    jobs.run("flush-log")  # a flush that starts now does
    assert log.recovery_point == 1


def test_deleted_segments_are_renamed_and_removed_after_the_delay(tmp_path):
    jobs = RecordingScheduler()
    log = small_log(tmp_path, jobs, retention_bytes=0, file_delete_delay_ms=60_000)
    for _ in range(3):
        log.append_as_leader(make_batch(1, value_size=200), 0)
    log.high_watermark = log.log_end_offset
    assert log.delete_old_segments() == 3  # all of them (a new empty segment is rolled)
    files = sorted(os.listdir(tmp_path / "t-0"))
    assert "00000000000000000000.log.deleted" in files and "00000000000000000000.log" not in files
    assert {delay for name, _, delay in jobs.jobs if name == "delete-file"} == {60_000}
    assert jobs.run("delete-file") == 3
    assert not [f for f in os.listdir(tmp_path / "t-0") if f.endswith(".deleted")]
    assert log.log_start_offset == 3 and log.read(3, 10_000).records == b""
    log.append_as_leader(make_batch(1, value_size=10), 0)
    assert log.read(3, 10_000).records


def test_segment_jitter_makes_segments_roll_before_segment_ms(tmp_path):
    now = [0]
    log = Log(str(tmp_path / "t-0"), LogConfig(segment_ms=1000, segment_jitter_ms=1000), clock=lambda: now[0])
    jitters = set()
    for _ in range(20):
        log.roll()  # a fresh segment each time, each with its own jitter in [0, 1000)
        log.append_as_leader(make_batch(1, timestamp=now[0]), 0)
        jitters.add(log.active_segment.roll_jitter_ms)
    assert len(jitters) > 1 and all(0 <= j < 1000 for j in jitters)
    segment = log.active_segment
    now[0] += 1000 - segment.roll_jitter_ms + 1
    before = log.num_segments
    log.append_as_leader(make_batch(1, timestamp=now[0]), 0)
    assert log.num_segments == before + 1


def test_the_scheduler_runs_jobs_now_and_later_and_survives_a_failing_one():
    scheduler = Scheduler(2)
    done: list[str] = []
    try:
        scheduler.schedule("later", lambda: done.append("later"), 100)
        scheduler.submit("fails", lambda: 1 / 0)
        scheduler.submit("now", lambda: done.append("now")).result(5)
        deadline = time.monotonic() + 5
        while "later" not in done and time.monotonic() < deadline:
            time.sleep(0.01)
        assert done == ["now", "later"]
        scheduler.schedule("dropped", lambda: done.append("dropped"), 60_000)
        assert scheduler.pending == 1
    finally:
        scheduler.shutdown()
    assert "dropped" not in done


@pytest.fixture(autouse=True)
def _no_leftover_threads():
    before = threading.active_count()
    yield
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_partition_of_a_249_character_topic_can_be_deleted(tmp_path):
    from odradek.broker.log import LogManager
    topic = "t" * 249  # the longest legal name: "<topic>-0.<uuid>-delete" would not fit in 255 characters
    manager = LogManager([str(tmp_path)], broker_id=1, cluster_id="c")
    try:
        manager.get_or_create_log(topic, 0).append_as_leader(make_batch(1), 0)
        assert manager.delete_log(topic, 0)
        assert [name for name in os.listdir(tmp_path) if name.startswith("t")] == []
    finally:
        manager.shutdown()
