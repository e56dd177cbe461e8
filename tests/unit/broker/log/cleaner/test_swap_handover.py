"""The hand-over of a cleaned segment from the worker to the broker: the broker swaps in only the files the
worker finished, the worker leaves them alone while the broker may be swapping them, an abort sent as a
task starts is not lost, and the swapped-in segment keeps its index files."""

import os
import threading
from multiprocessing import Pipe

from odradek.broker.log import Log, LogConfig
from odradek.broker.log.cleaner.cleaner import Cleaner
from odradek.broker.log.cleaner.config import CleanerConfig
from odradek.broker.log.cleaner.log_cleaner import make_task, swap_in
from odradek.broker.log.cleaner.manager import LogCleanerManager
from odradek.broker.log.cleaner.worker import serve
from odradek.broker.log.cleaner.worker_client import WorkerClient
from odradek.broker.log.segment import CLEANED_SUFFIX, segment_path

from .helpers import NOW, DirectControl, append, clean, compacted_log, keyed, latest_values, records

SUFFIXES = (".log", ".index", ".timeindex")


class QueuedScheduler:
    """Runs jobs only when told: a roll's flush not yet run, a delayed delete not yet due."""

    def __init__(self) -> None:
        self.jobs = []

    def submit(self, name, job):
        self.jobs.append(job)

    def schedule(self, name, job, delay_ms):
        self.jobs.append(job)

    def run_all(self):
        jobs, self.jobs = self.jobs, []
        for job in jobs:
            job()


def small_log(directory, **config):
    """Three segments of updates to three keys (several index entries each), every segment cleanable."""
    log = compacted_log(directory, segment_bytes=64 * 1024, index_interval_bytes=256, **config)
    for segment in range(3):
        for i in range(30):
            append(log, keyed(*[(b"key-%d" % k, b"v%d-%d-%d" % (segment, i, k)) for k in range(3)]))
        log.roll()
    log.update_high_watermark(log.log_end_offset)
    return log


def contents(log):
    return [(offset, key, value) for offset, key, value, _ in records(log)]


def cleanable_of(log):
    manager = LogCleanerManager([os.path.dirname(log.dir)], lambda: {("topic", 0): log})
    return manager, manager.grab_filthiest_compacted_log(NOW)


def test_a_cleaning_right_after_a_roll_keeps_the_swapped_in_segments_index(tmp_path):
    # The roll's flush is still queued: the replaced segment's index entries are not on disk yet. Its
    # delayed delete must not remove the index files of the segment that took its base offset.
    scheduler = QueuedScheduler()
    log = Log(os.path.join(str(tmp_path), "topic-0"),
              LogConfig(cleanup_policy="compact", segment_bytes=1 << 20, index_interval_bytes=256,
                        min_cleanable_ratio=0.0), clock=lambda: NOW, scheduler=scheduler)
    for i in range(60):
        append(log, keyed(*[(b"key-%d" % k, b"v%d-%d" % (i, k)) for k in range(3)]))
    log.roll()
    assert os.path.getsize(segment_path(log.dir, 0, ".index")) == 0  # the premise: entries still pending
    expected = latest_values(log)
    assert clean(log) is not None
    scheduler.run_all()  # the roll's flush, then file.delete.delay.ms passes
    for suffix in SUFFIXES:
        assert os.path.exists(segment_path(log.dir, 0, suffix)), suffix
    assert not [name for name in os.listdir(log.dir) if name.endswith((".deleted", CLEANED_SUFFIX))]
    assert latest_values(log) == expected
    log.close()
    reopened = Log(log.dir, log.config, clock=lambda: NOW, had_clean_shutdown=True)
    assert latest_values(reopened) == expected and len(records(reopened)) == 3
    reopened.close()


def test_a_swap_of_cleaned_files_that_are_gone_is_refused(tmp_path):
    # Whatever removed them (an abort on the worker's side, an operator), the broker must not swap in an
    # empty segment of its own making for the log's data.
    log = small_log(tmp_path)
    before = contents(log)
    manager, cleanable = cleanable_of(log)
    task, segments = make_task(cleanable)
    control = DirectControl(manager, cleanable, segments)
    results = []

    def swap(group):
        for suffix in SUFFIXES:
            os.unlink(segment_path(log.dir, group.base_offset, suffix + CLEANED_SUFFIX))
        results.append(swap_in(manager, cleanable, segments, group))
        return results[-1]
    control.swap = swap
    try:
        Cleaner(CleanerConfig().worker_settings(), control).clean(task)
    except Exception:
        pass  # the refused swap ends the cleaning
    finally:
        manager.done_cleaning(cleanable.topic_partition, cleanable.dir, cleanable.first_dirty_offset)
    assert results == [False]
    assert contents(log) == before
    assert not [name for name in os.listdir(log.dir) if name.endswith(CLEANED_SUFFIX)]


def run_worker_with_broker(log, answer):
    """Serve one task on a worker thread; this side answers its first swap with an abort then ``answer``
    (without swapping) and returns the worker's last message and the files of that swap left on disk."""
    _, cleanable = cleanable_of(log)
    task, _ = make_task(cleanable)
    ours, theirs = Pipe()
    worker = threading.Thread(target=serve, args=(theirs,), daemon=True)
    worker.start()
    try:
        ours.send(("clean", task, CleanerConfig().worker_settings()))
        while True:
            message = ours.recv()
            if message[0] == "swap":
                group = message[1]
                ours.send(("abort", task.task_id))  # e.g. a shutdown, sent while the broker swaps
                ours.send(("swapped", answer))
            elif message[0] in ("done", "aborted", "error"):
                break
        left = [s for s in SUFFIXES if os.path.exists(segment_path(log.dir, group.base_offset, s + CLEANED_SUFFIX))]
        return message[0], left
    finally:
        ours.send(("stop",))
        worker.join(10)


def test_the_worker_leaves_the_files_it_handed_over_to_the_broker(tmp_path):
    # Kafka's cleaner deletes a cleaned segment only when an abort stops its copying, never once
    # replaceSegments may have begun: here the broker owns the files from the swap request to its answer.
    last, left = run_worker_with_broker(small_log(tmp_path), answer=True)
    assert last == "aborted" and left == list(SUFFIXES)


def test_the_worker_removes_the_files_of_a_refused_swap(tmp_path):
    last, left = run_worker_with_broker(small_log(tmp_path), answer=False)
    assert last == "aborted" and left == []


def test_an_abort_sent_as_the_task_starts_is_not_lost(tmp_path):
    log = small_log(tmp_path)
    before = contents(log)
    manager, cleanable = cleanable_of(log)
    task, segments = make_task(cleanable)
    client = WorkerClient("test", isolation="thread")
    try:
        client.abort(task.task_id)  # the cleaner thread has the task, the worker has not been handed it yet
        result = client.run(task, CleanerConfig().worker_settings(), lambda n: None,
                            lambda group: swap_in(manager, cleanable, segments, group))
    finally:
        client.stop()
    assert result is None and contents(log) == before
