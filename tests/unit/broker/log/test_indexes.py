import gc
import os

import pytest

from odradek.broker.log.offset_index import CorruptIndexError, OffsetIndex
from odradek.broker.log.time_index import TimeIndex


def test_offset_index_lookup_is_largest_entry_at_or_below(tmp_path):
    index = OffsetIndex(str(tmp_path / "00000000000000000100.index"), 100)
    for offset, position in [(105, 0), (110, 4096), (120, 8200)]:
        index.append(offset, position)
    assert index.lookup(99) == (100, 0)
    assert index.lookup(105) == (105, 0)
    assert index.lookup(115) == (110, 4096)
    assert index.lookup(10**9) == (120, 8200)
    index.flush()
    assert os.path.getsize(index.path) == 3 * 8
    with pytest.raises(ValueError):
        index.append(120, 9000)


def test_offset_index_file_format_and_reload(tmp_path):
    path = str(tmp_path / "00000000000000000010.index")
    index = OffsetIndex(path, 10)
    index.append(12, 77)
    index.close()
    assert open(path, "rb").read() == (2).to_bytes(4, "big") + (77).to_bytes(4, "big")
    again = OffsetIndex(path, 10)
    again.sanity_check()
    assert again.lookup(50) == (12, 77)


def test_offset_index_truncate_and_full(tmp_path):
    index = OffsetIndex(str(tmp_path / "0.index"), 0, max_index_size=3 * 8)
    for i in range(3):
        index.append(i * 10, i * 100)
    assert index.is_full
    index.flush()
    index.truncate_to(10)
    assert index.entries == 1 and os.path.getsize(index.path) == 8
    assert index.lookup(25) == (0, 0)


def test_corrupt_offset_index_fails_sanity_check(tmp_path):
    path = str(tmp_path / "0.index")
    with open(path, "wb") as f:
        f.write(b"\x00\x00\x00\x05\x00\x00\x00\x10\x00\x00\x00\x02\x00\x00\x00\x20")  # 5 then 2: decreasing
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0).sanity_check()
    with open(path, "ab") as f:
        f.write(b"\x01\x02\x03")
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0).sanity_check()


def test_time_index_only_grows_and_looks_up(tmp_path):
    path = str(tmp_path / "00000000000000000000.timeindex")
    index = TimeIndex(path, 0)
    assert index.maybe_append(1000, 5)
    assert not index.maybe_append(900, 6)  # timestamps never go back
    assert index.maybe_append(2000, 9)
    assert index.lookup(999) == (-1, 0)
    assert index.lookup(1500) == (1000, 5)
    assert index.lookup(5000) == (2000, 9)
    index.close()
    assert os.path.getsize(path) == 24
    reloaded = TimeIndex(path, 0)
    reloaded.sanity_check()
    reloaded.truncate_to(9)
    assert reloaded.entries == 1 and reloaded.last_entry == (1000, 5)


def test_indexes_hold_no_descriptor_read_their_file_on_first_use_and_write_entries_in_bunches(tmp_path):
    def open_fds() -> int:
        gc.collect()  # an earlier test's unreachable file, closed by the collector mid-test, is no change of ours
        return len(os.listdir("/proc/self/fd"))

    before = open_fds()
    indexes = [OffsetIndex(str(tmp_path / f"{i:020d}.index"), i * 1000) for i in range(50)]
    for i, index in enumerate(indexes):
        index.append(i * 1000 + 5, 100)
    times = [TimeIndex(str(tmp_path / f"{i:020d}.timeindex"), i * 1000) for i in range(50)]
    for i, index in enumerate(times):
        index.maybe_append(1_000_000 + i, i * 1000 + 5)
    assert open_fds() == before
    assert not os.path.exists(indexes[0].path)  # one entry: still pending
    for index in indexes + times:
        index.close()
    assert os.path.getsize(indexes[0].path) == 8 and os.path.getsize(times[0].path) == 12
    reloaded = OffsetIndex(indexes[3].path, 3000)
    os.unlink(indexes[3].path)  # not read yet: the file is only opened when the index is first used
    assert reloaded.entries == 0
    busy = OffsetIndex(str(tmp_path / "busy.index"), 0)
    for i in range(1, 1000):  # past the pending bunch: written without being asked
        busy.append(i, i * 10)
    assert 0 < os.path.getsize(busy.path) < 999 * 8
