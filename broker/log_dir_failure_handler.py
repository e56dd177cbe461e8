"""What the broker does when a log directory goes offline (Kafka 2.8's ReplicaManager.handleLogDirFailure).

The log layer's LogDirFailureChannel reports each failed directory once, from whichever thread hit the error;
this handler takes it to the event loop and there: the replica manager stops the directory's partitions
(they answer KAFKA_STORAGE_ERROR from then on) and the LogManager drops their logs; then, if no directory is
left, the broker halts (Kafka's "Shutdown broker because all log dirs in ... have failed"); otherwise it
writes ``/log_dir_event_notification/log_dir_event_<seq>`` so that the controller asks it which replicas are
offline (LeaderAndIsr answered with KAFKA_STORAGE_ERROR) and moves their leadership to in-sync replicas.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .replica_manager import ReplicaManager

log = logging.getLogger(__name__)

NOTIFY_RETRY_S = 1.0  # ZooKeeper unavailable: the notification is written once it answers again
HALT_ZK_CLOSE_S = 5.0  # at most this long to end our ZooKeeper session before halting


def halt_process(code: int) -> None:
    """Kafka's Exit.halt: no shutdown hooks, the log written out first."""
    logging.shutdown()
    os._exit(code)


class LogDirFailureHandler:
    def __init__(self, replica_manager: "ReplicaManager", broker_id: int, notify_controller: Callable[[], object],
                 end_zk_session: Callable[[], object], halt: Callable[[int], None] = halt_process) -> None:
        self.replica_manager = replica_manager
        self.broker_id = broker_id
        self.notify_controller = notify_controller  # blocking: creates the log dir event znode
        self.end_zk_session = end_zk_session        # blocking: closes the session, so the controller acts now
        self.halt = halt
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task] = set()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Listen to the log manager's failure channel; a directory that failed before (at recovery) has no
        partitions here: the controller learns of them from this broker's LeaderAndIsr answers."""
        self._loop = loop
        self.replica_manager.log_manager.failure_channel.listener = self._from_any_thread

    def _from_any_thread(self, log_dir: str) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.handle, log_dir)

    def handle(self, log_dir: str) -> None:
        rm = self.replica_manager
        gone = rm.handle_log_dir_failure(log_dir)
        live = rm.log_manager.live_log_dirs
        if not live:
            log.critical("Shutdown broker %d because all log dirs in %s have failed", self.broker_id,
                         ", ".join(rm.log_manager.log_dirs))
            self._halt()
            return
        log.warning("Broker %d: log dir %s is offline with %d partitions; still online: %s", self.broker_id,
                    log_dir, len(gone), live)
        assert self._loop is not None
        task = self._loop.create_task(self._notify(log_dir))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _notify(self, log_dir: str) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                await loop.run_in_executor(None, self.notify_controller)
                log.info("Broker %d: told the controller that log dir %s is offline", self.broker_id, log_dir)
                return
            except Exception as exc:
                log.warning("Broker %d: cannot write the log dir event notification (%s); retrying", self.broker_id,
                            exc)
                await asyncio.sleep(NOTIFY_RETRY_S)

    def _halt(self) -> None:
        """Kafka halts here; ending the ZooKeeper session first lets the controller move leadership now rather
        than once the session times out (nothing else is flushed: every directory is offline)."""
        closer = threading.Thread(target=self._end_session_quietly, name="halt-zk-close", daemon=True)
        closer.start()
        closer.join(HALT_ZK_CLOSE_S)
        self.halt(1)

    def _end_session_quietly(self) -> None:
        try:
            self.end_zk_session()
        except Exception:
            log.exception("Cannot close the ZooKeeper session before halting")
