"""A cleaner worker: runs Cleaner on the tasks the broker sends over a connection, in a process or a thread.

The broker's cleaner thread (log_cleaner.py) talks to its worker over a ``multiprocessing`` connection
(a socket pair): the per-record work happens here, and in the default process mode it holds neither the
broker's event loop nor its GIL. Messages:

    broker -> worker   ("clean", CleanTask, CleanerSettings)   ("abort", task id)   ("stop",)
                       ("go",) answers "throttle"              ("swapped", ok) answers "swap"
    worker -> broker   ("throttle", bytes)   ("swap", CleanedGroup)
                       ("done", task id, end offset, CleanerStats)   ("aborted", task id)
                       ("error", task id, text)

An abort can arrive at any time; it names its task, so a late one for a finished task is ignored. From a
"swap" to its answer the cleaned files are the broker's: an abort that arrives meanwhile takes effect after
the answer (Kafka's cleaner checks for an abort while it copies, never during replaceSegments), and the
worker removes the files only when the broker refused them.
A process worker (worker_process.py) dies with the broker, so it never writes into a log directory that
a restarted broker owns.
"""

from __future__ import annotations

import traceback
from multiprocessing.connection import Connection
from typing import Any

from .cleaner import Cleaner, CleaningAborted
from .task import CleanedGroup, CleanerSettings, CleanTask


class WorkerStopped(Exception):
    """The broker asked the worker to stop, or went away."""


class PipeControl:
    """The Cleaner's ``Control`` over the connection to the broker, for one task."""

    def __init__(self, conn: Connection, task_id: int, throttled: bool) -> None:
        self.conn = conn
        self.task_id = task_id
        self.throttled = throttled
        self.aborted = False  # an abort held back by a swap under way

    def _handle(self, message: tuple, hold_abort: bool = False) -> Any:
        kind = message[0]
        if kind == "abort":
            if message[1] == self.task_id:
                self.aborted = True
                if not hold_abort:
                    raise self.abort_error()
            return None
        if kind == "stop":
            raise WorkerStopped()
        return message

    def _receive(self) -> tuple:
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            raise WorkerStopped() from None

    def _await(self, expected: str, hold_abort: bool = False) -> tuple:
        while True:
            message = self._handle(self._receive(), hold_abort)
            if message is not None and message[0] == expected:
                return message

    def abort_error(self) -> CleaningAborted:
        return CleaningAborted(f"task {self.task_id} aborted by the broker")

    def check_done(self) -> None:
        if self.aborted:
            raise self.abort_error()
        while self.conn.poll():
            self._handle(self._receive())

    def throttle(self, nbytes: int) -> None:
        if self.throttled:
            self.conn.send(("throttle", nbytes))
            self._await("go")

    def swap(self, group: CleanedGroup) -> bool:
        self.conn.send(("swap", group))
        return bool(self._await("swapped", hold_abort=True)[1])


def serve(conn: Connection) -> None:
    """Take tasks until told to stop or the connection closes."""
    cleaners: dict[CleanerSettings, Cleaner] = {}
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message[0] == "stop":
            return
        if message[0] != "clean":
            continue  # a late abort or answer
        task: CleanTask = message[1]
        settings: CleanerSettings = message[2]
        control = PipeControl(conn, task.task_id, settings.throttled)
        try:
            cleaner = cleaners.get(settings)
            if cleaner is None:
                cleaners.clear()
                cleaner = cleaners[settings] = Cleaner(settings, control)
            cleaner.control = control
            end_offset, stats = cleaner.clean(task)
            # an abort held back by the last swap: what was swapped stays, the broker checkpoints nothing
            conn.send(("aborted", task.task_id) if control.aborted else ("done", task.task_id, end_offset, stats))
        except CleaningAborted:
            conn.send(("aborted", task.task_id))
        except WorkerStopped:
            return
        except Exception as exc:  # the broker marks the partition uncleanable and logs this
            text = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
            try:
                conn.send(("error", task.task_id, text))
            except OSError:
                return
