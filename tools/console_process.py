"""The web console (``odradek-console``) as a background process of a local cluster: ``odradek-cluster start
--console-port PORT`` starts it beside the brokers, ``status`` shows it, ``stop`` stops it first.

It is a process of its own (an admin client of the cluster), recorded in ``DATA_DIR/console.json`` apart
from cluster.json, so a cluster started without it is unchanged. It is started as
``python -m odradek.console.server`` (tools do not import the console package).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from .local_cluster import ClusterStartError, ManagedProcess, PortInUseError, log_tail, port_in_use

STATE_FILE = "console.json"
LOG_FILE = "console.log"
MARKER = "odradek.console.server"


class ConsoleProcess:
    def __init__(self, data_dir: str | Path, host: str = "127.0.0.1", port: int = 8080) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.host = host
        self.port = port
        self.process: ManagedProcess | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_FILE

    def start(self, bootstrap_servers: str, metrics: list[str], command_config: str | Path | None = None,
              python: str | None = None, timeout: float = 30.0,
              schema_registry: str | None = None) -> "ConsoleProcess":
        """Start the console detached and wait until it answers HTTP."""
        if port_in_use(self.host, self.port):
            raise PortInUseError(f"The console's port {self.host}:{self.port} is in use; pick another with "
                                 "--console-port")
        command = [python or sys.executable, "-m", MARKER, "--bootstrap-server", bootstrap_servers,
                   "--host", self.host, "--port", str(self.port)]
        if metrics:
            command += ["--metrics", ",".join(metrics)]
        if command_config is not None:
            command += ["--command-config", str(command_config)]
        if schema_registry is not None:
            command += ["--schema-registry", schema_registry]
        with open(self.log_path, "ab") as log:
            popen = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.process = ManagedProcess("console", popen.pid, MARKER, popen)
        (self.data_dir / STATE_FILE).write_text(json.dumps({"pid": popen.pid, "host": self.host,
                                                            "port": self.port}) + "\n")
        deadline = time.monotonic() + timeout
        while not self.answers():
            if not self.process.alive() or time.monotonic() > deadline:
                self.stop()
                raise ClusterStartError(f"The console did not start; see {self.log_path}",
                                        log_tail(self.log_path))
            time.sleep(0.1)
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
        if self.process is not None:
            self.process.terminate(timeout)
        with contextlib.suppress(FileNotFoundError):
            (self.data_dir / STATE_FILE).unlink()

    @classmethod
    def attach(cls, data_dir: str | Path) -> "ConsoleProcess | None":
        """The console recorded in ``data_dir`` (started by another command), or None."""
        path = Path(data_dir).resolve() / STATE_FILE
        try:
            state = json.loads(path.read_text())
            console = cls(data_dir, state["host"], int(state["port"]))
            console.process = ManagedProcess("console", int(state["pid"]), MARKER)
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError):
            return None  # not ours to interpret: status shows no console
        return console
