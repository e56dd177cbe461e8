"""The broker's end of one cleaner worker (worker.py): start it, hand it a task, serve its requests.

``isolation="process"`` (the default, ``odradek.log.cleaner.isolation``) runs the worker as
``python -m odradek.broker.log.cleaner.worker_process`` on a socket pair; ``"thread"`` runs the same loop on a
thread of the broker (measured in benchmarks/bench_log_cleaner.py: the thread holds the GIL for most of
the cleaning and slows the broker's requests down). The worker starts at the first task, from the
cleaner thread that then owns it, so the kernel ties the process's life to that thread.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from typing import Callable

from .task import CleanedGroup, CleanerSettings, CleanerStats, CleanTask
from .worker import serve

log = logging.getLogger("kafka.log.LogCleaner")

_STOP_TIMEOUT_S = 10.0


class CleanerWorkerError(Exception):
    """The worker failed the task (an unexpected error) or died."""


class WorkerClient:
    def __init__(self, name: str, isolation: str = "process") -> None:
        if isolation not in ("process", "thread"):
            raise ValueError(f"unknown cleaner isolation {isolation!r}: process or thread")
        self.name = name
        self.isolation = isolation
        self._conn: Connection | None = None
        self._process: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._send_lock = threading.Lock()
        self.current_task: int | None = None
        self._abort_before_start: int | None = None  # a task aborted before run() handed it to the worker

    # -- lifecycle --------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._conn is not None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        if self.isolation == "thread":
            ours, theirs = multiprocessing.Pipe()
            self._thread = threading.Thread(target=serve, args=(theirs,), name=f"{self.name}-worker", daemon=True)
            self._thread.start()
        else:
            ours_sock, theirs_sock = socket.socketpair()
            fd = theirs_sock.fileno()
            self._process = subprocess.Popen(
                [sys.executable, "-m", "odradek.broker.log.cleaner.worker_process", str(fd), str(os.getpid())],
                pass_fds=(fd,), stdin=subprocess.DEVNULL, close_fds=True)
            theirs_sock.close()
            ours = Connection(ours_sock.detach())
        self._conn = ours
        log.info("Started %s worker for %s%s", self.isolation, self.name,
                 f" (pid {self._process.pid})" if self._process is not None else "")

    def stop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            with self._send_lock:
                conn.send(("stop",))
        except OSError:
            pass
        if self._process is not None:
            try:
                self._process.wait(_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
        if self._thread is not None:
            self._thread.join(_STOP_TIMEOUT_S)
            self._thread = None
        conn.close()

    def _send(self, message: tuple) -> None:
        assert self._conn is not None
        with self._send_lock:
            self._conn.send(message)

    # -- a task -----------------------------------------------------------------------------------

    def run(self, task: CleanTask, settings: CleanerSettings, throttle: Callable[[int], None],
            swap: Callable[[CleanedGroup], bool]) -> tuple[int, CleanerStats] | None:
        """Clean ``task``; (next first dirty offset, stats), or None when it was aborted."""
        if self._conn is None:
            self.start()
        assert self._conn is not None
        try:
            with self._send_lock:  # an abort() either comes before this (and is seen here) or after "clean"
                if self._abort_before_start == task.task_id:
                    return None
                self.current_task = task.task_id
                self._conn.send(("clean", task, settings))
            while True:
                try:
                    message = self._conn.recv()
                except (EOFError, OSError):
                    self._died()
                    raise CleanerWorkerError(f"the cleaner worker of {self.name} died") from None
                kind = message[0]
                if kind == "throttle":
                    throttle(message[1])
                    self._send(("go",))
                elif kind == "swap":
                    self._send(("swapped", swap(message[1])))
                elif kind == "done" and message[1] == task.task_id:
                    return message[2], message[3]
                elif kind == "aborted" and message[1] == task.task_id:
                    return None
                elif kind == "error" and message[1] == task.task_id:
                    raise CleanerWorkerError(message[2])
        finally:
            with self._send_lock:
                self.current_task = self._abort_before_start = None

    def abort(self, task_id: int) -> None:
        """Ask the worker to give up ``task_id`` (from any thread; ignored if it finished): sent when the
        worker has it, else remembered for run(), which may be about to hand it over."""
        with self._send_lock:
            if self.current_task != task_id:
                self._abort_before_start = task_id
                return
            if self._conn is not None:
                try:
                    self._conn.send(("abort", task_id))
                except OSError:
                    pass

    def _died(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            log.error("The cleaner worker of %s (pid %d) exited with %s", self.name, self._process.pid,
                      self._process.returncode)
            self._process = None
