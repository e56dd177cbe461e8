"""A schema registry process (``odradek-schema-registry``) beside a local cluster: started by
``odradek-cluster start --schema-registry-port``, stopped with the cluster, and used by the tests.

The process is started by module name, so the tools do not import the registry's code (its own layer, with its
own dependencies: the ``schema-registry`` extra)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from .local_cluster import ClusterStartError, ManagedProcess, log_tail

_LISTENING = re.compile(r"Schema registry listening on (\S+)")
STATE_FILE = "schema-registry.json"


class LocalSchemaRegistry:
    def __init__(self, bootstrap_servers: str, log_path: str | os.PathLike, *, port: int = 0,
                 host: str = "127.0.0.1", command_config: str | None = None, extra_args: Sequence[str] = (),
                 python: str | None = None, detach: bool = False) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.log_path = Path(log_path)
        self.port, self.host = port, host
        self.command_config = command_config
        self.extra_args = list(extra_args)
        self.python = python or sys.executable
        self.detach = detach
        self.process: ManagedProcess | None = None
        self.url: str | None = None

    def command(self) -> list[str]:
        command = [self.python, "-m", "odradek.schema_registry.main", "--bootstrap-server", self.bootstrap_servers,
                   "--host", self.host, "--port", str(self.port)]
        if self.command_config:
            command += ["--command-config", self.command_config]
        return command + self.extra_args

    def start(self, timeout: float = 60.0) -> "LocalSchemaRegistry":
        """Start the process and return once it serves (it prints its URL then)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            offset = log.tell()
            popen = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=self.detach)
        self.process = ManagedProcess("schema registry", popen.pid, "odradek.schema_registry.main", popen)
        deadline = time.monotonic() + timeout
        while self.url is None:
            found = _LISTENING.search(log_tail(self.log_path, 200, offset))
            if found:
                self.url = found.group(1)
            elif not self.process.alive() or time.monotonic() > deadline:
                self.process.terminate(5.0)
                raise ClusterStartError(f"the schema registry did not start: {log_tail(self.log_path, 10, offset)}")
            else:
                time.sleep(0.1)
        return self

    def stop(self, timeout: float = 15.0) -> None:
        if self.process is not None:
            self.process.terminate(timeout)

    def kill(self) -> None:
        if self.process is not None:
            self.process.send(9)
            self.process.wait(10.0)

    def save(self, data_dir: Path) -> None:
        assert self.process is not None
        (data_dir / STATE_FILE).write_text(json.dumps({"pid": self.process.pid, "url": self.url,
                                                       "log": str(self.log_path)}))


def attached(data_dir: Path) -> tuple[ManagedProcess, str] | None:
    """The registry ``odradek-cluster start`` left running for this data directory: (process, URL)."""
    try:
        saved = json.loads((data_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return ManagedProcess("schema registry", saved["pid"], "odradek.schema_registry.main"), saved["url"]


def stop_attached(data_dir: Path, timeout: float) -> None:
    found = attached(data_dir)
    if found is not None:
        found[0].terminate(timeout)
        (data_dir / STATE_FILE).unlink(missing_ok=True)
