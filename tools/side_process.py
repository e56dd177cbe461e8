"""A Python server started beside a local cluster by module name (the web console, the schema registry).

It owns what both have in common: the process started as ``python -m <module> ...`` with its output in a log
file, the wait until it serves (or the failure, with the log's tail), and the state file in the cluster's
data directory through which a later ``odradek-cluster status``/``stop`` finds it again. Starting by module
name keeps the tools from importing those packages (their own layers, with their own extras)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from .local_cluster import ClusterStartError, ManagedProcess, log_tail


class SideProcess:
    def __init__(self, name: str, module: str, log_path: str | os.PathLike,
                 state_path: str | os.PathLike | None = None) -> None:
        self.name = name
        self.module = module
        self.log_path = Path(log_path)
        self.state_path = Path(state_path) if state_path is not None else None
        self.process: ManagedProcess | None = None
        self._log_offset = 0

    def launch(self, args: Sequence[str], python: str | None = None, detach: bool = False) -> ManagedProcess:
        """Start ``python -m module args``, its output appended to the log (detach: in a session of its own, so
        it outlives the command that started it)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._log_offset = log.tell()
            popen = subprocess.Popen([python or sys.executable, "-m", self.module, *args], stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=detach,
                                     env=dict(os.environ, PYTHONUNBUFFERED="1"))
        self.process = ManagedProcess(self.name, popen.pid, self.module, popen)
        return self.process

    def log_since_launch(self, lines: int = 200) -> str:
        return log_tail(self.log_path, lines, self._log_offset)

    def wait_ready(self, ready: Callable[[], bool], timeout: float) -> None:
        """Return once ``ready()`` is true; if the process exits or ``timeout`` passes first, stop it and raise
        ClusterStartError with the end of its log."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while not ready():
            if not self.process.alive() or time.monotonic() > deadline:
                self.stop(5.0)
                raise ClusterStartError(f"The {self.name} did not start; see {self.log_path}",
                                        self.log_since_launch(10))
            time.sleep(0.1)

    def record(self, **state: Any) -> None:
        """Write the state file (the pid and what ``state`` adds) for later commands to attach to."""
        assert self.process is not None and self.state_path is not None
        self.state_path.write_text(json.dumps({"pid": self.process.pid, **state}) + "\n")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout``; the state file goes with it."""
        if self.process is not None:
            self.process.terminate(timeout)
        if self.state_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.state_path.unlink()

    @classmethod
    def attach(cls, name: str, module: str, log_path: str | os.PathLike,
               state_path: str | os.PathLike) -> tuple["SideProcess", dict[str, Any]] | None:
        """The process a state file records (started by another command) and the state, or None when there is
        no readable state file."""
        try:
            state = json.loads(Path(state_path).read_text())
            side = cls(name, module, log_path, state_path)
            side.process = ManagedProcess(name, int(state["pid"]), module)
        except (OSError, ValueError, KeyError, TypeError):
            return None  # no state file, or not one of ours: nothing to attach to
        return side, state
