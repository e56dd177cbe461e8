"""Incremental fetch sessions (KIP-227): Kafka 2.8's FetchSession.scala, in our terms.

A fetcher that sends session id 0 with epoch 0 asks for a session. The broker answers the full
fetch and, if the cache has (or can make) room, hands back a session id; the fetcher's next
requests carry that id and epochs 1, 2, ... and name only the partitions whose fetch parameters
changed (plus ``forgotten_topics_data`` to drop some). The broker reads every partition of the
session from the offsets it cached and answers only the partitions that changed: new records, a new
high watermark, last stable offset or log start offset, or an error.

Epoch -1 is sessionless (every pre-v7 request, and librdkafka always): the request names every
partition and every one is answered. A full request naming a session closes it.

The cache keeps ``max.incremental.fetch.session.cache.slots`` sessions. When full, a new session
may evict (Kafka's tryEvict): first any session unused for ``EVICTION_MS``; otherwise the least
valuable evictable session if the new one is worth more: follower (privileged) sessions are worth
more than consumer ones, then bigger sessions more than smaller. A new follower session may evict
any consumer session and any session older than ``EVICTION_MS``; a new consumer session only
sessions older than ``EVICTION_MS`` (ages as of each session's last use).

Everything runs on the broker's event loop: no locks. This module knows nothing of the wire
format: contexts take ``FetchSpec``s and hand back ``(topic, partition), result`` pairs.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any, Callable, Collection, Iterable, Iterator, Mapping

from ..protocol.errors import (  # type: ignore[attr-defined]
    FetchSessionIdNotFoundError,
    InvalidFetchSessionEpochError,
)
from .delayed_ops import FetchSpec

log = logging.getLogger(__name__)

Key = tuple[str, int]
Specs = Collection[FetchSpec]  # a list, or a session's partitions walked lazily (SessionSpecs)

INVALID_SESSION_ID = 0   # "no session", in requests and responses
INITIAL_EPOCH = 0        # create (or re-create) a session
FINAL_EPOCH = -1         # sessionless: close any session named, create none
MAX_EPOCH = 2**31 - 1
# Kafka 2.8's KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS; a constant there, not a config key.
EVICTION_MS = 120_000


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: sessionless stays sessionless, the epoch wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == MAX_EPOCH:
        return 1
    return epoch + 1


_SESSION_KEY_TAG = "fetch-session"


def session_watch_key(session_id: int) -> tuple[str, int]:
    """The purgatory key a session's parked fetches wait under."""
    return (_SESSION_KEY_TAG, session_id)


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


class CachedPartition:
    """One partition of a session: the fetcher's last request parameters and what it was last told."""

    __slots__ = ("spec", "high_watermark", "last_stable_offset", "log_start_offset")

    def __init__(self, spec: FetchSpec, result: Any = None) -> None:
        self.spec = spec
        # -1 until answered (Kafka's INVALID_HIGH_WATERMARK): a partition added to a session is
        # always in the next response.
        self.high_watermark = result.high_watermark if result is not None else -1
        self.last_stable_offset = result.last_stable_offset if result is not None else -1
        self.log_start_offset = result.log_start_offset if result is not None else -1

    def must_respond(self, result: Any, update: bool = True) -> bool:
        """Kafka's maybeUpdateResponseData: does the fetcher need to hear about this partition?

        Kafka 2.8 compares the high watermark and log start offset only; we also compare the last
        stable offset, so a read_committed fetcher hears of a commit that moved nothing else.
        """
        respond = bool(result.records)
        if self.high_watermark != result.high_watermark:
            respond = True
            if update:
                self.high_watermark = result.high_watermark
        if self.last_stable_offset != result.last_stable_offset:
            respond = True
            if update:
                self.last_stable_offset = result.last_stable_offset
        if self.log_start_offset != result.log_start_offset:
            respond = True
            if update:
                self.log_start_offset = result.log_start_offset
        if result.error_code:
            # Forget the high watermark so the partition is sent again once the error is gone.
            respond = True
            if update:
                self.high_watermark = -1
        # A follower must hear of a diverging epoch to truncate (Fetch v12 results carry it), a consumer of
        # its preferred read replica (KIP-392).
        if getattr(result, "diverging_epoch", None) is not None or getattr(result, "preferred_read_replica", -1) >= 0:
            respond = True
        return respond


