"""odradek-log-dirs: log directory usage per broker, as Kafka 2.8's kafka-log-dirs.sh (LogDirsCommand).

``--bootstrap-server`` and ``--describe`` are required; ``--broker-list 0,1,2`` (default: every broker in the
cluster), ``--topic-list t1,t2`` (default: every topic), ``--command-config`` (admin client properties). Output as
Kafka's, two lines and one line of JSON:

    Querying brokers for log directories information
    Received log directory information from brokers 0,1,2
    {"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/data","error":null,"partitions":[{"partition":"t-0",
    "size":120,"offsetLag":0,"isFuture":false}]}]}]}

An offline log directory (KIP-112) has ``"error":"org.apache.kafka.common.errors.KafkaStorageException"`` and no
partitions.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from ..clients.admin.log_dirs import LogDirDescription
from ..protocol.errors import KafkaError  # type: ignore[attr-defined]
from .common import Parser, UsageError, client_id, failure_report, parse_known, run_admin, run_tool

__all__ = ["describe_json", "main", "parse_args"]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="odradek-log-dirs", allow_abbrev=False,
                    description="This tool helps to query log directory usage on the specified brokers.")
    add = parser.add_argument
    add("--bootstrap-server", metavar="<String: The server(s) to use for bootstrapping>",
        help="REQUIRED: the server(s) to use for bootstrapping")
    add("--command-config", metavar="<String: Admin client property file>",
        help="Property file containing configs to be passed to Admin Client.")
    add("--describe", action="store_true", help="Describe the specified log directories on the specified brokers.")
    add("--topic-list", default="", metavar="<String: Topic list>",
        help="The list of topics to be queried in the form \"topic1,topic2,topic3\". All topics will be queried if "
             "no topic list is specified")
    add("--broker-list", metavar="<String: Broker list>",
        help="The list of brokers to be queried in the form \"0,1,2\". All brokers in the cluster will be queried "
             "if no broker list is specified")
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    opts = parse_known(build_parser(), argv)
    missing = [name for name, given in (("--bootstrap-server", opts.bootstrap_server is not None),
                                        ("--describe", opts.describe)) if not given]
    if missing:
        raise UsageError(f"Missing required argument \"[{missing[0][2:]}]\"")
    opts.topics = {t for t in opts.topic_list.split(",") if t}
    try:
        opts.brokers = None if opts.broker_list is None else [int(b) for b in opts.broker_list.split(",") if b]
    except ValueError:
        raise UsageError(f"--broker-list: {opts.broker_list!r} is not a list of broker ids") from None
    opts.client_id = client_id(opts.command_config, "log-dirs-tool")
    return opts


def java_exception_name(error: KafkaError) -> str:
    """The Java client's exception class for an error (KAFKA_STORAGE_ERROR -> ...errors.KafkaStorageException)."""
    name = type(error).__name__
    return "org.apache.kafka.common.errors." + (name[:-len("Error")] if name.endswith("Error") else name) + "Exception"


def describe_json(by_broker: dict[int, dict[str, LogDirDescription]], topics: set[str]) -> str:
    """LogDirsCommand.formatAsJson: Kafka's field names and order, compact as Jackson writes it."""
    brokers = []
    for broker, dirs in by_broker.items():
        log_dirs = []
        for log_dir, description in dirs.items():
            partitions = [{"partition": f"{tp.topic}-{tp.partition}", "size": info.size, "offsetLag": info.offset_lag,
                           "isFuture": info.is_future}
                          for tp, info in description.replicas.items() if not topics or tp.topic in topics]
            error = None if description.error is None else java_exception_name(description.error)
            log_dirs.append({"logDir": log_dir, "error": error, "partitions": partitions})
        brokers.append({"broker": broker, "logDirs": log_dirs})
    return json.dumps({"version": 1, "brokers": brokers}, separators=(",", ":"))


def _run(opts: argparse.Namespace) -> int:
    async def work(admin: Any) -> tuple[list[int], dict[int, dict[str, LogDirDescription]]]:
        brokers = opts.brokers
        if brokers is None:
            brokers = [b.node_id for b in (await admin.describe_cluster()).brokers]
        print("Querying brokers for log directories information")
        return brokers, await admin.describe_log_dirs(brokers=brokers)
    brokers, by_broker = run_admin(opts, work)
    print(f"Received log directory information from brokers {','.join(str(b) for b in brokers)}")
    print(describe_json({b: by_broker[b] for b in brokers if b in by_broker}, opts.topics))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(parse_args, _run, argv, ((KafkaError, OSError), failure_report("Error: {message}")))


if __name__ == "__main__":
    sys.exit(main())
