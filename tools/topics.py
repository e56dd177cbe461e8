"""odradek-topics: create, delete, list, describe and alter topics, as Kafka's kafka-topics.sh.

Flags, messages, output and exit codes follow Kafka 2.8's TopicCommand in its --bootstrap-server
mode (CONVENTIONS.md §1): exactly one action; ``--topic`` is a regular expression (full match, ','
meaning '|') for --list/--describe/--delete/--alter; describe prints the topic line then one
tab-separated line per partition, and only the partition lines when a filter such as
--under-replicated-partitions is given. A usage mistake prints one line on stderr and exits 1; a
failed command prints "Error while executing topic command : <message>" and exits 1.

``--zookeeper`` is refused as Kafka 3.0 refuses it: this cluster is administered through brokers.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, Sequence

from ..protocol.errors import KafkaError, TopicAlreadyExistsError  # type: ignore[attr-defined]
from ..clients.admin.client import ConfigResource, ConfigResourceType, NewPartitions, NewTopic, TopicDescription
from .common import (
    AdminCommand, Parser, UsageError, client_id, error_message, failure_report, parse_known, run_admin, run_tool,
)

__all__ = ["main", "parse_args", "UsageError", "error_message", "topic_line", "partition_line"]

_ACTIONS = ("list", "describe", "create", "alter", "delete")
_REPORT_FILTERS = ("under_replicated_partitions", "unavailable_partitions", "under_min_isr_partitions",
                   "at_min_isr_partitions")  # partition filters; --topics-with-overrides filters topics
_COLLISION_WARNING = ("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') "
                      "could collide. To avoid issues it is best to use either, but not both.")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="odradek-topics", allow_abbrev=False,
                     description="This tool helps to create, delete, describe, or change a topic.")
    add = parser.add_argument
    add("--bootstrap-server", metavar="<String: server to connect to>",
        help="REQUIRED: The Kafka server to connect to.")
    add("--zookeeper", help=argparse.SUPPRESS)
    add("--command-config", metavar="<String: command config property file>",
        help="Property file containing configs to be passed to Admin Client (client.id is used).")
    for action, text in (("list", "List all available topics."),
                         ("describe", "List details for the given topics."),
                         ("create", "Create a new topic."),
                         ("alter", "Alter the number of partitions and replica assignment."),
                         ("delete", "Delete a topic")):
        add(f"--{action}", action="store_true", help=text)
    add("--topic", metavar="<String: topic>",
        help="The topic to create, alter, describe or delete. It also accepts a regular expression, except "
             "for --create option.")
    add("--partitions", type=int, metavar="<Integer: # of partitions>",
        help="The number of partitions for the topic being created or altered.")
    add("--replication-factor", type=int, metavar="<Integer: replication factor>",
        help="The replication factor for each partition in the topic being created.")
    add("--replica-assignment", metavar="<String: broker_id_for_part1_replica1 : broker_id_for_part1_replica2 , "
        "broker_id_for_part2_replica1 : broker_id_for_part2_replica2 , ...>",
        help="A list of manual partition-to-broker assignments for the topic being created or altered.")
    add("--config", action="append", default=[], metavar="<String: name=value>",
        help="A topic configuration override for the topic being created.")
    add("--if-exists", action="store_true",
        help="if set when altering, deleting or describing topics, the action will only execute if the topic "
             "exists.")
    add("--if-not-exists", action="store_true",
        help="if set when creating topics, the action will only execute if the topic does not already exist.")
    add("--exclude-internal", action="store_true",
        help="exclude internal topics when running list or describe command.")
    for name, text in (("under-replicated-partitions", "only show under replicated partitions"),
                       ("unavailable-partitions", "only show partitions whose leader is not available"),
                       ("under-min-isr-partitions", "only show partitions whose isr count is less than the "
                                                    "configured minimum"),
                       ("at-min-isr-partitions", "only show partitions whose isr count is equal to the "
                                                 "configured minimum"),
                       ("topics-with-overrides", "only show topics that have overridden configs")):
        add(f"--{name}", action="store_true", help=f"if set when describing topics, {text}.")
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    return parse_known(build_parser(), argv, _check)


def _check(opts: argparse.Namespace) -> None:
    """TopicCommandOptions.checkArgs (Kafka 2.8), with jopt-simple's wording."""
    if opts.zookeeper is not None:
        raise UsageError("zookeeper is not a recognized option")  # Kafka 3.0 (KIP-604): use --bootstrap-server
    if sum(bool(getattr(opts, a)) for a in _ACTIONS) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
    if not opts.bootstrap_server:
        raise UsageError('Missing required argument "[bootstrap-server]"')
    if not (opts.list or opts.describe) and not opts.topic:
        raise UsageError('Missing required argument "[topic]"')
    if opts.alter and opts.partitions is None:
        raise UsageError('Missing required argument "[partitions]"')
    invalid = {
        "partitions": opts.partitions is not None and not (opts.create or opts.alter),
        "replication-factor": opts.replication_factor is not None and not opts.create,
        "replica-assignment": opts.replica_assignment is not None and not (opts.create or opts.alter),
        "config": bool(opts.config) and not opts.create,
        "if-exists": opts.if_exists and not (opts.alter or opts.delete or opts.describe),
        "if-not-exists": opts.if_not_exists and not opts.create,
        "exclude-internal": opts.exclude_internal and not (opts.list or opts.describe),
    }
    invalid.update({f.replace("_", "-"): getattr(opts, f) and not opts.describe
                    for f in (*_REPORT_FILTERS, "topics_with_overrides")})
    action = next(a for a in _ACTIONS if getattr(opts, a))
    for option, bad in invalid.items():
        if bad:
            raise UsageError(f'Option "[{option}]" can\'t be used with option "[{action}]"')
    if opts.replica_assignment is not None and (opts.partitions is not None and opts.create
                                                or opts.replication_factor is not None):
        other = "partitions" if opts.partitions is not None else "replication-factor"
        raise UsageError(f'Option "[replica-assignment]" can\'t be used with option "[{other}]"')
    for item in opts.config:
        if "=" not in item:
            raise UsageError(f"Invalid topic config: all configs to be added must be in the format \"key=val\", "
                             f"got {item!r}")
    opts.assignment = _parse_assignment(opts.replica_assignment) if opts.replica_assignment else None
    opts.client_id = client_id(opts.command_config, "odradek-topics")