class FetchSession:
    __slots__ = ("id", "privileged", "partitions", "creation_ms", "last_used_ms", "epoch", "cached_size",
                 "seen_seq", "pending", "full_read_ms", "sweep")

    def __init__(self, session_id: int, privileged: bool, partitions: dict[Key, CachedPartition],
                 now: int, epoch: int) -> None:
        self.id = session_id
        self.privileged = privileged   # created by a follower
        # Insertion order is the read order; answered partitions move to the end so that, under
        # max_bytes, partitions take turns at the front (Kafka's ImplicitLinkedHashCollection).
        self.partitions = partitions
        self.creation_ms = now
        self.last_used_ms = now
        self.epoch = epoch             # the epoch the fetcher's next request must carry
        self.cached_size = -1          # size when last touched: what the eviction order sees
        # What the next incremental fetch must read besides the partitions it names (see ChangeSource):
        # changes after ``seen_seq``, and ``pending`` partitions (an error, or records held back).
        self.seen_seq = 0
        self.pending: set[Key] = set()
        self.full_read_ms = now
        self.sweep: list[Key] = []     # what is left of the current read of the whole session

    def next_sweep_slice(self, now: int) -> list[Key]:
        """The partitions of the whole-session read (every FULL_READ_MS) that this fetch reads besides the
        changes: FULL_READ_SLICE at a time until the pass is done."""
        if not self.sweep and now - self.full_read_ms >= FULL_READ_MS:
            self.sweep = list(self.partitions)
            self.full_read_ms = now
            self.pending &= self.partitions.keys()  # partitions forgotten since they were held back
        taken = self.sweep[-FULL_READ_SLICE:]
        del self.sweep[-FULL_READ_SLICE:]
        return taken

    def note_answered(self, results: Mapping[Key, Any], seq: int) -> None:
        """After an answer built from ``results`` read at change ``seq``: what later fetches must read again."""
        self.seen_seq = seq
        for key, result in results.items():
            if result.error_code or getattr(result, "withheld", False):
                self.pending.add(key)
            else:
                self.pending.discard(key)

    def __len__(self) -> int:
        return len(self.partitions)

    def evictable_key(self) -> tuple[bool, int, int]:
        """Kafka's EvictableKey: the smallest is the least valuable session."""
        return (self.privileged, self.cached_size, self.id)

    def update(self, specs: Mapping[Key, FetchSpec], forgotten: Iterable[Key]
               ) -> tuple[list[Key], list[Key], list[Key]]:
        """Apply an incremental request: new partitions are added, named ones take the new
        parameters, forgotten ones are dropped. Returns (added, updated, removed)."""
        added, updated, removed = [], [], []
        for key, spec in specs.items():
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = CachedPartition(spec)
                added.append(key)
            else:
                cached.spec = spec
                updated.append(key)
        for key in forgotten:
            if self.partitions.pop(key, None) is not None:
                removed.append(key)
        return added, updated, removed

    def __repr__(self) -> str:
        return (f"FetchSession(id={self.id}, privileged={self.privileged}, partitions={len(self.partitions)}, "
                f"epoch={self.epoch})")


