"""A schema registry process (``odradek-schema-registry``) beside a local cluster: started by
``odradek-cluster start --schema-registry-port``, stopped with the cluster, and used by the tests.

The process is started by module name, so the tools do not import the registry's code (its own layer, with its
own dependencies: the ``schema-registry`` extra)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Sequence

from .local_cluster import ManagedProcess
from .side_process import SideProcess

_LISTENING = re.compile(r"Schema registry listening on (\S+)")
STATE_FILE = "schema-registry.json"
MODULE = "odradek.schema_registry.main"


class LocalSchemaRegistry:
    def __init__(self, bootstrap_servers: str, log_path: str | os.PathLike, *, port: int = 0,
                 host: str = "127.0.0.1", command_config: str | None = None, extra_args: Sequence[str] = (),
                 python: str | None = None, detach: bool = False) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.port, self.host = port, host
        self.command_config = command_config
        self.extra_args = list(extra_args)
        self.python = python
        self.detach = detach
        self.side = SideProcess("schema registry", MODULE, log_path)
        self.url: str | None = None

    @property
    def process(self) -> ManagedProcess | None:
        return self.side.process

    @property
    def log_path(self) -> Path:
        return self.side.log_path

    def arguments(self) -> list[str]:
        args = ["--bootstrap-server", self.bootstrap_servers, "--host", self.host, "--port", str(self.port)]
        if self.command_config:
            args += ["--command-config", self.command_config]
        return args + self.extra_args

    def start(self, timeout: float = 60.0) -> "LocalSchemaRegistry":
        """Start the process and return once it serves (it prints its URL then)."""
        self.side.launch(self.arguments(), self.python, self.detach)
        self.side.wait_ready(self._listening, timeout)
        return self

    def _listening(self) -> bool:
        found = _LISTENING.search(self.side.log_since_launch())
        if found:
            self.url = found.group(1)
        return found is not None

    def stop(self, timeout: float = 15.0) -> None:
        self.side.stop(timeout)

    def kill(self) -> None:
        if self.process is not None:
            self.process.send(9)
            self.process.wait(10.0)

    def save(self, data_dir: Path) -> None:
        self.side.state_path = data_dir / STATE_FILE
        self.side.record(url=self.url, log=str(self.log_path))


def attached(data_dir: Path) -> tuple[ManagedProcess, str] | None:
    """The registry ``odradek-cluster start`` left running for this data directory: (process, URL)."""
    found = _attach(data_dir)
    if found is None:
        return None
    side, state = found
    return side.process, state["url"]


def stop_attached(data_dir: Path, timeout: float) -> None:
    found = _attach(data_dir)
    if found is not None:
        found[0].stop(timeout)


def _attach(data_dir: Path) -> tuple[SideProcess, dict] | None:
    found = SideProcess.attach("schema registry", MODULE, Path(data_dir) / "schema-registry.log",
                               Path(data_dir) / STATE_FILE)
    return found if found is not None and "url" in found[1] else None
