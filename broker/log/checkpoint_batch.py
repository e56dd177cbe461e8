"""Leader epoch checkpoints written together: ``batched_checkpoints()`` and ``CheckpointBatch``.

A LeaderAndIsr of thousands of partitions, or a fetch response after a leader change, changes thousands of
leader epoch caches. Those callers open ``batched_checkpoints()``: a cache changed inside it only joins the
batch, and ``write_concurrently()`` then writes them all before the caller goes on (answers the controller,
fetches again). The texts are made on the caller's thread; the files are written by ``checkpoint_writer``
(on pthreads without the GIL when compiled) in the default executor, so the event loop stays free.

One writer per file at a time (they would share its ``.tmp``): a cache in an in-flight batch is claimed by
it, and a change made meanwhile, by any thread, only marks the cache stale; the batch then writes it once
more with its latest entries (see ``LeaderEpochFileCache.claim_writer``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
from typing import TYPE_CHECKING, Iterator

from . import checkpoint_writer
from .log_dir_failure import parent_log_dir

if TYPE_CHECKING:
    from .leader_epoch_cache import LeaderEpochFileCache

log = logging.getLogger(__name__)

_unfinished: set[asyncio.Task] = set()  # batches whose caller was cancelled: they finish writing regardless


class CheckpointBatch:
    """Leader epoch caches changed inside ``batched_checkpoints()``, to be written together."""

    def __init__(self) -> None:
        self.caches: dict[int, LeaderEpochFileCache] = {}

    def __len__(self) -> int:
        return len(self.caches)

    def add(self, cache: LeaderEpochFileCache) -> None:
        self.caches[id(cache)] = cache

    def write(self) -> None:
        """Write them one after another on this thread."""
        for cache in self._take():
            try:
                cache.write_checkpoint()
            except OSError as e:
                report_failure(cache, e)

    async def write_concurrently(self) -> None:
        """Write them several at once off the event loop; returns when all are written, each with its
        latest entries, except those another writer (a thread, an earlier batch) had in hand: that one writes
        them again when done, and this does not wait for it. Cancelling the caller does not stop the writing
        (it finishes in the background)."""
        caches = [cache for cache in self._take() if cache.claim_writer()]  # the others: their writer rewrites
        if not caches:
            return
        task = asyncio.ensure_future(_write_rounds(caches))
        _unfinished.add(task)
        task.add_done_callback(_unfinished.discard)
        await asyncio.shield(task)

    def _take(self) -> list[LeaderEpochFileCache]:
        caches, self.caches = list(self.caches.values()), {}
        return caches


async def _write_rounds(caches: list[LeaderEpochFileCache]) -> None:
    """Write the claimed ``caches``, then again those changed meanwhile, until none was; releases them."""
    loop = asyncio.get_running_loop()
    while caches:
        items = [(cache.checkpoint.path, cache.checkpoint_data()) for cache in caches]
        writing = loop.run_in_executor(None, checkpoint_writer.write_files, items, checkpoint_writer.WRITER_THREADS)
        try:
            failures = await asyncio.shield(writing)
        except BaseException:  # the writer failed (not a file), or this task was cancelled (the loop closing)
            # the caches are free again only once the writer's thread is done with their .tmp
            writing.add_done_callback(lambda _, caches=caches: [cache.abandon_writer() for cache in caches])
            raise
        for index, error in failures:
            path = items[index][0]
            report_failure(caches[index], OSError(error, os.strerror(error), path + ".tmp"))
        caches = [cache for cache, (path, _) in zip(caches, items) if cache.release_writer(path)]


def report_failure(cache: LeaderEpochFileCache, error: OSError) -> None:
    """A batched write of ``cache`` failed: nobody waits on it, so the log dir is marked offline here."""
    path = cache.checkpoint.path
    if isinstance(error, FileNotFoundError):  # the log was deleted (its directory renamed or removed) meanwhile
        log.debug("leader epoch checkpoint %s: directory gone", path)
        return
    channel = cache.failure_channel
    if channel is None:
        log.error("cannot write the leader epoch checkpoint %s", path, exc_info=error)
    else:
        channel.mark_offline(parent_log_dir(os.path.dirname(path)),
                             f"Error while writing the leader epoch checkpoint {path}", error)


@contextlib.contextmanager
def batched_checkpoints() -> Iterator[CheckpointBatch]:
    """Within the block (this task or thread only: a context variable), changed caches join the batch
    instead of writing; the caller must write the batch afterwards."""
    batch = CheckpointBatch()
    token = current_batch.set(batch)
    try:
        yield batch
    finally:
        current_batch.reset(token)


current_batch: contextvars.ContextVar[CheckpointBatch | None] = contextvars.ContextVar(
    "leader_epoch_checkpoint_batch", default=None)
