"""Storage faults (KIP-112): the failure channel, a log's I/O errors taking its directory offline, torn writes."""

import errno
import os

import pytest

from odradek.broker.log import LogManager
from odradek.broker.log import segment as segment_module
from odradek.broker.log.log_dir_failure import LogDirFailureChannel
from odradek.protocol.errors import KafkaStorageError
from odradek.protocol.records import RecordBatchError, RecordBatchView

from .helpers import value_batch


def test_a_directory_goes_offline_once():
    channel = LogDirFailureChannel()
    heard = []
    channel.listener = heard.append
    assert channel.mark_offline("/data/a", "first", OSError(errno.EIO, "boom"))
    assert not channel.mark_offline("/data/a", "second", OSError(errno.EIO, "boom"))
    assert channel.mark_offline("/data/b", "other dir")
    assert heard == ["/data/a", "/data/b"]
    assert channel.is_offline("/data/a") and not channel.is_offline("/data/c")


class _FullDisk:
    """os.write as on a full filesystem: the first call writes ``fits`` bytes and returns that count (a short
    write, as Linux's write(2) does when the disk fills), every later call fails with ENOSPC."""

    def __init__(self, fits: int) -> None:
        self.fits = fits
        self.calls = 0
        self.real_write = os.write

    def __call__(self, fd: int, data) -> int:
        self.calls += 1
        if self.calls == 1 and self.fits:
            return self.real_write(fd, bytes(data)[:self.fits])
        raise OSError(errno.ENOSPC, "No space left on device")


def _values(log_, start=0):
    out = []
    data = log_.read(start, 1 << 20).records
    pos = 0
    while pos < len(data):
        view = RecordBatchView(data, pos)
        view.validate()  # the CRC: a misframed batch fails here
        out += [r.value for r in view.records()]
        pos += view.size_in_bytes
    return out


def test_a_torn_write_is_cut_back_and_the_directory_goes_offline(tmp_path, monkeypatch):
    manager = LogManager([str(tmp_path / "a"), str(tmp_path / "b")], broker_id=0)
    heard = []
    manager.failure_channel.listener = heard.append
    log_ = manager.get_or_create_log("t", 0)
    other = manager.get_or_create_log("t", 1)
    log_.append_as_leader(value_batch(b"one", b"two"), 0)
    segment = log_.active_segment
    size_before = segment.size
    full = _FullDisk(fits=20)
    monkeypatch.setattr(segment_module.os, "write", full)
    with pytest.raises(KafkaStorageError):
        log_.append_as_leader(value_batch(b"three" * 50), 0)
    monkeypatch.undo()
    # the 20 bytes that fitted are gone from the file, and the in-memory end agrees with it
    assert os.path.getsize(segment.log_path) == size_before == segment.size
    assert log_.log_end_offset == 2
    log_dir = os.path.dirname(log_.dir)
    assert heard == [log_dir]
    # the directory is offline: the log answers KAFKA_STORAGE_ERROR rather than serving anything
    with pytest.raises(KafkaStorageError):
        log_.read(0, 1000)
    with pytest.raises(KafkaStorageError):
        log_.append_as_leader(value_batch(b"four"), 0)
    # the other directory goes on
    other.append_as_leader(value_batch(b"elsewhere"), 0)
    assert _values(other) == [b"elsewhere"]
    assert manager.handle_log_dir_failure(log_dir) == [("t", 0)]
    assert manager.live_log_dirs == [os.path.dirname(other.dir)]
    assert manager.get_log("t", 0) is None
    with pytest.raises(KafkaStorageError, match="offline"):
        manager.get_or_create_log("t", 0, is_new=False)
    manager.shutdown()
    # the offline dir got no clean-shutdown marker: the next start recovers it, and reads what was acknowledged
    assert not os.path.exists(os.path.join(log_dir, ".kafka_cleanshutdown"))
    again = LogManager([str(tmp_path / "a"), str(tmp_path / "b")], broker_id=0)
    assert not again.had_clean_shutdown[log_dir]
    assert _values(again.get_log("t", 0)) == [b"one", b"two"]
    again.shutdown()


def _append_as_before(fd, data, path, start=None):
    """The segment's write before KIP-112 here: a short write raised, its bytes stayed in the file."""
    written = os.write(fd, data)
    if written != len(data):
        raise OSError(f"short write to {path}: {written} of {len(data)} bytes")


def test_without_the_cut_a_retry_after_a_short_write_reads_back_misframed(tmp_path, monkeypatch):
    """What produced the 0x1c value of issue 29: the short write's bytes stayed in the file, the retried batch
    was appended after them (O_APPEND) while the segment's positions did not count them, so a read at the
    tracked position framed the torn bytes as the batch. The cut (log_dir_failure.append_whole and
    LogSegment._undo_append) makes the retry land where the positions say; here both are switched off to
    show the failure they prevent."""
    manager = LogManager([str(tmp_path / "a")], broker_id=0)
    log_ = manager.get_or_create_log("t", 0)
    log_.failure_channel = None  # a plain OSError, and the log stays usable, as before KIP-112
    log_.append_as_leader(value_batch(b"one"), 0)
    monkeypatch.setattr(segment_module.LogSegment, "_undo_append", lambda *args: None)
    monkeypatch.setattr(segment_module, "append_whole", _append_as_before)
    with monkeypatch.context() as disk:
        disk.setattr(os, "write", _FullDisk(fits=30))
        with pytest.raises(OSError):
            log_.append_as_leader(value_batch(b"retried" * 20), 0)
    log_.append_as_leader(value_batch(b"retried" * 20), 0)
    with pytest.raises(RecordBatchError):
        _values(log_)  # the batch read at the tracked position is torn bytes and the retry's head: bad CRC


