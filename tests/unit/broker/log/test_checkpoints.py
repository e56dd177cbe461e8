import os

import pytest

from odradek.broker.log import (
    UNDEFINED_EPOCH, CheckpointError, LeaderEpochCheckpointFile, LeaderEpochFileCache, OffsetCheckpointFile,
)
from odradek.broker.log import checkpoints


def test_offset_checkpoint_format_round_trip(tmp_path):
    path = str(tmp_path / "recovery-point-offset-checkpoint")
    OffsetCheckpointFile(path).write({("b-topic", 1): 99, ("a-topic", 0): 1234})
    assert open(path).read() == "0\n2\na-topic 0 1234\nb-topic 1 99\n"
    assert OffsetCheckpointFile(path).read() == {("a-topic", 0): 1234, ("b-topic", 1): 99}
    assert OffsetCheckpointFile(str(tmp_path / "missing")).read() == {}


@pytest.mark.parametrize("text", ["", "0\n", "0\n0\n"])
def test_an_empty_checkpoint_or_one_without_a_count_reads_as_empty(tmp_path, text):
    """Kafka 2.8 leaves an empty leader-epoch-checkpoint in a partition that never had an epoch, and an empty
    cleaner-offset-checkpoint before the first cleaning; its reader takes both as no entries."""
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    assert LeaderEpochCheckpointFile(str(path)).read() == [] and OffsetCheckpointFile(str(path)).read() == {}


@pytest.mark.parametrize("text", ["x\n", "1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt zero 1\n", "0\n1\nt 0\n"])
def test_malformed_checkpoints_raise(tmp_path, text):
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CheckpointError):
        OffsetCheckpointFile(str(path)).read()


def test_atomic_write_keeps_old_file_when_interrupted(tmp_path, monkeypatch):
    path = str(tmp_path / "log-start-offset-checkpoint")
    OffsetCheckpointFile(path).write({("t", 0): 5})

    def crash(src, dst):
        raise OSError("simulated crash before rename")
    monkeypatch.setattr(checkpoints.os, "replace", crash)
    with pytest.raises(OSError):
        OffsetCheckpointFile(path).write({("t", 0): 6})
    monkeypatch.undo()
    assert OffsetCheckpointFile(path).read() == {("t", 0): 5}
    assert os.path.exists(path + ".tmp")  # the new content only ever went to the temp file


def test_leader_epoch_checkpoint_format(tmp_path):
    path = str(tmp_path / "leader-epoch-checkpoint")
    cache = LeaderEpochFileCache(LeaderEpochCheckpointFile(path))
    cache.assign(0, 0)
    cache.assign(2, 10)
    cache.assign(2, 15)  # same epoch later: ignored
    assert open(path).read() == "0\n2\n0 0\n2 10\n"
    assert LeaderEpochFileCache(LeaderEpochCheckpointFile(path)).entries == [(0, 0), (2, 10)]


def test_leader_epoch_end_offsets(tmp_path):
    cache = LeaderEpochFileCache(LeaderEpochCheckpointFile(str(tmp_path / "c")))
    for epoch, start in [(1, 0), (3, 10), (5, 30)]:
        cache.assign(epoch, start)
    assert cache.end_offset_for(5, 42) == (5, 42)
    assert cache.end_offset_for(3, 42) == (3, 30)
    assert cache.end_offset_for(4, 42) == (3, 30)  # unknown epoch between: floor epoch, next start
    assert cache.end_offset_for(0, 42) == (0, 0)
    assert cache.end_offset_for(9, 42) == (UNDEFINED_EPOCH, -1)
    assert cache.end_offset_for(-1, 42) == (-1, -1)


def test_leader_epoch_truncation_and_non_monotonic_assign(tmp_path):
    cache = LeaderEpochFileCache(LeaderEpochCheckpointFile(str(tmp_path / "c")))
    for epoch, start in [(1, 0), (3, 10), (5, 30)]:
        cache.assign(epoch, start)
    cache.truncate_from_end(20)
    assert cache.entries == [(1, 0), (3, 10)]
    cache.truncate_from_start(12)
    assert cache.entries == [(3, 12)]
    cache.assign(4, 11)  # an earlier start offset removes entries that would overlap it
    assert cache.entries == [(4, 11)]
    assert LeaderEpochFileCache(LeaderEpochCheckpointFile(str(tmp_path / "c"))).entries == [(4, 11)]


def test_the_sequencer_drops_a_snapshot_older_than_the_one_written(tmp_path):
    path = str(tmp_path / "replication-offset-checkpoint")
    sequencer = checkpoints.CheckpointSequencer()
    older, newer = sequencer.take(path), sequencer.take(path)
    file = checkpoints.OffsetCheckpointFile(path)
    assert sequencer.write_if_newest(path, newer, lambda: file.write({("t", 0): 7}))
    assert not sequencer.write_if_newest(path, older, lambda: file.write({("t", 0): 3}))
    assert file.read() == {("t", 0): 7}
    # another file keeps its own order
    other = str(tmp_path / "recovery-point-offset-checkpoint")
    assert sequencer.write_if_newest(other, sequencer.take(other), lambda: None)
