"""A local Odradek cluster: one ZooKeeper and N broker processes on loopback.

``LocalCluster`` is the library behind ``odradek-cluster`` and the integration-test fixtures. Layout of its
data directory:

    cluster.json            what was started: ports, pids, ZooKeeper connect string, chroot
    server.properties       the settings every broker shares (per-broker keys are passed as --override)
    zookeeper/              LocalZooKeeper's zoo.cfg, data and zookeeper.log (when the cluster owns it)
    zookeeper.pid, broker-<i>.pid
    broker-<i>/             broker i's log.dirs
    broker-<i>.log          broker i's stdout and stderr

Processes are started either attached (the default, for tests: killed when this Python process exits) or
detached (``detach=True``, for the command line: they outlive the command; a later ``LocalCluster.attach(dir)``
finds them again through cluster.json and stops them by pid).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from .cluster_security import ClusterSecurity
from .local_zookeeper import LocalZooKeeper, free_port
from ..clients.cluster_metadata import ClusterMetadata
from ..clients.simple_client import SyncSimpleClient
from ..protocol.errors import KafkaError

DEFAULT_CHROOT = "/odradek"
STATE_FILE = "cluster.json"
STATE_VERSION = 1
BIND_FAILURES = ("Address already in use", "[Errno 98]", "[Errno 48]")  # 48: EADDRINUSE on macOS


class ClusterError(RuntimeError):
    """A problem the user can act on; the message is one line. ``details`` holds log tails, if any."""

    def __init__(self, message: str, details: str = ""):
        super().__init__(message)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        # the first line is the message; test reports also show the log tails that follow it
        return f"{self.message}\n{self.details}" if self.details else self.message


class ClusterAlreadyRunningError(ClusterError):
    pass


class PortInUseError(ClusterError):
    pass


class ClusterStartError(ClusterError):
    pass


# ----------------------------------------------------------------------------------------------------------------
# Processes, by Popen when we are their parent, by pid when another command started them

def _proc_state(pid: int) -> tuple[str, str] | None:
    """(command line, state letter) of a live process from /proc, or None when it is gone."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:
        return ("", "?")
    return cmdline, stat.rpartition(")")[2].strip()[:1]


def pid_alive(pid: int, marker: str = "") -> bool:
    """Is ``pid`` running (not a zombie) with ``marker`` in its command line? The marker guards against pid reuse."""
    if not Path("/proc/self").exists():  # no procfs: fall back to signal 0 (no reuse check)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    state = _proc_state(pid)
    return state is not None and state[1] != "Z" and marker in state[0]