def _parse_assignment(text: str) -> list[list[int]]:
    """"0:1,1:2" -> [[0, 1], [1, 2]] (TopicCommand.parseReplicaAssignment)."""
    assignment = []
    for partition, entry in enumerate(text.split(",")):
        try:
            brokers = [int(b.strip()) for b in entry.split(":")]
        except ValueError:
            raise UsageError(f"Invalid --replica-assignment {text!r}: broker ids must be integers") from None
        if len(set(brokers)) != len(brokers):
            raise UsageError(f"Partition replica lists may not contain duplicate entries: partition {partition} "
                             f"has {entry}")
        assignment.append(brokers)
    return assignment


def topic_matcher(pattern: str | None) -> Any:
    """Kafka's IncludeList: quotes dropped, ',' means '|', the whole name must match."""
    if pattern is None:
        return lambda name: True
    regex = re.compile(pattern.strip().strip("'\"").replace(",", "|"))
    return lambda name: regex.fullmatch(name) is not None


def has_collision_chars(topic: str) -> bool:
    return "." in topic or "_" in topic


class TopicCommand(AdminCommand):
    async def run(self) -> None:
        action = next(a for a in _ACTIONS if getattr(self.opts, a))
        await getattr(self, f"_{action}")()

    async def _topics(self) -> list[str]:
        matches = topic_matcher(self.opts.topic)
        names = await self.admin.list_topics(include_internal=not self.opts.exclude_internal)
        return [name for name in names if matches(name)]

    async def _existing(self) -> list[str]:
        topics = await self._topics()
        if not topics and self.opts.topic is not None and not self.opts.if_exists:
            raise ValueError(f"Topic '{self.opts.topic}' does not exist as expected")
        return topics

    async def _list(self) -> None:
        for name in await self._topics():
            self.emit(name)

    async def _create(self) -> None:
        opts = self.opts
        if has_collision_chars(opts.topic):
            self.emit(_COLLISION_WARNING)
        assignment = dict(enumerate(opts.assignment)) if opts.assignment else None
        configs = dict(item.split("=", 1) for item in opts.config)
        topic = NewTopic(opts.topic, -1 if opts.partitions is None else opts.partitions,
                         -1 if opts.replication_factor is None else opts.replication_factor,
                         replica_assignments=assignment, topic_configs=configs)
        try:
            await self.admin.create_topics([topic])
        except TopicAlreadyExistsError:
            if not opts.if_not_exists:
                raise
            return
        self.emit(f"Created topic {opts.topic}.")

    async def _delete(self) -> None:
        topics = await self._existing()
        if topics:
            await self.admin.delete_topics(topics)

    async def _alter(self) -> None:
        topics = await self._existing()
        if not topics:
            return
        descriptions = await self.admin.describe_topics(topics)
        wanted = {}
        for d in descriptions:
            if d.is_internal:
                raise ValueError(f"The number of partitions for the internal topic {d.topic} cannot be changed.")
            # As Kafka 2.8: the assignment lists every partition; only the new ones are sent.
            new = self.opts.assignment[len(d.partitions):] if self.opts.assignment else None
            wanted[d.topic] = NewPartitions(self.opts.partitions, new)
        await self.admin.create_partitions(wanted)

    async def _describe(self) -> None:
        topics = await self._existing()
        if not topics:
            return
        live = {b.node_id for b in (await self.admin.describe_cluster()).brokers}
        resources = [ConfigResource(ConfigResourceType.TOPIC, name) for name in topics]
        configs = {r.name: entries for r, entries in (await self.admin.describe_configs(resources)).items()}
        filtered = any(getattr(self.opts, f) for f in _REPORT_FILTERS)
        for description in await self.admin.describe_topics(topics):
            entries = configs.get(description.topic, {})
            # ConfigEntry.isDefault: anything not from DEFAULT_CONFIG (topic overrides, broker settings)
            non_default = [e for e in entries.values() if not e.is_default]
            if self.opts.topics_with_overrides and not non_default:
                continue
            if not filtered:
                self.emit(topic_line(description, ",".join(f"{e.name}={e.value}" for e in non_default)))
            if self.opts.topics_with_overrides:
                continue  # Kafka prints only the topic lines then
            min_isr = int(entries["min.insync.replicas"].value) if "min.insync.replicas" in entries else 1
            for partition in description.partitions:
                if not filtered or self._reported(partition, live, min_isr):
                    self.emit(partition_line(partition))

    def _reported(self, partition: Any, live: set[int], min_isr: int) -> bool:
        """DescribeOptions.maybePrintPartitionDescription (Kafka 2.8)."""
        opts, isr, leaderless = self.opts, len(partition.isr), partition.leader < 0
        return bool(opts.under_replicated_partitions and isr < len(partition.replicas)
                    or opts.unavailable_partitions and (leaderless or partition.leader not in live)
                    or opts.under_min_isr_partitions and (leaderless or isr < min_isr)
                    or opts.at_min_isr_partitions and isr == min_isr)


def topic_line(description: TopicDescription, configs: str = "") -> str:
    """TopicCommand.TopicDescription.printDescription: replication factor from the first partition;
    ``configs`` are the non-default ones, "k=v,k2=v2"."""
    first = description.partitions[0] if description.partitions else None
    line = f"Topic: {description.topic}"
    if description.topic_id.int:
        line += f"\tTopicId: {description.topic_id_string}"
    return (line + f"\tPartitionCount: {len(description.partitions)}"
            f"\tReplicationFactor: {len(first.replicas) if first else 0}\tConfigs: {configs}")


def partition_line(partition: Any) -> str:
    leader = partition.leader if partition.leader >= 0 else "none"
    return (f"\tTopic: {partition.topic}\tPartition: {partition.partition}\tLeader: {leader}"
            f"\tReplicas: {','.join(map(str, partition.replicas))}\tIsr: {','.join(map(str, partition.isr))}")


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(parse_args, lambda opts: run_admin(opts, lambda admin: TopicCommand(opts, admin).run()), argv,
                    ((KafkaError, OSError, ValueError),
                     failure_report("Error while executing topic command : {message}")))


if __name__ == "__main__":
    sys.exit(main())
