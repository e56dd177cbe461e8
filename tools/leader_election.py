"""odradek-leader-election: preferred or unclean leader elections, as Kafka 2.8's kafka-leader-election.sh.

Kafka's LeaderElectionCommand (CONVENTIONS.md §1) through the ElectLeaders API:
``--bootstrap-server`` and ``--election-type preferred|unclean`` are required, and exactly one of
``--topic t --partition p``, ``--all-topic-partitions`` or ``--path-to-json-file f``
(``{"partitions":[{"topic":"foo","partition":1}]}``). A preferred election moves leadership to the
first assigned replica only if it is in the ISR; an unclean one elects a leader for partitions that
have none, out of the ISR if need be. Output as Kafka's:

    Successfully completed leader election (PREFERRED) for partitions foo-0, foo-1
    Valid replica already elected for partitions foo-2
    Error completing leader election (PREFERRED) for partition: foo-3: <exception>: <message>

(Kafka 2.8 prints the succeeded partitions on the "Valid replica" line too, a bug fixed later; we print
the partitions that needed no election.) Failures exit 1; a usage mistake prints one line on stderr
and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from ..protocol.errors import ElectionNotNeededError, KafkaError  # type: ignore[attr-defined]
from ..clients.admin.partitions import ElectionType
from ..clients.types import TopicPartition
from .common import Parser, UsageError, client_id, error_message, failure_report, parse_known, run_admin, run_tool

__all__ = ["main", "parse_args", "parse_partitions_json", "result_lines"]

_EXCLUSIVE = ("--topic", "--all-topic-partitions", "--path-to-json-file")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="odradek-leader-election", allow_abbrev=False,
                    description="This tool attempts to elect a new leader for a set of topic partitions. The type "
                                "of elections supported are preferred replicas and unclean replicas.")
    add = parser.add_argument
    add("--bootstrap-server", metavar="<String: host:port>",
        help="A hostname and port for the broker to connect to, in the form host:port. REQUIRED.")
    add("--admin.config", dest="admin_config", metavar="<String: config file>",
        help="Configuration properties files to pass to the admin client (client.id is used)")
    add("--election-type", metavar="<[PREFERRED,UNCLEAN]: election type>",
        help="Type of election to attempt: \"preferred\" (only where the current leader is not the preferred "
             "replica) or \"unclean\" (only where the partition has no leader). REQUIRED.")
    add("--topic", metavar="<String: topic name>", help="Name of topic for which to perform an election.")
    add("--partition", type=int, metavar="<Integer: partition id>",
        help="Partition id for which to perform an election. REQUIRED if --topic is specified.")
    add("--all-topic-partitions", action="store_true",
        help="Perform election on all of the eligible topic partitions.")
    add("--path-to-json-file", metavar="<String: Path to JSON file>",
        help="The JSON file with the list of partition for which leader elections should be performed: "
             "{\"partitions\": [{\"topic\": \"foo\", \"partition\": 1}]}")
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """LeaderElectionCommandOptions.validate (Kafka 2.8), one line per mistake."""
    opts = parse_known(build_parser(), argv)
    missing = [name for name, value in (("--bootstrap-server", opts.bootstrap_server),
                                        ("--election-type", opts.election_type)) if value is None]
    if missing:
        raise UsageError(f"Missing required option(s): {', '.join(missing)}")
    try:
        opts.election = ElectionType[opts.election_type.upper()]
    except KeyError:
        raise UsageError(f"--election-type: {opts.election_type!r} is not a valid election type; accepted: "
                         f"preferred, unclean") from None
    given = [opts.topic is not None, opts.all_topic_partitions, opts.path_to_json_file is not None]
    if sum(given) == 0:
        raise UsageError(f"One and only one of the following options is required: {', '.join(_EXCLUSIVE)}")
    if sum(given) > 1:
        raise UsageError(f"Only one of the following options is required: {', '.join(_EXCLUSIVE)}")
    if opts.topic is not None and opts.partition is None:
        raise UsageError("Missing required option(s): --partition")
    if opts.topic is None and opts.partition is not None:
        raise UsageError("Option --partition is only allowed if --topic is used")
    opts.client_id = client_id(opts.admin_config, "leader-election-tool")
    return opts


def parse_partitions_json(text: str) -> list[TopicPartition]:
    """{"partitions": [{"topic": "foo", "partition": 1}]}; duplicates refused as Kafka does."""
    try:
        document = json.loads(text)
        partitions = [TopicPartition(str(e["topic"]), int(e["partition"])) for e in document["partitions"]]
    except (ValueError, KeyError, TypeError):
        raise UsageError("--path-to-json-file: expected {\"partitions\": [{\"topic\": \"foo\", \"partition\": 1}, "
                         "...]}") from None
    duplicates = sorted({tp for tp in partitions if partitions.count(tp) > 1})
    if duplicates:
        raise UsageError("Replica election data contains duplicate partitions: "
                         + ",".join(f"{t}-{p}" for t, p in duplicates))
    return partitions


def result_lines(election: ElectionType, results: dict[TopicPartition, KafkaError | None]) -> tuple[list[str], bool]:
    """The tool's output lines and whether every partition was elected or needed no election."""
    name = election.name
    succeeded = [tp for tp, e in sorted(results.items()) if e is None]
    noop = [tp for tp, e in sorted(results.items()) if isinstance(e, ElectionNotNeededError)]
    failed = [(tp, e) for tp, e in sorted(results.items()) if e is not None and not isinstance(e, ElectionNotNeededError)]
    lines = []
    if succeeded:
        lines.append(f"Successfully completed leader election ({name}) for partitions {_names(succeeded)}")
    if noop:
        lines.append(f"Valid replica already elected for partitions {_names(noop)}")
    for tp, error in failed:
        lines.append(f"Error completing leader election ({name}) for partition: {tp.topic}-{tp.partition}: "
                     f"{type(error).__name__}: {error_message(error)}")
    return lines, not failed


def _names(partitions: list[TopicPartition]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in partitions)


def _run(opts: argparse.Namespace) -> int:
    partitions: Any = None
    if opts.topic is not None:
        partitions = [TopicPartition(opts.topic, opts.partition)]
    elif opts.path_to_json_file is not None:
        try:
            with open(opts.path_to_json_file, encoding="utf-8") as f:
                partitions = parse_partitions_json(f.read())
        except OSError as exc:
            raise UsageError(f"cannot read --path-to-json-file {opts.path_to_json_file}: {exc.strerror}") from None
    results = run_admin(opts, lambda admin: admin.elect_leaders(opts.election, partitions))
    lines, ok = result_lines(opts.election, results)
    for line in lines:
        print(line)
    if not ok:
        print(f"{sum(1 for line in lines if line.startswith('Error'))} replica(s) could not be elected")
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(parse_args, _run, argv,
                    ((KafkaError, OSError), failure_report("Error while making request: {message}")))


if __name__ == "__main__":
    sys.exit(main())
