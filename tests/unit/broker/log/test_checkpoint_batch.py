"""The batched leader epoch checkpoints: the writer (compiled and its pure-Python twin) and the batch."""

import asyncio
import errno
import os
import subprocess
import sys
import threading

import pytest

from odradek.broker.log import LeaderEpochCheckpointFile, LeaderEpochFileCache, checkpoint_batch, checkpoint_writer
from odradek.broker.log.checkpoint_batch import batched_checkpoints


def _compiled():
    try:
        from odradek.broker.log import _checkpoint_writer
    except ImportError:
        return None
    return _checkpoint_writer.write_files


@pytest.fixture(params=["compiled", "python"])
def write_files(request, monkeypatch):
    """The writer under test, also made the one the batches use."""
    impl = _compiled() if request.param == "compiled" else checkpoint_writer.write_files_py
    if impl is None:
        pytest.skip("the compiled checkpoint writer is not built")
    monkeypatch.setattr(checkpoint_writer, "write_files", impl)
    return impl


def _tmp_files(directory):
    return [name for _, _, names in os.walk(directory) for name in names if name.endswith(".tmp")]


def test_write_files_writes_exact_content_and_leaves_no_tmp(write_files, tmp_path):
    (tmp_path / "old").write_bytes(b"previous content, longer than the new one\n")
    items = [(str(tmp_path / f"f{i}"), f"0\n1\n{i} {i * 10}\n".encode()) for i in range(300)]
    items += [(str(tmp_path / "empty"), b""), (str(tmp_path / "old"), b"new\n"),
              (str(tmp_path / "big"), bytes(range(256)) * 4096)]
    assert write_files(items, 64) == []
    for path, data in items:
        assert open(path, "rb").read() == data
    assert _tmp_files(tmp_path) == []


@pytest.mark.parametrize("threads", [1, 3, 1000])
def test_write_files_reports_each_failure_and_writes_the_others(write_files, tmp_path, threads):
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "a-dir" / "inside").write_text("keeps the directory non-empty")
    items = [(str(tmp_path / "first"), b"1\n"),
             (str(tmp_path / "missing" / "leader-epoch-checkpoint"), b"2\n"),  # no such directory
             (str(tmp_path / "a-dir"), b"3\n"),  # a directory in the way: the rename fails
             (str(tmp_path / "last"), b"4\n")]
    assert write_files(items, threads) == [(1, errno.ENOENT), (2, errno.EISDIR)]
    assert open(items[0][0], "rb").read() == b"1\n" and open(items[3][0], "rb").read() == b"4\n"
    assert not os.path.exists(tmp_path / "missing")


def test_the_compiled_writer_refuses_what_it_cannot_write():
    compiled = _compiled()
    if compiled is None:
        pytest.skip("the compiled checkpoint writer is not built")
    with pytest.raises(TypeError):
        compiled([("path", "text, not bytes")], 4)
    with pytest.raises(TypeError):
        compiled([("path",)], 4)
    with pytest.raises(ValueError):
        compiled([("pa\0th", b"")], 4)
    with pytest.raises(ValueError):
        compiled([], 0)


def _caches(tmp_path, count):
    caches = []
    for i in range(count):
        partition_dir = tmp_path / f"topic-{i}"
        partition_dir.mkdir()
        caches.append(LeaderEpochFileCache(LeaderEpochCheckpointFile(str(partition_dir / "leader-epoch-checkpoint"))))
    return caches


def _on_disk(cache):
    return LeaderEpochCheckpointFile(cache.checkpoint.path).read()


def test_a_batch_writes_every_changed_cache(write_files, tmp_path):
    caches = _caches(tmp_path, 500)
    with batched_checkpoints() as batch:
        for i, cache in enumerate(caches):
            cache.assign(1, 0)
            cache.assign(2 + i % 3, 10 * i + 1)
    assert len(batch) == 500
    assert not any(os.path.exists(cache.checkpoint.path) for cache in caches)  # only joined the batch
    asyncio.run(batch.write_concurrently())
    for i, cache in enumerate(caches):
        assert _on_disk(cache) == [(1, 0), (2 + i % 3, 10 * i + 1)]
    assert _tmp_files(tmp_path) == [] and len(batch) == 0