class FetchSessionCache:
    """Kafka's FetchSessionCache. Eviction candidates are found by a scan over at most
    ``max_entries`` sessions, and only when the cache is full and a fetcher asks for a session."""

    def __init__(self, max_entries: int = 1000, eviction_ms: int = EVICTION_MS,
                 rng: random.Random | None = None) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self._rng = rng or random.Random()
        self._sessions: dict[int, FetchSession] = {}
        # Least recently used first: touch() re-inserts, and the clock never goes back.
        self._last_used: dict[int, FetchSession] = {}
        self._evictable_by_all: dict[int, FetchSession] = {}
        self._evictable_by_privileged: dict[int, FetchSession] = {}
        self.total_partitions = 0
        self.evictions = 0
        # partition -> the sessions holding it: a session's parked fetch waits under the session's own key
        # (one purgatory watch, not one per partition) and a change of the partition wakes it
        self._sessions_of: dict[Key, set[int]] = {}

    def watch_keys_of(self, key: Key) -> list[tuple[str, int]]:
        """The purgatory keys of the sessions holding partition ``key``."""
        holders = self._sessions_of.get(key)  # asked for every partition of every append: no call per session
        return [(_SESSION_KEY_TAG, sid) for sid in holders] if holders else []

    def reindex(self, session: FetchSession, added: Iterable[Key], removed: Iterable[Key]) -> None:
        for key in added:
            self._sessions_of.setdefault(key, set()).add(session.id)
        for key in removed:
            holders = self._sessions_of.get(key)
            if holders is not None:
                holders.discard(session.id)
                if not holders:
                    del self._sessions_of[key]

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def new_session_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, MAX_EPOCH - 1)
            if session_id not in self._sessions:
                return session_id

    def maybe_create_session(self, now: int, privileged: bool, size: int,
                             create_partitions: Callable[[], dict[Key, CachedPartition]]) -> int:
        """A new session's id, or INVALID_SESSION_ID when there is no room and nothing to evict."""
        if len(self._sessions) >= self.max_entries and not self.try_evict(privileged, (privileged, size, 0), now):
            log.debug("No fetch session created for privileged=%s, size=%d", privileged, size)
            return INVALID_SESSION_ID
        session = FetchSession(self.new_session_id(), privileged, create_partitions(), now,
                               next_epoch(INITIAL_EPOCH))
        self._sessions[session.id] = session
        self.reindex(session, session.partitions, ())
        self.touch(session, now)
        log.debug("Created %r", session)
        return session.id

    def try_evict(self, privileged: bool, key: tuple[bool, int, int], now: int) -> bool:
        """Kafka's tryEvict: a stale session first, else the least valuable evictable one if
        ``key`` (the new session's) is worth at least as much."""
        oldest = next(iter(self._last_used.values()), None)
        if oldest is None:
            return False
        if now - oldest.last_used_ms > self.eviction_ms:
            log.debug("Evicting stale %r", oldest)
            self.remove(oldest)
            self.evictions += 1
            return True
        candidates = self._evictable_by_privileged if privileged else self._evictable_by_all
        if not candidates:
            return False
        victim = min(candidates.values(), key=FetchSession.evictable_key)
        if key < victim.evictable_key():
            return False
        log.debug("Evicting %r for a session of key %s", victim, key)
        self.remove(victim)
        self.evictions += 1
        return True

    def remove(self, session: FetchSession | int) -> FetchSession | None:
        found = self._sessions.pop(session if isinstance(session, int) else session.id, None)
        if found is None:
            return None
        self.reindex(found, (), found.partitions)
        self._last_used.pop(found.id, None)
        self._evictable_by_all.pop(found.id, None)
        self._evictable_by_privileged.pop(found.id, None)
        self.total_partitions -= max(found.cached_size, 0)
        return found

    def touch(self, session: FetchSession, now: int) -> None:
        """Mark the session used now and re-file it under its current size."""
        self._last_used.pop(session.id, None)
        session.last_used_ms = now
        self._last_used[session.id] = session
        if session.cached_size != -1:
            self.total_partitions -= session.cached_size
        session.cached_size = len(session)
        self.total_partitions += session.cached_size
        old_enough = now - session.creation_ms > self.eviction_ms
        if not session.privileged or old_enough:
            self._evictable_by_privileged[session.id] = session
        else:
            self._evictable_by_privileged.pop(session.id, None)
        if old_enough:
            self._evictable_by_all[session.id] = session


