"""Segment log files within a descriptor budget: opened on use, the least recently used idle one closed
when the budget is reached, never one in use; EMFILE gives descriptors back; one line names ulimit -n."""

from __future__ import annotations

import errno
import gc
import logging
import os

import pytest

from odradek.broker.log import file_handles
from odradek.broker.log.file_handles import FileHandles
from odradek.broker.log.segment import LogSegment

from .helpers import make_batch


@pytest.fixture
def handles(monkeypatch):
    small = FileHandles(budget=4)
    monkeypatch.setattr(file_handles, "HANDLES", small)
    monkeypatch.setattr("odradek.broker.log.segment.HANDLES", small)
    return small


def open_fds() -> int:
    # Earlier tests' unreachable files and sockets are closed first, not by a collection during the test
    # (a full CI run once counted 4 fewer descriptors at the end than at the start).
    gc.collect()
    return len(os.listdir("/proc/self/fd"))


def test_segments_beyond_the_budget_share_it_and_stay_readable(tmp_path, handles, caplog):
    before = open_fds()
    with caplog.at_level(logging.WARNING, logger="odradek.broker.log.file_handles"):
        segments = []
        for i in range(12):
            os.makedirs(tmp_path / f"p{i}")
            segments.append(LogSegment(str(tmp_path / f"p{i}"), 0))
        for i, segment in enumerate(segments):
            segment.append(make_batch(2, tag=b"seg-%d-" % i), 1)
    assert handles.open_count <= 4 and open_fds() <= before + 4
    assert handles.evictions >= 8
    for i, segment in enumerate(segments):  # every one reopens on demand and reads its own data
        assert b"seg-%d-" % i in segment.read(0, 1 << 20).records
        segment.append(make_batch(1, base_offset=2), 2)
        assert segment.next_offset == 3
    warnings = [r.getMessage() for r in caplog.records if "ulimit -n" in r.getMessage()]
    assert len(warnings) == 1 and "5 segment files exceed its descriptor budget of 4" in warnings[0]
    for segment in segments:
        segment.close()
    assert handles.open_count == 0 and handles.owners == 0 and open_fds() == before


def test_a_descriptor_in_use_is_never_closed_under_its_user(tmp_path, handles):
    segments = []
    for i in range(6):
        os.makedirs(tmp_path / f"p{i}")
        segments.append(LogSegment(str(tmp_path / f"p{i}"), 0))
    pinned = segments[0]
    with handles.use(pinned) as fd:
        for segment in segments[1:]:
            with handles.use(segment):
                pass
        assert os.fstat(fd).st_ino == os.stat(pinned.log_path).st_ino  # still open, still its file
    for segment in segments:
        segment.close()


class Flaky:
    """An owner whose first opens fail with EMFILE, as when sockets took the reserve."""

    def __init__(self, path: str, failures: int) -> None:
        self.log_path = path
        self.failures = failures

    def open_file(self) -> int:
        if self.failures:
            self.failures -= 1
            raise OSError(errno.EMFILE, "Too many open files")
        return os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)


def test_emfile_gives_segment_descriptors_back_and_says_so_once(tmp_path, caplog):
    handles = FileHandles(budget=10)
    idle = [Flaky(str(tmp_path / f"idle{i}"), 0) for i in range(3)]
    for owner in idle:
        with handles.use(owner):
            pass
    flaky = Flaky(str(tmp_path / "flaky"), 2)
    with caplog.at_level(logging.ERROR, logger="odradek.broker.log.file_handles"):
        with handles.use(flaky) as fd:
            assert fd >= 0
        with pytest.raises(OSError):
            with handles.use(Flaky(str(tmp_path / "hopeless"), 100)):
                pass
    assert handles.open_count <= 2 and handles.budget < 10
    errors = [r.getMessage() for r in caplog.records if "ulimit -n" in r.getMessage()]
    assert len(errors) == 1 and "Out of file descriptors" in errors[0]
    for owner in idle + [flaky]:
        handles.close(owner)
