"""A real standalone ZooKeeper server for local clusters and tests.

Runs Debian's packaged ZooKeeper (``/usr/share/java/zookeeper.jar``) or an Apache tarball found
through ``ZOOKEEPER_HOME`` (``lib/*.jar``, ``conf/``), with ``java`` from PATH and a ``zoo.cfg``
of its own in ``data_dir``. The server's output goes to ``data_dir/zookeeper.log``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

DEBIAN_JAR = "/usr/share/java/zookeeper.jar"
DEBIAN_CONF = "/etc/zookeeper/conf"
DEBIAN_LOGGING_JARS = ("/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
INSTALL_HINT = ("ZooKeeper is not installed. Install it with "
                "`sudo apt-get update && sudo apt-get install -y zookeeper`, "
                "or set ZOOKEEPER_HOME to an unpacked Apache ZooKeeper release (bin/, lib/, conf/).")


class ZooKeeperNotFoundError(RuntimeError):
    """Neither Debian's ZooKeeper nor ZOOKEEPER_HOME (nor java) is available."""


class ZooKeeperStartError(RuntimeError):
    """The server process died or did not answer in time."""


def zookeeper_classpath() -> str:
    """The Java class path of the ZooKeeper server to run; raises ZooKeeperNotFoundError with install steps."""
    home = os.environ.get("ZOOKEEPER_HOME")
    if home:
        lib = Path(home) / "lib"
        if not lib.is_dir():
            raise ZooKeeperNotFoundError(f"ZOOKEEPER_HOME={home} has no lib/ folder. {INSTALL_HINT}")
        return os.pathsep.join([str(Path(home) / "conf"), str(lib / "*"), str(Path(home) / "*")])
    if os.path.isfile(DEBIAN_JAR):
        # Debian's jar names slf4j-api only; add a log4j binding when installed, so the log is not empty
        logging = [jar for jar in DEBIAN_LOGGING_JARS if os.path.isfile(jar)]
        return os.pathsep.join([DEBIAN_CONF, DEBIAN_JAR] + (logging if len(logging) == 2 else []))
    raise ZooKeeperNotFoundError(INSTALL_HINT)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter command (ruok, srvr, stat) and return the answer."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word.encode())
        chunks = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


class LocalZooKeeper:
    """One standalone ZooKeeper process: ``start()``, ``stop()``, ``pause()``/``resume()``.

    ``command_prefix`` runs the server through another command, e.g. ``ip netns exec <ns>`` (then give a
    ``port``: a free port is looked for on this side of the prefix)."""

    def __init__(self, data_dir: str | os.PathLike, port: int = 0, host: str = "127.0.0.1",
                 tick_time: int = 500, max_session_timeout: int = 60000, heap_mb: int = 256,
                 command_prefix: list[str] | None = None):
        self.data_dir = Path(data_dir)
        self.host = host
        self.port = port
        self._auto_port = port == 0
        self.tick_time = tick_time
        self.max_session_timeout = max_session_timeout
        self.heap_mb = heap_mb
        self.command_prefix = list(command_prefix or [])
        self.process: subprocess.Popen | None = None
        self.log_path = self.data_dir / "zookeeper.log"
        self.config_path = self.data_dir / "zoo.cfg"

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def write_config(self) -> None:
        """Write zoo.cfg for a standalone server on ``host:port`` keeping its data in ``data_dir/data``."""
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("\n".join([
            f"tickTime={self.tick_time}",
            f"dataDir={self.data_dir / 'data'}",
            f"clientPort={self.port}",
            f"clientPortAddress={self.host}",
            f"minSessionTimeout={2 * self.tick_time}",
            f"maxSessionTimeout={self.max_session_timeout}",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr,stat",
            "autopurge.purgeInterval=0",
            "",
        ]))

    def command(self) -> list[str]:
        """The java command line that runs the server."""
        java = shutil.which("java")
        if java is None:
            raise ZooKeeperNotFoundError("`java` is not on PATH; ZooKeeper needs a Java runtime. " + INSTALL_HINT)
        return [*self.command_prefix, java, f"-Xmx{self.heap_mb}m", "-XX:+UseSerialGC",
                "-Dzookeeper.root.logger=INFO,CONSOLE", f"-Dzookeeper.log.dir={self.data_dir}",
                "-Dzookeeper.jmx.log4j.disable=true", "-Dzookeeper.admin.enableServer=false",
                "-cp", zookeeper_classpath(), MAIN_CLASS, str(self.config_path)]

    def start(self, timeout: float = 30.0) -> "LocalZooKeeper":
        """Spawn the server and wait until it answers ``ruok`` with ``imok``."""
        if self.running:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        attempts = 3 if self._auto_port else 1
        for attempt in range(attempts):
            if self._auto_port:
                self.port = free_port(self.host)
            self.write_config()
            command = self.command()
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, cwd=self.data_dir)
            atexit.register(self.stop)
            try:
                self._wait_ready(timeout)
                return self
            except ZooKeeperStartError:
                self.stop()
                if attempt == attempts - 1:
                    raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ZooKeeperStartError(f"ZooKeeper exited with code {self.process.returncode}; "
                                          f"see {self.log_path}:\n{self._log_tail()}")
            try:
                if four_letter_word(self.host, self.port, "ruok", timeout=1.0).startswith("imok"):
                    if "Mode:" in four_letter_word(self.host, self.port, "srvr", timeout=1.0):
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise ZooKeeperStartError(f"ZooKeeper did not answer on {self.connect_string} within {timeout}s; "
                                  f"see {self.log_path}:\n{self._log_tail()}")

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if the server has not exited after ``timeout`` seconds."""
        process, self.process = self.process, None
        atexit.unregister(self.stop)
        if process is None or process.poll() is not None:
            return
        try:
            process.send_signal(signal.SIGCONT)  # a paused server cannot handle SIGTERM
            process.terminate()
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def pause(self) -> None:
        """SIGSTOP the server: clients see it hang, sessions expire once it resumes."""
        if self.running:
            self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT a paused server."""
        if self.running:
            self.process.send_signal(signal.SIGCONT)

    def srvr(self) -> str:
        """The server's ``srvr`` report (version, mode, zxid, node count)."""
        return four_letter_word(self.host, self.port, "srvr")

    def __enter__(self) -> "LocalZooKeeper":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