class FetchAnswer:
    """What a context answers: a top-level error, the session id to send, and the partitions."""

    __slots__ = ("error_code", "session_id", "partitions")

    def __init__(self, error_code: int, session_id: int, partitions: list[tuple[Key, Any]]) -> None:
        self.error_code = error_code
        self.session_id = session_id
        self.partitions = partitions


class ChangeSource:
    """What the replica manager tells fetch sessions: a sequence number that grows with every change a
    fetcher may need to hear of (records, high watermark, log start offset, leadership) and the
    partitions changed after a given number. An incremental fetch reads those (plus what it names and
    what was held back), not its whole session, so an idle partition costs nothing per fetch; every
    ``FULL_READ_MS`` it reads the whole session once, a safety net for a change nobody noted."""

    change_seq = 0

    def changed_since(self, seq: int) -> Iterable[Key]:
        return ()


# Kafka reads every partition of a session on every fetch; an incremental fetch here reads what changed,
# and the whole session this often, FULL_READ_SLICE partitions per fetch (a follower session of 3,333
# partitions read at once held the leader's event loop 40-60 ms).
FULL_READ_MS = 30_000
FULL_READ_SLICE = 500


class FetchContext:
    """How one Fetch request is served: which partitions to wait on, which to read, which results to send.

    The Fetch handler asks it in one pass: ``refuse`` (the partitions the fetcher may not read), then the
    replica manager reads ``specs`` / ``to_read``, then ``answer`` (or ``preview`` and ``throttled_answer``
    under a client quota) says what to send. Subclasses give the session kind's ``_specs``, ``_to_read``,
    ``_answer`` and ``_preview``; the refused partitions are kept out of reads and put into answers here."""

    previous_fetch_ms: int | None = None  # an incremental session's previous fetch (see FetchParams)
    watch_keys: list[Any] | None = None    # a session's purgatory key (None: one per partition)
    spec_of: Callable[[Key], FetchSpec | None] | None = None
    refused: Mapping[Key, Any] = {}        # answered as they are, never read (not authorized)

    def refuse(self, refused: Mapping[Key, Any]) -> None:
        """Partitions the fetcher may not read: left out of every read, answered with these results."""
        self.refused = refused

    def specs(self) -> Specs:
        """The partitions the fetch waits on (and the purgatory watches)."""
        return self._readable(self._specs())

    def to_read(self) -> Specs:
        """The partitions worth reading now (asked again when a parked fetch completes)."""
        return self._readable(self._to_read())

    def answer(self, results: Mapping[Key, Any]) -> FetchAnswer:
        """What to send for the partitions read, and the session moved on accordingly."""
        return self._answer({**results, **self.refused} if self.refused else results)

    def preview(self, results: Mapping[Key, Any]) -> FetchAnswer:
        """What ``answer`` would send, without touching the session (Kafka's getResponseSize sizes it)."""
        return self._preview({**results, **self.refused} if self.refused else results)

    def _readable(self, specs: Specs) -> Specs:
        refused = self.refused
        return specs if not refused else [s for s in specs if (s.topic, s.partition) not in refused]

    def _specs(self) -> Specs:
        raise NotImplementedError

    def _to_read(self) -> Specs:
        return self._specs()

    def _answer(self, results: Mapping[Key, Any]) -> FetchAnswer:
        raise NotImplementedError

    def _preview(self, results: Mapping[Key, Any]) -> FetchAnswer:
        return self._answer(results)

    def throttled_answer(self) -> FetchAnswer:
        """The empty answer of a fetch throttled by a client quota (Kafka's getThrottledResponse): no
        partitions, no session id, and the session, if any, untouched."""
        return FetchAnswer(0, INVALID_SESSION_ID, [])


