"""ZooKeeper reads and writes by the thousand, for KafkaZkClient (Kafka 1.1's asynchronous bulk requests).

kazoo sends one request and reads one response per turn of its connection loop, in Python, on its own
thread: a few thousand requests a second however many are outstanding. The controller reads and writes
one znode per partition, so with tens of thousands of partitions that loop, not ZooKeeper, is the limit.
Two ZooKeeper requests carry many operations in one round trip:

- ``multiRead`` (ZooKeeper 3.6+, op code 22): many getData in one request, each answered on its own (a
  missing znode fails only its own read). kazoo does not know it; ``MultiRead`` is the request class it
  needs (its wire format is the multi's: a MultiHeader before each operation and after the last). A
  server older than 3.6 would not understand it, so ``supports_multi_read`` asks the server's version
  first (the ``srvr`` four-letter word) and callers fall back to pipelined reads.
- ``multi`` (a transaction): many writes in one request, all or none. A partition state write is
  conditional on its znode version; when one of a chunk fails its version check, the others are
  submitted again without it (``commit_chunks``), so a chunk costs one more round per conflict.

This module and zk_client.py are the only ones that import kazoo.
"""

from __future__ import annotations

import logging
import re
from collections import namedtuple
from typing import Any, Callable, Hashable, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS, NoNodeError, RolledBackError, RuntimeInconsistency
from kazoo.protocol.serialization import (GetData, MultiHeader, ZnodeStat, int_struct, multiheader_struct,
                                          read_buffer, stat_struct, write_string)

log = logging.getLogger(__name__)

CHUNK = 500                 # operations per multi / multiRead request (well under ZooKeeper's 1 MiB packets)
PIPELINED_BELOW = 8         # fewer reads than this go as plain pipelined getData
MAX_ROUNDS = 4              # a chunk still failing after this many rounds is written one operation at a time


class MultiRead(namedtuple("MultiRead", "paths")):
    """ZooKeeper 3.6's multiRead of getData operations, as a kazoo request."""
    type = 22

    def serialize(self) -> bytearray:
        b = bytearray()
        for path in self.paths:
            b.extend(MultiHeader(GetData.type, False, -1).serialize())
            b.extend(write_string(path))
            b.append(0)  # no watch
        return b + multiheader_struct.pack(-1, True, -1)

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> list[Any]:
        """Per path (data, ZnodeStat), or the kazoo exception of its error."""
        results: list[Any] = []
        header, offset = MultiHeader.deserialize(data, offset)
        while not header.done:
            if header.type == GetData.type:
                value, offset = read_buffer(data, offset)
                results.append((value, ZnodeStat._make(stat_struct.unpack_from(data, offset))))
                offset += stat_struct.size
            else:  # -1: an error result
                code = int_struct.unpack_from(data, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[code]())
            header, offset = MultiHeader.deserialize(data, offset)
        return results


def supports_multi_read(zk: KazooClient) -> bool:
    """Is the server ZooKeeper 3.6 or later? False when it cannot tell (four-letter words disabled)."""
    try:
        first = zk.command(b"srvr").splitlines()[0]
    except Exception as e:  # noqa: BLE001 - any failure means "do not use it"
        log.info("ZooKeeper's version is unknown (%s): reading znodes one request each", e)
        return False
    found = re.search(r"version: (\d+)\.(\d+)", first)
    supported = found is not None and (int(found.group(1)), int(found.group(2))) >= (3, 6)
    log.info("%s: %s", first.strip(), "multiRead in use" if supported else "no multiRead (before 3.6)")
    return supported


def read_many(zk: KazooClient, paths: dict[Hashable, str], multi_read: bool) -> dict[Hashable, tuple[bytes, Any]]:
    """key -> (data, stat) for the paths that exist; other errors are raised (kazoo's exceptions)."""
    keys = list(paths)
    found: dict[Hashable, tuple[bytes, Any]] = {}
    if not multi_read or len(keys) < PIPELINED_BELOW:
        pending = [(key, zk.get_async(paths[key])) for key in keys]
        for key, result in pending:
            try:
                found[key] = result.get()
            except NoNodeError:
                continue
        return found
    chroot = zk.chroot or ""
    pending_chunks = []
    for i in range(0, len(keys), CHUNK):
        chunk = keys[i:i + CHUNK]
        result = zk.handler.async_result()
        zk._call(MultiRead([chroot + paths[key] for key in chunk]), result)
        pending_chunks.append((chunk, result))
    for chunk, result in pending_chunks:
        for key, answer in zip(chunk, result.get()):
            if isinstance(answer, NoNodeError):
                continue
            if isinstance(answer, Exception):
                raise answer
            found[key] = answer
    return found


Op = Callable[[Any], None]  # adds an item's operations to a kazoo transaction


def commit_chunks(zk: KazooClient, items: Sequence[tuple[Hashable, Op, int]], prefix: Sequence[Op] = (),
                  ) -> tuple[dict[Hashable, Any], dict[Hashable, Exception], Exception | None]:
    """Commit ``items`` (key, adds its operations, how many) in multis of about CHUNK operations, each starting
    with the ``prefix`` operations (a version check). Returns (key -> result of its last operation, key ->
    error of a failed item, the error of a failed prefix operation or None). A failed item drops out and the
    rest of its chunk is committed again; a failed prefix stops everything (the caller says what it means)."""
    done: dict[Hashable, Any] = {}
    failed: dict[Hashable, Exception] = {}
    per_chunk = max(1, CHUNK // max(1, max((n for _, _, n in items), default=1)))
    chunks = [list(items[i:i + per_chunk]) for i in range(0, len(items), per_chunk)]
    for _ in range(MAX_ROUNDS):
        pending = []
        for chunk in chunks:
            tx = zk.transaction()
            for op in prefix:
                op(tx)
            for _, op, _ in chunk:
                op(tx)
            pending.append((chunk, tx.commit_async()))
        chunks = []
        for chunk, result in pending:
            results = result.get()
            failure = next(((i, r) for i, r in enumerate(results) if isinstance(r, Exception)
                            and not isinstance(r, (RolledBackError, RuntimeInconsistency))), None)
            position = len(prefix)
            if failure is None:
                for key, _, n in chunk:
                    position += n
                    done[key] = results[position - 1]
                continue
            index, error = failure
            if index < len(prefix):
                return done, failed, error
            for item in chunk:
                position += item[2]
                if index < position:
                    failed[item[0]] = error
                    break
            rest = [item for item in chunk if item[0] not in failed]
            if rest:
                chunks.append(rest)
        if not chunks:
            return done, failed, None
    # still conflicting after MAX_ROUNDS: one multi per item, all at once
    pending = []
    for chunk in chunks:
        for key, op, _ in chunk:
            tx = zk.transaction()
            for p in prefix:
                p(tx)
            op(tx)
            pending.append((key, tx.commit_async()))
    moved: Exception | None = None
    for key, result in pending:
        results = result.get()
        errors = [r for r in results if isinstance(r, Exception)
                  and not isinstance(r, (RolledBackError, RuntimeInconsistency))]
        if prefix and errors and errors[0] is results[0]:
            moved = results[0]
        elif errors:
            failed[key] = errors[0]
        else:
            done[key] = results[-1]
    return done, failed, moved
