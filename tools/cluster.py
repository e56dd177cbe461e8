"""``odradek-cluster start|stop|status``: a local ZooKeeper and N brokers on loopback, as background processes.

    odradek-cluster start --brokers 3 --data-dir ./.odradek-cluster
    odradek-cluster status --data-dir ./.odradek-cluster
    odradek-cluster stop --data-dir ./.odradek-cluster

``start`` prints progress on stderr and the bootstrap servers alone on stdout, so
``BOOTSTRAP=$(odradek-cluster start ...)`` works. Errors are one line on stderr and exit code 1, as Kafka's
tools exit 1 on bad usage (``CommandLineUtils.printUsageAndDie``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn, Sequence

from .cluster_security import MODES
from .local_cluster import ClusterAlreadyRunningError, ClusterError, LocalCluster
from .local_zookeeper import ZooKeeperNotFoundError, ZooKeeperStartError

PROG = "odradek-cluster"
# How the user runs this command, for the hints in messages (cluster.sh sets "bash cluster.sh")
COMMAND = os.environ.get("ODRADEK_CLUSTER_COMMAND", PROG)
DEFAULT_DATA_DIR = "./.odradek-cluster"
DEFAULT_ZOOKEEPER_PORT = 2181  # Kafka's and ZooKeeper's usual client port
DEFAULT_BASE_PORT = 9092


class UsageError(Exception):
    pass


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad flag is one line (argparse prints the usage block and exits 2)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}. Run `{self.prog} --help` for the options.")


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _positive(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {text}")
    return value


def _port(text: str) -> int:
    value = _integer(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port in [0, 65535], got {text}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text}")
    return value


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog=PROG, description="Run a local Odradek cluster: one ZooKeeper and N brokers "
                                                  "on 127.0.0.1, as background processes.")
    commands = parser.add_subparsers(dest="command", metavar="{start,stop,status}")
    commands.required = True

    def command(name: str, help_text: str, timeout: float) -> OneLineParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--data-dir", default=DEFAULT_DATA_DIR, metavar="DIR",
                         help=f"where pid files, logs and data live (default {DEFAULT_DATA_DIR})")
        sub.add_argument("--timeout", type=_seconds, default=timeout, metavar="SECONDS",
                         help=f"how long to wait (default {timeout:g})")
        return sub

    start = command("start", "Start ZooKeeper and the brokers, wait until every broker is in the cluster "
                             "metadata, print the bootstrap servers.", 60.0)
    start.add_argument("--brokers", type=_positive, default=1, metavar="N", help="number of brokers (default 1)")
    start.add_argument("--base-port", type=_port, default=DEFAULT_BASE_PORT, metavar="PORT",
                       help=f"broker i listens on PORT+i (default {DEFAULT_BASE_PORT}; 0 = any free ports)")
    zookeeper = start.add_mutually_exclusive_group()
    zookeeper.add_argument("--zookeeper-port", type=_port, default=DEFAULT_ZOOKEEPER_PORT, metavar="PORT",
                           help=f"port of the ZooKeeper this command starts (default {DEFAULT_ZOOKEEPER_PORT}; "
                                "0 = any free port)")
    zookeeper.add_argument("--zookeeper", metavar="HOST:PORT",
                           help="use this running ZooKeeper instead of starting one")
    start.add_argument("--chroot", default="/odradek", metavar="PATH",
                       help="ZooKeeper path the brokers keep their znodes under (default /odradek)")
    start.add_argument("--metrics-base-port", type=_port, default=None, metavar="PORT",
                       help="broker i serves Prometheus metrics on http://127.0.0.1:PORT+i/metrics (docker-compose "
                            "uses 7071-7073; 0 = any free ports; default: no metrics endpoint)")
    start.add_argument("--security", choices=sorted(MODES), default=None,
                       help="secure every broker's listener: ssl (mutual TLS), sasl_plaintext or sasl_ssl (PLAIN and "
                            "SCRAM users, the brokers authenticating as admin); certificates, the admin's password and "
                            "a client.properties for --command-config go to DIR/security")
    start.add_argument("--override", type=_key_value, action="append", default=[], metavar="KEY=VALUE",
                       help="a broker setting for every broker (repeatable), as kafka-server-start's --override")
    command("stop", "Stop the brokers (SIGTERM, then SIGKILL after the timeout), then ZooKeeper.", 30.0)
    command("status", "Show which processes are alive, the bootstrap servers and the controller.", 10.0)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return {"start": start, "stop": stop, "status": status}[args.command](args)
    except UsageError as e:
        return _fail(str(e))
    except ClusterAlreadyRunningError as e:
        return _fail(f"{e.message}; stop it first with `{COMMAND} stop --data-dir {args.data_dir}`")
    except (ClusterError, ZooKeeperNotFoundError, ZooKeeperStartError) as e:
        return _fail(str(e).splitlines()[0])
    except KeyboardInterrupt:
        return _fail("Interrupted")


def _fail(message: str) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return 1


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def start(args: argparse.Namespace) -> int:
    if args.base_port and args.base_port + args.brokers - 1 > 65535:
        raise UsageError(f"--base-port {args.base_port} leaves no room for {args.brokers} brokers below 65536")
    if args.metrics_base_port and args.metrics_base_port + args.brokers - 1 > 65535:
        raise UsageError(f"--metrics-base-port {args.metrics_base_port} leaves no room for {args.brokers} brokers "
                         "below 65536")
    if args.chroot and (not args.chroot.startswith("/") or args.chroot.endswith("/")):
        raise UsageError(f"--chroot must start with / and not end with one, got {args.chroot!r}")
    cluster = LocalCluster(args.data_dir, args.brokers, zookeeper=args.zookeeper,
                           zookeeper_port=args.zookeeper_port, base_port=args.base_port, chroot=args.chroot,
                           broker_overrides=dict(args.override), detach=True,
                           metrics_base_port=args.metrics_base_port, replication_defaults=True,
                           security=args.security)
    previous = LocalCluster.attach(args.data_dir)
    if previous is not None and previous.running():  # say so before "Starting" (start() checks again, locked)
        raise ClusterAlreadyRunningError(f"A cluster is already running in {args.data_dir} (bootstrap servers "
                                         f"{previous.bootstrap_servers})")
    zookeeper = (f"using ZooKeeper at {args.zookeeper}" if args.zookeeper else "starting ZooKeeper on "
                 + (f"127.0.0.1:{args.zookeeper_port}" if args.zookeeper_port else "a free port"))
    ports = (f"127.0.0.1:{args.base_port}" + (f"-{args.base_port + args.brokers - 1}" if args.brokers > 1 else "")
             if args.base_port else "free ports")
    _say(f"Starting {args.brokers} broker{'s' if args.brokers > 1 else ''} on {ports}, {zookeeper} "
         f"(data in {cluster.data_dir}) ...")
    cluster.data_dir.mkdir(parents=True, exist_ok=True)
    # the data directory ignores itself, so a cluster started inside a git checkout never shows up in git status
    (cluster.data_dir / ".gitignore").write_text("*\n")
    cluster.start(timeout=args.timeout)
    metadata = cluster.metadata()
    _say(f"ZooKeeper: {cluster.zookeeper_connect}")
    for broker in cluster.brokers:
        metrics = f", metrics http://{cluster.host}:{broker.metrics_port}/metrics" if broker.metrics_port else ""
        _say(f"Started broker {broker.broker_id} on {cluster.host}:{broker.port} "
             f"(pid {broker.process.pid}, log {broker.log_path}{metrics})")
    _say(f"Cluster is up: {len(metadata.brokers)} broker{'s' if len(metadata.brokers) > 1 else ''}, "
         f"controller is broker {metadata.controller_id}. Stop it with "
         f"`{COMMAND} stop --data-dir {args.data_dir}`. Bootstrap servers:")
    if cluster.security is not None:
        _say(f"Listeners are {cluster.security.protocol}; client settings (Kafka's names, for --command-config): "
             f"{cluster.security.properties_path}")
        _say(f"ACLs are on (AclAuthorizer, super users {cluster.security.super_users}): other users need ACLs, "
             f"e.g. `odradek-acls --bootstrap-server {cluster.bootstrap_servers} --command-config "
             f"{cluster.security.properties_path} --add --allow-principal User:alice --operation All --topic '*'`")
    print(cluster.bootstrap_servers, flush=True)
    return 0


def stop(args: argparse.Namespace) -> int:
    cluster = LocalCluster.attach(args.data_dir)
    if cluster is None:
        # kafka-server-stop.sh also exits 1 when there is nothing to stop
        return _fail(f"No cluster to stop in {args.data_dir} (no cluster.json)")
    if not cluster.running():
        cluster.stop(timeout=args.timeout)  # removes the stale pid files
        return _fail(f"No cluster to stop in {args.data_dir}: its processes are gone (stale pid files removed)")
    brokers = [str(b.broker_id) for b in cluster.brokers if b.alive()]
    what = [f"broker{'s' if len(brokers) > 1 else ''} {', '.join(brokers)}"] if brokers else []
    what += ["ZooKeeper"] if cluster.zookeeper_alive() else []
    _say(f"Stopping {', then '.join(what)} ...")
    cluster.stop(timeout=args.timeout)
    _say("Stopped.")
    return 0


def status(args: argparse.Namespace) -> int:
    cluster = LocalCluster.attach(args.data_dir)
    if cluster is None:
        print(f"No cluster in {args.data_dir} (no cluster.json)")
        return 1
    rows = cluster.process_table()
    for name, pid, alive, address in rows:
        print(f"{name:<10} {address:<21} pid {pid if pid is not None else '-':<8} "
              f"{'running' if alive else 'NOT RUNNING'}")
    if cluster.zookeeper_alive() is None:
        print(f"ZooKeeper  {cluster.zookeeper_hosts:<21} (not started by odradek-cluster)")
    print(f"Bootstrap servers: {cluster.bootstrap_servers}")
    print(f"ZooKeeper connect: {cluster.zookeeper_connect}")
    if cluster.metrics_urls:
        print(f"Metrics: {' '.join(cluster.metrics_urls)}")
    try:
        metadata = cluster.metadata(timeout=args.timeout)
    except Exception as e:  # noqa: BLE001 - any failure means "no answer"; say which
        print(f"Controller: unknown (no broker answered Metadata: {type(e).__name__} {e})".rstrip())
        return 1
    print(f"Brokers in metadata: {','.join(str(i) for i in sorted(metadata.brokers))}")
    print(f"Controller: broker {metadata.controller_id}")
    return 0 if all(alive for _, _, alive, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