class SessionErrorContext(FetchContext):
    """An unknown session or a wrong epoch: nothing is read; the error is the whole answer."""

    def __init__(self, error_code: int) -> None:
        self.error_code = error_code

    def _specs(self) -> list[FetchSpec]:
        return []

    def _answer(self, results: Mapping[Key, Any]) -> FetchAnswer:
        return FetchAnswer(self.error_code, INVALID_SESSION_ID, [])


class SessionlessFetchContext(FetchContext):
    def __init__(self, fetch_data: dict[Key, FetchSpec]) -> None:
        self.fetch_data = fetch_data

    def _specs(self) -> list[FetchSpec]:
        return list(self.fetch_data.values())

    def _answer(self, results: Mapping[Key, Any]) -> FetchAnswer:
        return FetchAnswer(0, INVALID_SESSION_ID, [(key, results[key]) for key in self.fetch_data])


class FullFetchContext(SessionlessFetchContext):
    """Epoch 0: answer every partition, and cache them as a new session if there is room."""

    def __init__(self, cache: FetchSessionCache, fetch_data: dict[Key, FetchSpec], privileged: bool,
                 clock: Callable[[], int], changes: ChangeSource) -> None:
        super().__init__(fetch_data)
        self.cache = cache
        self.privileged = privileged
        self.clock = clock
        self.changes = changes
        self._read_seq = 0

    def _to_read(self) -> list[FetchSpec]:
        self._read_seq = self.changes.change_seq
        return self._specs()

    def _answer(self, results: Mapping[Key, Any]) -> FetchAnswer:
        def create_partitions() -> dict[Key, CachedPartition]:
            return {key: CachedPartition(spec, results[key]) for key, spec in self.fetch_data.items()}
        now = self.clock()
        session_id = self.cache.maybe_create_session(now, self.privileged, len(self.fetch_data), create_partitions)
        session = self.cache.get(session_id)
        if session is not None:
            session.note_answered(results, self._read_seq)  # a full fetch read the whole session
        return FetchAnswer(0, session_id, [(key, results[key]) for key in self.fetch_data])

    def _preview(self, results: Mapping[Key, Any]) -> FetchAnswer:
        return SessionlessFetchContext._answer(self, results)


