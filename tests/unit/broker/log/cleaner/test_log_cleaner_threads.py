"""The LogCleaner with its threads and workers: a worker process (or thread) cleans, the broker's side swaps;
an abort stops a cleaning without a swap; a throttled cleaner waits; the worker process ends with the
cleaner; retention of compacted logs runs on the cleaner threads."""

import os
import time

import pytest

from odradek.broker.log.cleaner.config import CleanerConfig
from odradek.broker.log.cleaner.log_cleaner import LogCleaner

from .helpers import NOW, age_segments, append, compacted_log, keyed, latest_values, records


def dirty_log(directory, updates=2000, keys=50, timestamp=None, **config):
    log = compacted_log(directory, segment_bytes=16 * 1024, **config)
    expected = {}
    for first in range(0, updates, 20):
        pairs = [(b"key-%d" % (i % keys), b"value-%d" % i) for i in range(first, first + 20)]
        append(log, keyed(*pairs) if timestamp is None else keyed(*pairs, timestamp=timestamp))
        expected.update(pairs)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    return log, expected


def wait_for(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_a_cleaner_thread_cleans_through_its_worker(tmp_path, isolation):
    log, expected = dirty_log(tmp_path)
    cleaner = LogCleaner(CleanerConfig(backoff_ms=20, isolation=isolation), [str(tmp_path)],
                         lambda: {("topic", 0): log})
    cleaner.startup()
    try:
        assert cleaner.await_cleaned(("topic", 0), 2000, timeout_s=60)
        assert latest_values(log) == expected and len(records(log)) == 50
        thread = cleaner.threads[0]
        pid = thread.worker.pid
        assert (pid is not None) == (isolation == "process")
        assert cleaner.max_clean_time_secs >= 0 and cleaner.cleaner_recopy_percent < 10
        assert cleaner.dead_thread_count == 0 and 0 <= cleaner.max_dirty_percent <= 100
    finally:
        cleaner.shutdown()
    if pid is not None:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # stopped with the cleaner (and reaped)


def test_an_aborted_cleaning_swaps_nothing_and_checkpoints_nothing(tmp_path):
    log, _ = dirty_log(tmp_path, updates=20000)
    files_before = sorted(os.listdir(log.dir))
    # 100 KB/s for ~1 MB read twice: the cleaning takes many seconds, throttled by the broker's side
    cleaner = LogCleaner(CleanerConfig(backoff_ms=20, max_io_bytes_per_second=100_000.0, io_buffer_size=16384),
                         [str(tmp_path)], lambda: {("topic", 0): log})
    # Kafka's throttler first measures the rate 300 ms into a period: enough, unthrottled, for the round that
    # follows the abort to clean a few segments before the shutdown below. Measured from the first read on,
    # every round takes its many seconds.
    cleaner._throttler.check_interval = 0.0
    cleaner.startup()
    try:
        thread = cleaner.threads[0]
        wait_for(lambda: thread._task is not None)
        task = thread._task
        wait_for(lambda: cleaner._throttler.total_bytes > 0)
        cleaner.abort_cleaning(("topic", 0))
        wait_for(lambda: thread._task is not task)  # given up (the next round may start it again)
    finally:
        cleaner.shutdown()  # aborts that one too
    # Kafka's doneCleaning still checkpoints the first dirty offset (0) of a cleaning stopped by shutdown
    assert thread.cleanings == 0 and cleaner.manager.all_cleaner_checkpoints().get(("topic", 0), 0) == 0
    assert sorted(os.listdir(log.dir)) == files_before  # no swap, no .cleaned file left


def test_retention_of_a_compact_delete_log_runs_on_the_cleaner_thread(tmp_path):
    log, _ = dirty_log(tmp_path, cleanup_policy="compact,delete", retention_ms=60_000, timestamp=NOW - 120_000)
    age_segments(log, 120_000)  # an emptied segment is as old as its file (Kafka's largestTimestamp)
    cleaner = LogCleaner(CleanerConfig(backoff_ms=20, enable_cleaner=True), [str(tmp_path)],
                         lambda: {("topic", 0): log})
    cleaner.startup()
    try:
        wait_for(lambda: log.log_start_offset > 0)
    finally:
        cleaner.shutdown()


def test_a_log_deleted_while_it_is_cleaned_is_not_marked_uncleanable(tmp_path):
    log, _ = dirty_log(tmp_path, updates=20000)
    logs = {("topic", 0): log}
    cleaner = LogCleaner(CleanerConfig(backoff_ms=20, max_io_bytes_per_second=100_000.0, io_buffer_size=16384),
                         [str(tmp_path)], lambda: logs)
    cleaner.startup()
    try:
        thread = cleaner.threads[0]
        wait_for(lambda: thread._task is not None and cleaner._throttler.total_bytes > 0)
        # LogManager.delete_log aborts, then removes the directory; the worker may meet the missing files
        # before the abort message: hold the message back to make that the case here.
        cleaner.manager.on_abort = None
        del logs[("topic", 0)]
        cleaner.on_log_deleted(("topic", 0), str(tmp_path))
        log.delete()
        wait_for(lambda: thread._task is None)
    finally:
        cleaner.shutdown()
    assert cleaner.manager.uncleanable_partitions(str(tmp_path)) == set()
    assert thread.cleanings == 0 and cleaner.manager.all_cleaner_checkpoints() == {}
