"""The web console (``odradek-console``) as a background process of a local cluster: ``odradek-cluster start
--console-port PORT`` starts it beside the brokers, ``status`` shows it, ``stop`` stops it first.

It is a process of its own (an admin client of the cluster), recorded in ``DATA_DIR/console.json`` apart
from cluster.json, so a cluster started without it is unchanged. It is started as
``python -m odradek.console.server`` (tools do not import the console package).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

from .local_cluster import ManagedProcess, PortInUseError, port_in_use
from .side_process import SideProcess

STATE_FILE = "console.json"
LOG_FILE = "console.log"
MARKER = "odradek.console.server"


class ConsoleProcess:
    def __init__(self, data_dir: str | Path, host: str = "127.0.0.1", port: int = 8080) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.host = host
        self.port = port
        self.side = SideProcess("console", MARKER, self.data_dir / LOG_FILE, self.data_dir / STATE_FILE)

    @property
    def process(self) -> ManagedProcess | None:
        return self.side.process

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    @property
    def log_path(self) -> Path:
        return self.side.log_path

    def start(self, bootstrap_servers: str, metrics: list[str], command_config: str | Path | None = None,
              python: str | None = None, timeout: float = 30.0,
              schema_registry: str | None = None) -> "ConsoleProcess":
        """Start the console detached and wait until it answers HTTP."""
        if port_in_use(self.host, self.port):
            raise PortInUseError(f"The console's port {self.host}:{self.port} is in use; pick another with "
                                 "--console-port")
        args = ["--bootstrap-server", bootstrap_servers, "--host", self.host, "--port", str(self.port)]
        if metrics:
            args += ["--metrics", ",".join(metrics)]
        if command_config is not None:
            args += ["--command-config", str(command_config)]
        if schema_registry is not None:
            args += ["--schema-registry", schema_registry]
        self.side.launch(args, python, detach=True)
        self.side.record(host=self.host, port=self.port)
        self.side.wait_ready(self.answers, timeout)
        return self

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.url, timeout=2) as response:
                return response.status in (200, 401)
        except urllib.error.HTTPError as exc:
            return exc.code == 401  # basic auth on: it is up
        except OSError:
            return False

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def stop(self, timeout: float = 10.0) -> None:
        self.side.stop(timeout)

    @classmethod
    def attach(cls, data_dir: str | Path) -> "ConsoleProcess | None":
        """The console recorded in ``data_dir`` (started by another command), or None."""
        data_dir = Path(data_dir).resolve()
        found = SideProcess.attach("console", MARKER, data_dir / LOG_FILE, data_dir / STATE_FILE)
        if found is None:
            return None
        side, state = found
        try:
            console = cls(data_dir, state["host"], int(state["port"]))
        except (KeyError, TypeError, ValueError):
            return None  # not ours to interpret: status shows no console
        console.side = side
        return console