class IncrementalFetchContext(FetchContext):
    """Epoch > 0 on a known session: read the partitions that may have changed, answer the changed ones."""

    def __init__(self, session: FetchSession, request_epoch: int, named: Iterable[Key], changes: ChangeSource,
                 clock: Callable[[], int], previous_fetch_ms: int) -> None:
        self.session = session
        self.expected_epoch = next_epoch(request_epoch)
        self.named = list(named)       # added or updated by this request: always read
        self.changes = changes
        self.clock = clock
        self.previous_fetch_ms = previous_fetch_ms
        self.watch_keys = [session_watch_key(session.id)]
        self._read_seq = 0

    def spec_of(self, key: Key) -> FetchSpec | None:  # type: ignore[override]
        cached = self.session.partitions.get(key)
        return None if cached is None else cached.spec

    def _specs(self) -> "SessionSpecs":
        return SessionSpecs(self.session)

    def _to_read(self) -> Specs:
        session = self.session
        self._read_seq = self.changes.change_seq
        partitions = session.partitions
        # Held-back partitions first, those that just got records last: under max_bytes they take turns
        # (Kafka moves answered partitions to the back of the session for the same reason).
        keys = dict.fromkeys(session.pending)
        keys.update(dict.fromkeys(self.changes.changed_since(session.seen_seq)))
        keys.update(dict.fromkeys(self.named))
        keys.update(dict.fromkeys(session.next_sweep_slice(self.clock())))
        return [partitions[key].spec for key in keys if key in partitions]

    def _answer(self, results: Mapping[Key, Any]) -> FetchAnswer:
        session = self.session
        if session.epoch != self.expected_epoch:
            # Another request of this session went through while this one waited in the purgatory.
            log.info("Fetch session %d expected epoch %d but is at %d: a duplicate request?",
                     session.id, self.expected_epoch, session.epoch)
            return FetchAnswer(InvalidFetchSessionEpochError.code, session.id, [])
        changed = []
        partitions = session.partitions
        for key, result in results.items():
            cached = partitions.get(key)
            if cached is None:  # forgotten by a later request while this one waited
                continue
            if cached.must_respond(result):
                changed.append((key, result))
                partitions[key] = partitions.pop(key)  # to the back of the queue (the full reads' order)
        session.note_answered({k: r for k, r in results.items() if k in partitions}, self._read_seq)
        return FetchAnswer(0, session.id, changed)

    def _preview(self, results: Mapping[Key, Any]) -> FetchAnswer:
        session = self.session
        if session.epoch != self.expected_epoch:
            return FetchAnswer(InvalidFetchSessionEpochError.code, session.id, [])
        partitions = session.partitions
        return FetchAnswer(0, session.id, [(key, result) for key, result in results.items()
                                           if key in partitions and partitions[key].must_respond(result, update=False)])

    def throttled_answer(self) -> FetchAnswer:
        """The session keeps its (already advanced) epoch, so the fetcher's next request goes on with it."""
        if self.session.epoch != self.expected_epoch:
            return FetchAnswer(InvalidFetchSessionEpochError.code, self.session.id, [])
        return FetchAnswer(0, self.session.id, [])


class SessionSpecs:
    """A session's partitions as FetchSpecs, walked only when someone walks them (a parked fetch checking every
    partition): a follower's session of thousands is not copied into a list on every fetch."""

    __slots__ = ("session",)

    def __init__(self, session: FetchSession) -> None:
        self.session = session

    def __len__(self) -> int:
        return len(self.session.partitions)

    def __iter__(self) -> Iterator[FetchSpec]:
        return (cached.spec for cached in list(self.session.partitions.values()))


class FetchManager:
    """Kafka's FetchManager.newContext: which kind of context a request's session fields ask for."""

    def __init__(self, cache: FetchSessionCache, clock: Callable[[], int] = _now_ms,
                 changes: ChangeSource | None = None) -> None:
        self.cache = cache
        self.clock = clock
        self.changes = changes if changes is not None else ChangeSource()

    def new_context(self, session_id: int, epoch: int, specs: Iterable[FetchSpec], forgotten: Iterable[Key],
                    is_follower: bool) -> FetchContext:
        fetch_data = {(s.topic, s.partition): s for s in specs}
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID and self.cache.remove(session_id) is not None:
                log.debug("Full fetch closed fetch session %d", session_id)
            if epoch == FINAL_EPOCH:
                return SessionlessFetchContext(fetch_data)
            return FullFetchContext(self.cache, fetch_data, is_follower, self.clock, self.changes)
        session = self.cache.get(session_id)
        if session is None:
            return SessionErrorContext(FetchSessionIdNotFoundError.code)
        if session.epoch != epoch:
            log.debug("Fetch session %d expected epoch %d, got %d", session_id, session.epoch, epoch)
            return SessionErrorContext(InvalidFetchSessionEpochError.code)
        added, updated, removed = session.update(fetch_data, forgotten)
        self.cache.reindex(session, added, removed)
        if not session.partitions:
            # Every partition forgotten: the session ends and this request is answered sessionless.
            self.cache.remove(session)
            return SessionlessFetchContext(fetch_data)
        previous_fetch_ms = session.last_used_ms
        self.cache.touch(session, self.clock())
        session.epoch = next_epoch(session.epoch)
        return IncrementalFetchContext(session, epoch, added + updated, self.changes, self.clock, previous_fetch_ms)
