"""The fetcher's side of an incremental fetch session (KIP-227): Kafka 2.8's FetchSessionHandler.

A follower fetching thousands of partitions from one leader would otherwise name every partition in
every request and read every partition of every answer. With a session, the first request (epoch 0)
is full; the leader answers it with a session id; later requests carry that id and epochs 1, 2, ...
and name only the partitions whose fetch parameters changed since they were last sent, plus the ones
to forget; the leader answers only the partitions that changed on its side.

The handler keeps, per partition in the session, the parameters last sent. ``build`` takes the
partitions to fetch this round, their current parameters and the set of partitions whose parameters
may have changed since the last round (the caller tracks that, so that a round costs what changed, not
what is fetched); ``handle_response`` / ``handle_error`` move the session on as Kafka's handler does:
an unknown session starts again from epoch 0 without an id, any other error or a lost connection
closes the session with a full request (the id with epoch 0).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Hashable, Iterable

from ..protocol.errors import FetchSessionIdNotFoundError  # type: ignore[attr-defined]
from .fetch_session import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch

log = logging.getLogger(__name__)


class FetchRequestData:
    """What one request carries: the session fields, the partitions to send (with their parameters) and
    the partitions to forget."""

    __slots__ = ("session_id", "epoch", "to_send", "to_forget")

    def __init__(self, session_id: int, epoch: int, to_send: dict[Hashable, Any], to_forget: list[Hashable]) -> None:
        self.session_id = session_id
        self.epoch = epoch
        self.to_send = to_send
        self.to_forget = to_forget

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


class FetchSessionHandler:
    def __init__(self, name: str = "") -> None:
        self.name = name
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.session: dict[Hashable, Any] = {}   # partition -> parameters the leader holds for it
        self.full_requests = 0
        self.incremental_requests = 0

    @property
    def next_is_full(self) -> bool:
        return self.epoch == INITIAL_EPOCH

    def build(self, wanted: Iterable[Hashable], params: Callable[[Hashable], Any],
              changed: Iterable[Hashable], same_as_last: bool = False) -> FetchRequestData:
        """The next request for the partitions ``wanted`` now (``params(key)`` their parameters);
        ``changed``: partitions whose parameters may differ from what was last sent (the others are
        taken as unchanged); ``same_as_last``: ``wanted`` is the set of the last call, unchanged (nothing
        to forget or add)."""
        wanted = wanted if isinstance(wanted, (set, frozenset)) else set(wanted)
        if self.next_is_full:
            self.session = {key: params(key) for key in wanted}
            self.full_requests += 1
            return FetchRequestData(self.session_id, INITIAL_EPOCH, dict(self.session), [])
        session = self.session
        to_forget = [] if same_as_last else list(session.keys() - wanted)  # set operations, not loops
        for key in to_forget:
            del session[key]
        to_send: dict[Hashable, Any] = {}
        for key in changed:
            if key in wanted and key in session:
                current = params(key)
                if session[key] != current:
                    session[key] = to_send[key] = current
        if not same_as_last and len(session) != len(wanted):
            for key in wanted - session.keys():
                session[key] = to_send[key] = params(key)
        self.incremental_requests += 1
        return FetchRequestData(self.session_id, self.epoch, to_send, to_forget)

    def handle_response(self, request: FetchRequestData, error_code: int, session_id: int) -> bool:
        """Move the session on after an answer; False when the answer is a session error (no partitions)."""
        if error_code:
            log.info("[%s] fetch session %d epoch %d refused with error %d; starting a new session", self.name,
                     request.session_id, request.epoch, error_code)
            if error_code == FetchSessionIdNotFoundError.code:
                self.session_id = INVALID_SESSION_ID
            self.epoch = INITIAL_EPOCH
            return False
        if session_id == INVALID_SESSION_ID:
            # no room for a session on the leader (full), or it closed ours (incremental): full again
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
        elif request.is_full:
            self.session_id, self.epoch = session_id, next_epoch(INITIAL_EPOCH)
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def handle_error(self) -> None:
        """The request got no answer (connection lost, timeout): close the session with a full request."""
        self.epoch = INITIAL_EPOCH