def test_the_retry_after_a_cut_reads_back_whole(tmp_path, monkeypatch):
    manager = LogManager([str(tmp_path / "a")], broker_id=0)
    log_ = manager.get_or_create_log("t", 0)
    log_.failure_channel = None
    log_.append_as_leader(value_batch(b"one"), 0)
    monkeypatch.setattr(segment_module.os, "write", _FullDisk(fits=30))
    with pytest.raises(OSError):
        log_.append_as_leader(value_batch(b"retried" * 20), 0)
    monkeypatch.undo()
    log_.append_as_leader(value_batch(b"retried" * 20), 0)
    assert _values(log_) == [b"one", b"retried" * 20]
    manager.shutdown()


def test_a_checkpoint_that_cannot_be_written_takes_its_directory_offline(tmp_path, monkeypatch):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    manager = LogManager([a, b], broker_id=0)
    manager.get_or_create_log("t", 0)
    manager.get_or_create_log("t", 1)
    real = os.replace

    def failing_replace(src, dst, *args, **kwargs):
        if os.path.dirname(os.path.abspath(dst)) == a:
            raise OSError(errno.EIO, "Input/output error")
        return real(src, dst, *args, **kwargs)
    monkeypatch.setattr(os, "replace", failing_replace)
    manager.checkpoint_recovery_points()
    monkeypatch.undo()
    assert manager.offline_log_dirs == [a]
    assert manager.live_log_dirs == [b]
    manager.handle_log_dir_failure(a)
    assert manager.get_or_create_log("u", 0).dir.startswith(b)  # new partitions go to a live dir
    manager.shutdown()


def test_recovery_failing_at_start_up_takes_only_that_directory_offline(tmp_path, monkeypatch):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    manager = LogManager([a, b], broker_id=0)
    manager.get_or_create_log("t", 0).append_as_leader(value_batch(b"x"), 0)
    manager.get_or_create_log("t", 1).append_as_leader(value_batch(b"y"), 0)
    manager.shutdown()
    real_listdir = os.listdir

    def failing_listdir(path):
        if os.path.abspath(path).startswith(os.path.join(a, "t-")):
            raise OSError(errno.EIO, "Input/output error")
        return real_listdir(path)
    monkeypatch.setattr(os, "listdir", failing_listdir)
    again = LogManager([a, b], broker_id=0)
    monkeypatch.undo()
    assert again.offline_log_dirs == [a]
    assert again.get_log("t", 0) is None and again.get_log("t", 1) is not None
    again.shutdown()


def test_the_offline_dir_count_metric(tmp_path):
    from types import SimpleNamespace

    from odradek.broker.metrics.log_manager_metrics import LogManagerCollector
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    manager = LogManager([a, b], broker_id=0)
    collector = LogManagerCollector(SimpleNamespace(log_manager=manager))

    def values():
        return {(m.name, tuple(s.labels.values())): s.value for m in collector.collect() for s in m.samples}
    assert values()[("kafka_log_logmanager_offlinelogdirectorycount", ())] == 0
    manager.failure_channel.mark_offline(a, "test")
    found = values()
    assert found[("kafka_log_logmanager_offlinelogdirectorycount", ())] == 1
    assert found[("kafka_log_logmanager_logdirectoryoffline", (a,))] == 1
    assert found[("kafka_log_logmanager_logdirectoryoffline", (b,))] == 0
    manager.shutdown()


def test_a_dir_that_cannot_be_created_is_offline_and_the_others_load(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    good = str(tmp_path / "good")
    manager = LogManager([str(blocker / "logs"), good], broker_id=0)
    assert manager.offline_log_dirs == [str(blocker / "logs")] and manager.live_log_dirs == [good]
    assert manager.get_or_create_log("t", 0).dir.startswith(good)
    manager.shutdown()
    with pytest.raises(KafkaStorageError, match="none of the log dirs"):
        LogManager([str(blocker / "logs")], broker_id=0)


def test_append_whole_leaves_the_file_as_it_was_after_a_short_write(tmp_path, monkeypatch):
    """What the segment, offset index and transaction index appends share."""
    from odradek.broker.log.log_dir_failure import append_whole
    path = tmp_path / "f"
    path.write_bytes(b"head")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        with monkeypatch.context() as disk:
            disk.setattr(os, "write", _FullDisk(fits=3))
            with pytest.raises(OSError) as raised:
                append_whole(fd, b"0123456789", str(path))
        assert raised.value.errno == errno.ENOSPC
        assert path.read_bytes() == b"head"
        append_whole(fd, b"tail", str(path))
        assert path.read_bytes() == b"headtail"
    finally:
        os.close(fd)
