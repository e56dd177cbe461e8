"""log.cleaner.io.max.bytes.per.second (Kafka's Throttler), cleaner-offset-checkpoint on truncation and
deletion, aborted cleanings, uncleanable partitions, dynamic reconfiguration limits."""

import pytest

from odradek.broker.log.cleaner.config import CleanerConfig, validate_reconfiguration
from odradek.broker.log.cleaner.log_cleaner import LogCleaner
from odradek.broker.log.cleaner.manager import LogCleanerManager
from odradek.broker.log.cleaner.throttler import Throttler

from .helpers import NOW, append, clean, compacted_log, keyed


class FakeTime:
    def __init__(self):
        self.now = 0.0
        self.slept = []

    def clock(self):
        return self.now

    def sleep(self, secs):
        self.slept.append(secs)
        self.now += secs


def test_the_throttler_sleeps_down_to_the_desired_rate_once_per_check_interval():
    t = FakeTime()
    throttler = Throttler(1000.0, check_interval_ms=300, clock=t.clock, sleep=t.sleep)
    throttler.maybe_throttle(500)  # inside the first interval: nothing yet
    assert t.slept == []
    t.now = 0.5
    throttler.maybe_throttle(1500)  # 2000 bytes in 0.5 s at 1000/s: sleep 1.5 s
    assert t.slept == [1.5]
    t.now += 0.4
    throttler.maybe_throttle(100)  # 100 bytes in 0.4 s: under the rate
    assert t.slept == [1.5] and throttler.total_bytes == 2100


def test_an_offset_map_of_one_entry_per_thread_is_refused_at_start():
    with pytest.raises(ValueError, match="increase log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads"):
        LogCleaner(CleanerConfig(dedupe_buffer_size=4 * 128, num_threads=4), [], dict)
    LogCleaner(CleanerConfig(dedupe_buffer_size=4 * 128 * 2, num_threads=4), [], dict)


def test_thread_changes_stay_within_half_and_double_as_kafka():
    assert validate_reconfiguration(2, 1) is None and validate_reconfiguration(2, 4) is None
    assert "at least 1" in validate_reconfiguration(1, 0)
    assert "half" in validate_reconfiguration(4, 1)
    assert "double" in validate_reconfiguration(2, 5)
    assert validate_reconfiguration(3, 1) is None  # 3 / 2 = 1 in integer arithmetic


def four_keys_log(directory):
    log = compacted_log(directory)
    for i in range(40):
        append(log, keyed((b"k%d" % (i % 4), b"v%d" % i)))
    log.roll()
    return log


def test_a_truncation_aborts_the_cleaning_and_pulls_the_checkpoint_back(tmp_path):
    log = four_keys_log(tmp_path)
    logs = {("topic", 0): log}
    cleaner = LogCleaner(CleanerConfig(backoff_ms=10), [str(tmp_path)], lambda: logs)
    log.on_truncated = cleaner.on_log_truncated
    manager = cleaner.manager
    clean(log, manager)
    assert manager.all_cleaner_checkpoints()[("topic", 0)] == 40
    in_progress = manager.grab_filthiest_compacted_log(NOW)
    assert in_progress is None  # nothing dirty left: take the log by hand
    manager._in_progress[("topic", 0)] = "in-progress"
    log.truncate_to(5)
    assert manager.is_aborted(("topic", 0))
    manager.done_cleaning(("topic", 0), str(tmp_path), 40)  # an aborted cleaning checkpoints nothing
    assert manager.all_cleaner_checkpoints()[("topic", 0)] == log.active_segment.base_offset <= 5


def test_a_deleted_log_leaves_the_checkpoint_and_uncleanable_partitions_are_skipped(tmp_path):
    log = four_keys_log(tmp_path)
    logs = {("topic", 0): log}
    manager = LogCleanerManager([str(tmp_path)], lambda: logs)
    manager.mark_uncleanable(str(tmp_path), ("topic", 0))
    assert manager.grab_filthiest_compacted_log(NOW) is None
    assert manager.uncleanable_bytes(str(tmp_path), NOW) == sum(s.size for s in log.segments[:-1])
    manager = LogCleanerManager([str(tmp_path)], lambda: logs)
    clean(log, manager)
    logs.clear()
    manager.update_checkpoints(str(tmp_path), remove=("topic", 0))
    assert manager.all_cleaner_checkpoints() == {}


def test_a_paused_partition_is_neither_cleaned_nor_retained_until_every_pause_is_resumed(tmp_path):
    log = four_keys_log(tmp_path)
    tp = ("topic", 0)
    manager = LogCleanerManager([str(tmp_path)], lambda: {tp: log})
    aborted = []
    manager.on_abort = aborted.append
    manager.abort_and_pause(tp)
    manager.abort_and_pause(tp)  # two moves' worth (Kafka's LogCleaningPaused(2))
    assert aborted == []  # nothing was running
    assert manager.grab_filthiest_compacted_log(NOW) is None and manager.deletable_logs() == []
    manager.resume_cleaning(tp)
    assert manager.is_paused(tp) and manager.grab_filthiest_compacted_log(NOW) is None
    manager.resume_cleaning(tp)
    assert not manager.is_paused(tp)
    grabbed = manager.grab_filthiest_compacted_log(NOW)
    assert grabbed is not None and grabbed.topic_partition == tp
    manager.abort_and_pause(tp)  # a pause during a cleaning voids it
    assert aborted == [tp] and manager.is_aborted(tp)
    manager.done_cleaning(tp, str(tmp_path), 40)
    assert tp not in manager.all_cleaner_checkpoints()  # the aborted cleaning checkpointed nothing
    assert manager.grab_filthiest_compacted_log(NOW) is None  # and the pause still holds
    manager.resume_cleaning(tp)
    assert manager.grab_filthiest_compacted_log(NOW) is not None