class _Gate:
    """Wraps the writer: its first call waits until the test opens the gate, so the test can change caches
    while that batch is in flight."""

    def __init__(self, monkeypatch):
        self.real = checkpoint_writer.write_files
        self.calls = []
        self.started = threading.Event()
        self.open = threading.Event()
        monkeypatch.setattr(checkpoint_writer, "write_files", self)

    def __call__(self, items, threads):
        self.calls.append([path for path, _ in items])
        if len(self.calls) == 1:
            self.started.set()
            assert self.open.wait(10)
        return self.real(items, threads)

    async def in_flight(self):
        await asyncio.get_running_loop().run_in_executor(None, self.started.wait, 10)


async def _batch_in_flight(caches, gate: _Gate) -> asyncio.Future:
    """Epoch 1 assigned to each cache in one batch, whose write is started and held at the gate."""
    with batched_checkpoints() as batch:
        for cache in caches:
            cache.assign(1, 0)
    writing = asyncio.ensure_future(batch.write_concurrently())
    await gate.in_flight()
    return writing


def test_a_cache_changed_while_its_batch_is_in_flight_ends_with_its_latest_entries(write_files, tmp_path,
                                                                                   monkeypatch):
    caches = _caches(tmp_path, 20)
    gate = _Gate(monkeypatch)

    async def main():
        writing = await _batch_in_flight(caches, gate)
        caches[3].assign(2, 5)  # on the loop: no write of its own (the batch owns the file) ...
        assert not os.path.exists(caches[3].checkpoint.path)
        other = threading.Thread(target=caches[7].truncate_from_start, args=(4,))  # ... nor on another thread
        other.start()
        other.join()
        assert not os.path.exists(caches[7].checkpoint.path)
        with batched_checkpoints() as second:  # a second batch leaves it to the first one too
            caches[11].assign(3, 9)
        await second.write_concurrently()
        gate.open.set()
        await writing

    asyncio.run(main())
    assert _on_disk(caches[3]) == [(1, 0), (2, 5)]
    assert _on_disk(caches[7]) == [(1, 4)]
    assert _on_disk(caches[11]) == [(1, 0), (3, 9)]
    assert _on_disk(caches[0]) == [(1, 0)]
    assert sorted(gate.calls[1]) == sorted(caches[i].checkpoint.path for i in (3, 7, 11))  # only those again
    assert len(gate.calls) == 2 and _tmp_files(tmp_path) == []
    caches[3].assign(4, 20)  # released: a change writes at once again
    assert _on_disk(caches[3]) == [(1, 0), (2, 5), (4, 20)]


def test_a_log_dir_renamed_while_its_batch_is_in_flight_gets_the_checkpoint_at_its_new_place(
        write_files, tmp_path, monkeypatch):
    [cache] = _caches(tmp_path, 1)
    gate = _Gate(monkeypatch)
    old_dir = os.path.dirname(cache.checkpoint.path)

    async def main():
        writing = await _batch_in_flight([cache], gate)
        new_dir = old_dir + ".moved"
        os.rename(old_dir, new_dir)  # what Log.rename_dir does
        cache.checkpoint.path = cache.checkpoint._file.path = os.path.join(new_dir, "leader-epoch-checkpoint")
        gate.open.set()
        await writing

    asyncio.run(main())
    assert _on_disk(cache) == [(1, 0)] and cache.checkpoint.path.startswith(old_dir + ".moved")


class _Channel:
    def __init__(self):
        self.offline = []

    def mark_offline(self, log_dir, message, error=None):
        self.offline.append((log_dir, type(error)))
        return True


