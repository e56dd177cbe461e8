"""LogDirFailureHandler: a failed dir's partitions stop, then the controller is told, or the broker halts when no
dir is left (Kafka 2.8's ReplicaManager.handleLogDirFailure)."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

from odradek.broker.log.log_dir_failure import LogDirFailureChannel
from odradek.broker.log_dir_failure_handler import LogDirFailureHandler

from .network.helpers import run


class FakeReplicaManager:
    def __init__(self, dirs: list[str]) -> None:
        self.channel = LogDirFailureChannel()
        self.log_manager = SimpleNamespace(failure_channel=self.channel, log_dirs=dirs,
                                           live_log_dirs=list(dirs))
        self.stopped: list[str] = []

    def handle_log_dir_failure(self, log_dir: str) -> list[tuple[str, int]]:
        self.stopped.append(log_dir)
        self.log_manager.live_log_dirs.remove(log_dir)
        return [("t", 0)]


def test_a_failure_on_any_thread_stops_the_dir_and_tells_the_controller_once():
    rm = FakeReplicaManager(["/a", "/b"])
    notified = asyncio.Event()
    halted: list[int] = []

    async def main():
        loop = asyncio.get_running_loop()
        handler = LogDirFailureHandler(rm, 0, lambda: loop.call_soon_threadsafe(notified.set), lambda: None,
                                       halt=halted.append)
        handler.start(loop)
        reporter = threading.Thread(target=lambda: [rm.channel.mark_offline("/a", "disk full") for _ in range(3)])
        reporter.start()
        reporter.join()
        await asyncio.wait_for(notified.wait(), 5)
        assert rm.stopped == ["/a"] and halted == []
    run(main(), timeout=10)


def test_the_broker_halts_when_no_dir_is_left_after_ending_its_session():
    rm = FakeReplicaManager(["/a"])
    halted: list[int] = []
    closed: list[bool] = []

    async def main():
        loop = asyncio.get_running_loop()
        handler = LogDirFailureHandler(rm, 0, lambda: None, lambda: closed.append(True), halt=halted.append)
        handler.start(loop)
        handler.handle("/a")
        assert rm.stopped == ["/a"] and closed == [True] and halted == [1]
    run(main(), timeout=10)