@dataclass
class ManagedProcess:
    """One server process. ``popen`` is set when this Python process started it (and must reap it)."""
    name: str
    pid: int
    marker: str
    popen: subprocess.Popen | None = None

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        return pid_alive(self.pid, self.marker)

    @property
    def returncode(self) -> int | None:
        return self.popen.poll() if self.popen is not None else None

    def send(self, sig: int) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def wait(self, timeout: float) -> bool:
        """True once the process has exited (reaped when it is our child), False after ``timeout`` seconds."""
        if self.popen is not None:
            try:
                self.popen.wait(timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        deadline = time.monotonic() + timeout
        while self.alive():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def terminate(self, timeout: float) -> None:
        """SIGTERM (after SIGCONT, in case it was paused), then SIGKILL after ``timeout`` seconds."""
        self.send(signal.SIGCONT)
        self.send(signal.SIGTERM)
        if not self.wait(timeout):
            self.send(signal.SIGKILL)
            self.wait(10.0)


def port_in_use(host: str, port: int) -> bool:
    """Would a server fail to listen on host:port? (SO_REUSEADDR as servers use it, so TIME_WAIT does not count.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def log_tail(path: Path, lines: int = 30, since: int = 0) -> str:
    """The last ``lines`` lines of a log file, from byte offset ``since`` on."""
    try:
        with open(path, "rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")


# ----------------------------------------------------------------------------------------------------------------
# The cluster

@dataclass
class BrokerSlot:
    """Broker ``broker_id``: where it listens and logs, and its current process."""
    broker_id: int
    port: int
    log_dirs: Path
    log_path: Path
    pid_path: Path
    process: ManagedProcess | None = None
    log_offset: int = 0  # size of log_path when the current process was spawned
    metrics_port: int | None = None  # its Prometheus /metrics port (odradek.metrics.port); None: off
    host: str = "127.0.0.1"  # the address it listens on and advertises
    command_prefix: tuple[str, ...] = ()  # run as prefix + command, e.g. ("ip", "netns", "exec", "ns")

    @property
    def marker(self) -> str:
        # the trailing space keeps broker-1's marker from matching broker-10's command line
        return f"log.dirs={self.log_dirs} "

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()


class LocalCluster:
    """ZooKeeper plus ``brokers`` Odradek brokers (ids 0..N-1) on ``host``.

    ``zookeeper``: None starts a ZooKeeper of the cluster's own on ``zookeeper_port`` (0 = a free port); a
    ``LocalZooKeeper`` or a ``host:port`` string uses that running server. Brokers keep their znodes under
    ``chroot`` so several clusters can share one ZooKeeper. ``base_port``: broker i listens on base_port + i;
    0 picks free ports. ``broker_overrides`` are passed to every broker as ``--override key=value``.
    ``metrics_base_port``: broker i serves Prometheus metrics on metrics_base_port + i (0: free ports; None:
    no metrics endpoint). ``replication_defaults``: topics default to replication factor min(3, N) and
    min.insync.replicas min(2, N), as the docker-compose cluster (off for the test fixtures, which pick
    their replication per test). ``security``: "ssl", "sasl_plaintext" or "sasl_ssl" secures every broker's
    listener (tools/cluster_security.py); this cluster's own clients then use the admin's credentials.
    A ``{port}`` in a broker override is broker i's port (a test's own listener layout).
    ``broker_hosts`` / ``broker_command_prefixes`` (one entry per broker) put brokers on addresses of their
    own and start them through a prefix such as ``ip netns exec <ns>`` (the network-partition tests); such
    ports are not checked here, the broker reports a busy one.
    """

    def __init__(self, data_dir: str | os.PathLike, brokers: int = 1, *,
                 zookeeper: LocalZooKeeper | str | None = None, zookeeper_port: int = 0, base_port: int = 0,
                 host: str = "127.0.0.1", chroot: str = DEFAULT_CHROOT,
                 broker_overrides: Mapping[str, Any] | None = None, detach: bool = False,
                 python: str | None = None, metrics_base_port: int | None = None,
                 replication_defaults: bool = False, security: str | None = None,
                 broker_hosts: list[str] | None = None, broker_command_prefixes: list[list[str]] | None = None):
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        if chroot and (not chroot.startswith("/") or chroot.endswith("/")):
            raise ValueError(f"chroot must start with / and not end with one: {chroot!r}")
        self.data_dir = Path(data_dir).resolve()
        self.host = host
        self.chroot = chroot
        self.detach = detach
        self.python = python or sys.executable
        self.broker_overrides = {k: str(v) for k, v in (broker_overrides or {}).items()}
        self._auto_ports = base_port == 0
        self.metrics_base_port = metrics_base_port
        self.replication_defaults = replication_defaults
        self._zk: LocalZooKeeper | None = None         # the server we run in-process
        self._zk_process: ManagedProcess | None = None  # the server we own, by pid (also set when detached)
        if zookeeper is None:
            self._zk = LocalZooKeeper(self.data_dir / "zookeeper", port=zookeeper_port, host=host)
            self._zk_connect = ""
        elif isinstance(zookeeper, LocalZooKeeper):
            self._zk_connect = zookeeper.connect_string
        else:
            self._zk_connect = zookeeper
        self.brokers = [self._slot(i, 0 if self._auto_ports else base_port + i) for i in range(brokers)]
        for b in self.brokers:
            b.host = broker_hosts[b.broker_id] if broker_hosts else host
            b.command_prefix = tuple(broker_command_prefixes[b.broker_id]) if broker_command_prefixes else ()
        if metrics_base_port is not None:
            for b in self.brokers:
                b.metrics_port = metrics_base_port + b.broker_id if metrics_base_port else 0
        self._atexit_registered = False
        self.security = ClusterSecurity(self.data_dir / "security", security, host) if security else None

    def _client_security(self) -> dict[str, Any]:
        return {"security": self.security.client_security()} if self.security is not None else {}

    def _slot(self, broker_id: int, port: int) -> BrokerSlot:
        return BrokerSlot(broker_id, port, self.data_dir / f"broker-{broker_id}",
                          self.data_dir / f"broker-{broker_id}.log", self.data_dir / f"broker-{broker_id}.pid")

    # --- addresses ---------------------------------------------------------------------------------------------
    @property
    def zookeeper_hosts(self) -> str:
        """``host:port`` of the ZooKeeper server (without the chroot)."""
        return self._zk.connect_string if self._zk is not None and not self._zk_connect else self._zk_connect

    @property
    def zookeeper_connect(self) -> str:
        """The brokers' zookeeper.connect: ``host:port/chroot``."""
        return self.zookeeper_hosts + self.chroot

    @property
    def broker_ports(self) -> list[int]:
        return [b.port for b in self.brokers]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{b.host}:{b.port}" for b in self.brokers)

    @property
    def metrics_urls(self) -> list[str]:
        """``http://host:port/metrics`` of each broker with a metrics endpoint."""
        return [f"http://{b.host}:{b.metrics_port}/metrics" for b in self.brokers if b.metrics_port]

    @property
    def state_path(self) -> Path:
        return self.data_dir / STATE_FILE

    @property
    def properties_path(self) -> Path:
        return self.data_dir / "server.properties"

    def broker_log(self, broker_id: int) -> Path:
        return self.brokers[broker_id].log_path

    def broker_alive(self, broker_id: int) -> bool:
        return self.brokers[broker_id].alive()

    def zookeeper_alive(self) -> bool | None:
        """None when the cluster uses someone else's ZooKeeper."""
        if self._zk is not None and self._zk.running:
            return True
        return self._zk_process.alive() if self._zk_process is not None else None

    def running(self) -> bool:
        """Is any process of this cluster alive?"""
        return bool(self.zookeeper_alive()) or any(b.alive() for b in self.brokers)

    # --- start -------------------------------------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> "LocalCluster":
        """Start ZooKeeper (when owned) and every broker, and wait until Metadata lists all of them.

        Raises ClusterAlreadyRunningError, PortInUseError, ZooKeeperNotFoundError, or ClusterStartError (after
        stopping whatever it started).
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self._lock():
            self._refuse_if_running()
            if self._zk is not None and not self._zk_connect:
                self._zk.command()  # ZooKeeperNotFoundError (no java, no ZooKeeper) before anything starts
            self._check_ports()
            self._register_cleanup()
            try:
                self._start_zookeeper(timeout)
                if self.security is not None:
                    self.security.prepare(self.zookeeper_connect)
                self._write_properties()
                for broker in self.brokers:
                    self._spawn(broker)
                self._wait_until_registered(self.brokers, timeout, "during start-up")
            except BaseException:
                self._stop_processes(timeout=10.0)
                raise
        return self

    def _refuse_if_running(self) -> None:
        previous = LocalCluster.attach(self.data_dir)
        if previous is None:
            return
        if previous.running():
            raise ClusterAlreadyRunningError(f"A cluster is already running in {self.data_dir} (bootstrap servers "
                                             f"{previous.bootstrap_servers})")
        previous._remove_run_files()  # stale files of a cluster that died

    def _check_ports(self) -> None:
        local = [b for b in self.brokers if not b.command_prefix]
        wanted = [] if self._auto_ports else [(b.port, f"broker {b.broker_id}") for b in local]
        wanted += [(b.metrics_port, f"metrics of broker {b.broker_id}") for b in local if b.metrics_port]
        if self._zk is not None and not self._zk_connect and self._zk.port:
            wanted.append((self._zk.port, "ZooKeeper"))
        busy = [f"{port} ({what})" for port, what in wanted if port_in_use(self.host, port)]
        if busy:
            raise PortInUseError(f"Port{'s' if len(busy) > 1 else ''} {', '.join(busy)} on {self.host} "
                                 "already in use; stop what listens there or choose other ports "
                                 "(--base-port, --zookeeper-port)")

    def _start_zookeeper(self, timeout: float) -> None:
        if self._zk is None or self._zk_connect:
            return
        self._zk.start(timeout=max(timeout, 30.0))
        self._zk_process = ManagedProcess("ZooKeeper", self._zk.process.pid, str(self._zk.config_path),
                                          self._zk.process)
        if self.detach:
            atexit.unregister(self._zk.stop)  # the server must outlive this command
        (self.data_dir / "zookeeper.pid").write_text(f"{self._zk_process.pid}\n")
        self._save_state()

    def _write_properties(self) -> None:
        count = len(self.brokers)
        self.properties_path.write_text("\n".join([
            "# Shared settings of this local cluster, written by odradek-cluster at each start. broker.id,",
            "# listeners, log.dirs and zookeeper.connect are passed to each broker with --override (see cluster.json).",
            "num.partitions=1",
            # as docker-compose.yml: replication factor 3 and min.insync.replicas 2 (fewer with fewer brokers)
            f"default.replication.factor={min(3, count) if self.replication_defaults else 1}",
            *([f"min.insync.replicas={min(2, count)}"] if self.replication_defaults else []),
            # Kafka's sample file sets these to 1 for one broker; a local cluster can afford min(3, N)
            f"offsets.topic.replication.factor={min(3, count)}",
            f"transaction.state.log.replication.factor={min(3, count)}",
            f"transaction.state.log.min.isr={min(2, count)}",
            "group.initial.rebalance.delay.ms=0",
            "",
        ]))

    def broker_command(self, broker: BrokerSlot) -> list[str]:
        """``python -m odradek.broker.server server.properties --override ...`` for one broker."""
        overrides = {
            "broker.id": str(broker.broker_id),
            "listeners": f"PLAINTEXT://{broker.host}:{broker.port}",
            "log.dirs": str(broker.log_dirs),
            "zookeeper.connect": self.zookeeper_connect,
            # on the cluster's own address, the one odradek-cluster prints (the broker's default is every interface)
            **({"odradek.metrics.port": str(broker.metrics_port), "odradek.metrics.host": self.host}
               if broker.metrics_port is not None else {}),
            **(self.security.broker_overrides(broker.port) if self.security is not None else {}),
            **{k: v.replace("{port}", str(broker.port)) for k, v in self.broker_overrides.items()},
        }
        command = [*broker.command_prefix, self.python, "-m", "odradek.broker.server", str(self.properties_path)]
        for key, value in overrides.items():
            command += ["--override", f"{key}={value}"]
        return command

    def _spawn(self, broker: BrokerSlot) -> None:
        if self._auto_ports and broker.port == 0:
            broker.port = free_port(broker.host)
        if broker.metrics_port == 0:
            broker.metrics_port = free_port(broker.host)
        broker.log_dirs.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(broker.log_path, "ab") as log:
            broker.log_offset = log.tell()
            popen = subprocess.Popen(self.broker_command(broker), stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, cwd=self.data_dir, env=env,
                                     start_new_session=self.detach)
        broker.process = ManagedProcess(f"broker {broker.broker_id}", popen.pid, broker.marker, popen)
        broker.pid_path.write_text(f"{popen.pid}\n")
        self._save_state()

    def _wait_until_registered(self, watched: list[BrokerSlot], timeout: float, when: str,
                               retries_per_broker: int = 3) -> ClusterMetadata:
        """Poll each ``watched`` broker until its own Metadata lists every live broker and a controller (so any
        of them serves a client at once); fail fast when one exits, except that with free ports a broker whose
        port was taken meanwhile is respawned on another."""
        deadline = time.monotonic() + timeout
        respawns = dict.fromkeys((b.broker_id for b in watched), 0)
        wanted = {b.broker_id for b in self.brokers if b.alive()} | set(respawns)
        with contextlib.ExitStack() as stack:
            clients: dict[tuple[int, int], SyncSimpleClient] = {}

            def client_of(broker: BrokerSlot) -> SyncSimpleClient:  # one per broker address, asking only it
                key = (broker.broker_id, broker.port)
                if key not in clients:
                    clients[key] = stack.enter_context(SyncSimpleClient(
                        f"{broker.host}:{broker.port}", client_id="odradek-cluster", request_timeout=2.0,
                        connect_timeout=2.0, retries=0, **self._client_security()))
                return clients[key]

            while True:
                for broker in watched:
                    if broker.alive():
                        continue
                    output = log_tail(broker.log_path, since=broker.log_offset)
                    if (self._auto_ports and respawns[broker.broker_id] < retries_per_broker
                            and any(s in output for s in BIND_FAILURES)):
                        respawns[broker.broker_id] += 1
                        broker.port = 0
                        self._spawn(broker)
                        continue
                    code = broker.process.returncode if broker.process else None
                    raise ClusterStartError(
                        f"Broker {broker.broker_id} exited with code {code} {when}: "
                        f"{_last_line(output) or '(no output)'} (see {broker.log_path})", output)
                answers = {b.broker_id: self._poll_metadata(client_of(b)) for b in watched}
                if all(self._complete(metadata, wanted) for metadata in answers.values()):
                    return answers[watched[-1].broker_id]
                if time.monotonic() >= deadline:
                    raise self._timeout_error(wanted, answers, timeout)
                time.sleep(0.2)

    def _timeout_error(self, wanted: set[int], answers: dict[int, ClusterMetadata | None],
                       timeout: float) -> ClusterStartError:
        late = sorted(i for i, metadata in answers.items() if metadata is None or not wanted <= set(metadata.brokers))
        if not late:  # every broker registered, but no controller
            return ClusterStartError(f"No controller was elected within {timeout:g} s; see "
                                     f"{', '.join(str(b.log_path) for b in self.brokers)}", self.log_tails())
        logs = ", ".join(str(self.brokers[i].log_path) for i in late)
        return ClusterStartError(
            f"Broker{'s' if len(late) > 1 else ''} {', '.join(map(str, late))} did not join the cluster "
            f"(in Metadata) within {timeout:g} s; see {logs}", self.log_tails(late))

    # --- metadata ----------------------------------------------------------------------------------------------
    def client(self, timeout: float = 10.0, retries: int = 5) -> SyncSimpleClient:
        """A blocking SimpleClient bootstrapped from the live brokers (close it, or use it in ``with``)."""
        return SyncSimpleClient(self._live_bootstrap(), client_id="odradek-cluster", request_timeout=timeout,
                                connect_timeout=timeout, retries=retries, **self._client_security())

    def metadata(self, timeout: float = 10.0) -> ClusterMetadata:
        """Brokers and controller as any live broker sees them (``.brokers``: id -> address, ``.controller_id``)."""
        with self.client(timeout) as client:
            return client.metadata(topics=[])

    def wait_for_brokers(self, count: int | None = None, timeout: float = 60.0) -> ClusterMetadata:
        """Wait until Metadata lists ``count`` brokers (default: all of this cluster's) and a controller."""
        with self.client() as client:
            return client.wait_for_brokers(count or len(self.brokers), timeout)

    def _live_bootstrap(self) -> str:
        live = [f"{b.host}:{b.port}" for b in self.brokers if b.alive()]
        return ",".join(live) or self.bootstrap_servers

    @staticmethod
    def _complete(metadata: ClusterMetadata | None, wanted: set[int]) -> bool:
        """Does ``metadata`` list every broker of ``wanted`` and a live controller?"""
        return metadata is not None and set(metadata.brokers) >= wanted and metadata.controller_id in metadata.brokers

    def _poll_metadata(self, client: SyncSimpleClient) -> ClusterMetadata | None:
        try:
            return client.metadata(topics=[])
        except (OSError, KafkaError):  # not listening yet, or not registered: the caller polls again
            return None

    # --- brokers one at a time (tests) -------------------------------------------------------------------------
    def kill_broker(self, broker_id: int, sig: int = signal.SIGKILL, timeout: float = 30.0) -> int | None:
        """Send ``sig`` to broker ``broker_id``; for SIGKILL/SIGTERM/SIGINT wait for it to exit.

        Returns the exit code when known (negative for a signal, as Popen reports it).
        """
        broker = self.brokers[broker_id]
        if broker.process is None:
            return None
        broker.process.send(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT) and not broker.process.wait(timeout):
            raise ClusterError(f"Broker {broker_id} did not exit within {timeout:g} s of signal {sig}; "
                               f"see {broker.log_path}", self.log_tails([broker_id]))
        return broker.process.returncode

    def stop_broker(self, broker_id: int, timeout: float = 30.0) -> None:
        """SIGTERM broker ``broker_id`` (a clean shutdown), SIGKILL after ``timeout`` seconds."""
        broker = self.brokers[broker_id]
        if broker.process is not None:
            broker.process.terminate(timeout)

    def start_broker(self, broker_id: int, timeout: float = 60.0) -> ClusterMetadata:
        """Start a stopped broker again (same id, port and log.dirs) and wait until Metadata lists every
        broker that is alive. Kafka keeps a killed broker's ephemeral znode until its ZooKeeper session
        expires (zookeeper.session.timeout.ms), so after SIGKILL this can take that long."""
        broker = self.brokers[broker_id]
        if broker.alive():
            raise ClusterError(f"Broker {broker_id} is already running (pid {broker.process.pid})")
        self._register_cleanup()
        auto_ports, self._auto_ports = self._auto_ports, False  # keep the port: clients bootstrap from it
        try:
            self._spawn(broker)
            return self._wait_until_registered([broker], timeout, "on restart")
        finally:
            self._auto_ports = auto_ports

    def restart_broker(self, broker_id: int, timeout: float = 60.0, sig: int = signal.SIGTERM) -> ClusterMetadata:
        """Stop broker ``broker_id`` (``sig``: SIGTERM is a clean shutdown, SIGKILL a crash), then start it."""
        if sig == signal.SIGTERM:
            self.stop_broker(broker_id, timeout)
        else:
            self.kill_broker(broker_id, sig, timeout)
        return self.start_broker(broker_id, timeout)

    # --- stop --------------------------------------------------------------------------------------------------
    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM every broker (SIGKILL after ``timeout`` seconds), then ZooKeeper; remove pid files."""
        with self._lock():
            self._stop_processes(timeout)

    def _stop_processes(self, timeout: float) -> None:
        live = [b.process for b in self.brokers if b.process is not None and b.alive()]
        for process in live:  # all at once, as kafka-server-stop.sh does
            process.send(signal.SIGCONT)
            process.send(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in live:
            if not process.wait(max(0.0, deadline - time.monotonic())):
                process.send(signal.SIGKILL)
                process.wait(10.0)
        if self._zk is not None and self._zk.running:
            self._zk.stop(timeout)
        elif self._zk_process is not None:
            self._zk_process.terminate(timeout)
        self._remove_run_files()
        if self._atexit_registered:
            atexit.unregister(self._kill_all)
            self._atexit_registered = False

    def _remove_run_files(self) -> None:
        paths = [self.state_path, self.data_dir / "zookeeper.pid"] + [b.pid_path for b in self.brokers]
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def _register_cleanup(self) -> None:
        """Attached processes die with this Python process, even when a test forgets to stop the cluster."""
        if not self.detach and not self._atexit_registered:
            atexit.register(self._kill_all)
            self._atexit_registered = True

    def _kill_all(self) -> None:
        for broker in self.brokers:
            if broker.process is not None:
                broker.process.send(signal.SIGKILL)
                broker.process.wait(5.0)
        if self._zk is not None:
            self._zk.stop(5.0)

    # --- state file --------------------------------------------------------------------------------------------
    def _save_state(self) -> None:
        zk = self._zk_process
        state = {
            "version": STATE_VERSION,
            "host": self.host,
            "chroot": self.chroot,
            **({"security": self.security.mode} if self.security is not None else {}),
            "zookeeper": {"connect": self.zookeeper_hosts, "pid": zk.pid if zk else None,
                          "marker": zk.marker if zk else None},
            "brokers": [{"id": b.broker_id, "port": b.port, "pid": b.process.pid if b.process else None,
                         **({"metrics_port": b.metrics_port} if b.metrics_port is not None else {}),
                         **({"host": b.host} if b.host != self.host else {})}
                        for b in self.brokers],
        }
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        os.replace(tmp, self.state_path)

    @classmethod
    def attach(cls, data_dir: str | os.PathLike) -> "LocalCluster | None":
        """The cluster recorded in ``data_dir/cluster.json`` (started by another process), or None."""
        path = Path(data_dir).resolve() / STATE_FILE
        try:
            state = json.loads(path.read_text())
            brokers = state["brokers"]
            zk = state["zookeeper"]
            cluster = cls(path.parent, len(brokers), zookeeper=zk["connect"], host=state["host"],
                          chroot=state["chroot"], detach=True, security=state.get("security"))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise ClusterError(f"{path} is not a cluster state file odradek-cluster understands ({e}); "
                               "remove it if no cluster runs from this directory") from None
        cluster._auto_ports = False  # the ports are those recorded
        for slot, entry in zip(cluster.brokers, brokers):
            slot.port = entry["port"]
            slot.host = entry.get("host", cluster.host)
            slot.metrics_port = entry.get("metrics_port")
            if entry.get("pid"):
                slot.process = ManagedProcess(f"broker {slot.broker_id}", entry["pid"], slot.marker)
        if zk.get("pid"):
            cluster._zk_process = ManagedProcess("ZooKeeper", zk["pid"], zk.get("marker") or "")
        return cluster

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """One start or stop at a time per data directory."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.data_dir / ".lock", "w") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ClusterError(f"Another odradek-cluster command is working on {self.data_dir}") from None
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    # --- reporting ---------------------------------------------------------------------------------------------
    def process_table(self) -> list[tuple[str, int | None, bool, str]]:
        """(name, pid, alive, address) for ZooKeeper (when owned) and each broker."""
        rows = []
        if self._zk_process is not None or (self._zk is not None and not self._zk_connect):
            pid = self._zk_process.pid if self._zk_process else None
            rows.append(("ZooKeeper", pid, bool(self.zookeeper_alive()), self.zookeeper_hosts))
        for b in self.brokers:
            rows.append((f"broker {b.broker_id}", b.process.pid if b.process else None, b.alive(),
                         f"{b.host}:{b.port}"))
        return rows

    def log_tails(self, broker_ids: list[int] | None = None, lines: int = 40) -> str:
        """The end of each broker's log (for test failure reports and start errors)."""
        ids = range(len(self.brokers)) if broker_ids is None else broker_ids
        parts = []
        for i in ids:
            path = self.brokers[i].log_path
            parts.append(f"----- {path} (last {lines} lines) -----\n{log_tail(path, lines)}")
        return "\n".join(parts)

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"LocalCluster({str(self.data_dir)!r}, brokers={len(self.brokers)}, {self.bootstrap_servers})"