def test_batch_failures_are_reported_as_a_direct_write_reports_them(write_files, tmp_path):
    caches = _caches(tmp_path, 4)
    channel = _Channel()
    for cache in caches:
        cache.failure_channel = channel
    os.rmdir(os.path.dirname(caches[1].checkpoint.path))  # the log was deleted meanwhile: only a debug line
    os.mkdir(caches[2].checkpoint.path)  # an I/O error: its log dir goes offline
    open(os.path.join(caches[2].checkpoint.path, "x"), "w").close()
    with batched_checkpoints() as batch:
        for cache in caches:
            cache.assign(1, 0)
    asyncio.run(batch.write_concurrently())
    assert channel.offline == [(str(tmp_path), IsADirectoryError)]
    assert _on_disk(caches[0]) == [(1, 0)] and _on_disk(caches[3]) == [(1, 0)]
    caches[1].failure_channel = None
    os.mkdir(os.path.dirname(caches[1].checkpoint.path))
    caches[1].assign(2, 3)  # a failed batch write leaves the cache writable
    assert _on_disk(caches[1]) == [(1, 0), (2, 3)]


def test_a_cancelled_caller_does_not_stop_the_batch(write_files, tmp_path, monkeypatch):
    caches = _caches(tmp_path, 3)
    gate = _Gate(monkeypatch)

    async def main():
        writing = await _batch_in_flight(caches, gate)
        writing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await writing
        caches[0].assign(2, 1)  # still the batch's: it writes this too
        assert not os.path.exists(caches[0].checkpoint.path)
        gate.open.set()
        await asyncio.gather(*checkpoint_batch._unfinished)

    asyncio.run(main())
    assert [_on_disk(cache) for cache in caches] == [[(1, 0), (2, 1)], [(1, 0)], [(1, 0)]]


def test_a_change_while_another_thread_writes_the_file_is_written_by_that_thread(tmp_path):
    """No batch: the recovery or retention thread writes; the loop's change meanwhile does not write the same
    .tmp, and the writing thread writes it once more."""
    [cache] = _caches(tmp_path, 1)
    real_write = cache.checkpoint.write
    written, started, proceed = [], threading.Event(), threading.Event()

    def slow_write(entries):
        written.append(list(entries))
        if len(written) == 1:
            started.set()
            assert proceed.wait(10)
        real_write(entries)

    cache.checkpoint.write = slow_write
    other = threading.Thread(target=cache.assign, args=(1, 0))
    other.start()
    assert started.wait(10)
    cache.assign(2, 7)  # returns at once: the other thread is the writer
    assert written == [[(1, 0)]] and not os.path.exists(cache.checkpoint.path)
    proceed.set()
    other.join()
    assert written == [[(1, 0)], [(1, 0), (2, 7)]] and _on_disk(cache) == [(1, 0), (2, 7)]


def test_pure_python_forced_uses_the_python_writer():
    code = "from odradek.broker.log import checkpoint_writer as w; print(w.COMPILED)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "ODRADEK_PURE_PYTHON": "1"}).stdout
    assert out.strip() == "False"


def test_the_batch_cancelled_itself_frees_its_caches_only_once_its_writer_is_done(write_files, tmp_path,
                                                                                monkeypatch):
    [cache] = _caches(tmp_path, 1)
    gate = _Gate(monkeypatch)

    async def main():
        with batched_checkpoints() as batch:
            cache.assign(1, 0)
        await_writing = asyncio.ensure_future(batch.write_concurrently())
        await gate.in_flight()
        [rounds] = checkpoint_batch._unfinished
        rounds.cancel()  # what asyncio.run does to the tasks left when it ends
        with pytest.raises(asyncio.CancelledError):
            await await_writing
        cache.assign(2, 1)  # the writer's thread still has the file: only marked stale
        assert not os.path.exists(cache.checkpoint.path)
        gate.open.set()
        for _ in range(10_000):  # until the writer's result reached the loop
            if not cache._writing:
                break
            await asyncio.sleep(0.001)
        cache.assign(3, 2)  # free again: written at once

    asyncio.run(main())
    assert _on_disk(cache) == [(1, 0), (2, 1), (3, 2)]
