"""odradek-consumer-groups: list, describe, delete consumer groups and reset or delete their offsets, as
Kafka's kafka-consumer-groups.sh.

Flags, checks, messages and the column layouts follow Kafka 2.8's ConsumerGroupCommand (CONVENTIONS.md
§1): exactly one action (--list, --describe, --delete, --reset-offsets, --delete-offsets); --describe
shows offsets and lag by default, or --members [--verbose] or --state; --reset-offsets plans by default
(--dry-run) and commits with --execute, only for groups without members. Notes such as "Consumer
group 'g' has no active members." go to stderr, "Error: ..." lines to stdout, as Kafka prints them.

Two deliberate differences: a failed command exits 1 (Kafka 2.8 printed the error and exited 0), and
scenario/execution flags given without --reset-offsets are refused instead of silently ignored.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from datetime import datetime
from typing import Any, Sequence

from ..protocol.errors import KafkaError  # type: ignore[attr-defined]
from ..clients.admin.client import EARLIEST, LATEST
from ..clients.admin.groups import ConsumerGroupDescription
from ..clients.types import TopicPartition
from .common import (
    AdminCommand, Parser, UsageError, client_id, error_message, failure_report, parse_known, run_admin, run_tool,
)

MISSING = "-"
GROUP_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")
_ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
_SCENARIOS = ("to_offset", "to_datetime", "by_duration", "to_earliest", "to_latest", "to_current", "shift_by",
              "from_file")
_RESET_ONLY = (*_SCENARIOS, "dry_run", "execute", "export", "all_topics")
_NO_EXECUTE_WARNING = (
    "WARN: No action will be performed as the --execute option is missing.In a future major release, the default "
    "behavior of this command will be to prompt the user before executing the reset rather than doing a dry run. "
    "You should add the --dry-run option explicitly if you are scripting this command and want to keep the current "
    "default behavior without prompting.")


def _flag(dest: str) -> str:
    return f"[{dest.replace('_', '-')}]"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="odradek-consumer-groups", allow_abbrev=False,
                    description="This tool helps to list all consumer groups, describe a consumer group, delete "
                                "consumer group info, or reset consumer group offsets.")
    add = parser.add_argument
    add("--bootstrap-server", metavar="<String: server to connect to>", help="REQUIRED: The server(s) to connect to.")
    add("--group", action="append", default=[], metavar="<String: consumer group>",
        help="The consumer group we wish to act on (repeatable).")
    add("--topic", action="append", default=[], metavar="<String: topic>",
        help="The topic whose offsets to reset or delete; partitions as 'topic1:0,1,2'. Repeatable.")
    add("--all-topics", action="store_true", help="Consider all topics assigned to a group in the reset-offsets process.")
    add("--all-groups", action="store_true", help="Apply to all consumer groups.")
    add("--list", action="store_true", help="List all consumer groups.")
    add("--describe", action="store_true",
        help="Describe consumer group and list offset lag (number of messages not yet processed) related to given group.")
    add("--delete", action="store_true", help="Pass in groups to delete topic partition offsets and ownership "
                                              "information over the entire consumer group.")
    add("--delete-offsets", action="store_true", help="Delete offsets of consumer group. Supports one consumer group "
                                                      "at the time, and multiple topics.")
    add("--reset-offsets", action="store_true", help="Reset offsets of consumer group (inactive groups only).")
    add("--timeout", type=int, default=5000, metavar="<Long: timeout (ms)>",
        help="The timeout for some use cases, e.g. describing a group (default: 5000).")
    add("--command-config", metavar="<String: command config property file>",
        help="Property file containing configs to be passed to Admin Client (client.id is used).")
    add("--dry-run", action="store_true", help="Only show results without executing changes (the default).")
    add("--execute", action="store_true", help="Execute operation. Supported operations: reset-offsets.")
    add("--export", action="store_true", help="Export operation execution to a CSV format.")
    add("--to-offset", type=int, metavar="<Long: offset>", help="Reset offsets to a specific offset.")
    add("--from-file", metavar="<String: path to CSV file>", help="Reset offsets to values defined in CSV file.")
    add("--to-datetime", metavar="<String: datetime>",
        help="Reset offsets to offset from datetime. Format: 'YYYY-MM-DDTHH:mm:SS.sss'")
    add("--by-duration", metavar="<String: duration>",
        help="Reset offsets to offset by duration from current timestamp. Format: 'PnDTnHnMnS'")
    add("--to-earliest", action="store_true", help="Reset offsets to earliest offset.")
    add("--to-latest", action="store_true", help="Reset offsets to latest offset.")
    add("--to-current", action="store_true", help="Reset offsets to current offset.")
    add("--shift-by", type=int, metavar="<Long: number-of-offsets>",
        help="Reset offsets shifting current offset by 'n', where 'n' can be positive or negative.")
    add("--members", action="store_true", help="Describe members of the group (with --describe).")
    add("--verbose", action="store_true", help="Provide additional information when describing the group.")
    add("--offsets", action="store_true", help="Describe the group's offsets and lag (the default of --describe).")
    add("--state", nargs="?", const="", metavar="<String>",
        help="With --describe, the state of the group; with --list, the state of all groups (optionally only "
             "those in the given comma-separated states).")
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    return parse_known(build_parser(), argv, _check)


def _given(opts: argparse.Namespace, dest: str) -> bool:
    value = getattr(opts, dest)
    return value not in (None, False, [])


def _check(opts: argparse.Namespace) -> None:
    """ConsumerGroupCommandOptions.checkArgs (Kafka 2.8) with jopt-simple's wording."""
    if not opts.bootstrap_server:
        raise UsageError('Missing required argument "[bootstrap-server]"')
    if sum(_given(opts, a) for a in _ACTIONS) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
                         "--delete-offsets")
    action = next(a for a in _ACTIONS if _given(opts, a))
    for option in ("members", "verbose", "offsets"):
        if _given(opts, option) and not opts.describe:
            raise UsageError(f"Option(s) [{option}] are unavailable given other options on the command line")
    if opts.state is not None and not (opts.describe or opts.list):
        raise UsageError("Option(s) [state] are unavailable given other options on the command line")
    for option in _RESET_ONLY:  # Kafka ignores these elsewhere; we name the mistake
        if _given(opts, option) and not opts.reset_offsets:
            raise UsageError(f'Option "{_flag(option)}" can\'t be used with option "{_flag(action)}"')
    scope = "Option [{0}] takes one of these options: [group], [all-groups]"
    if opts.describe:
        if not opts.group and not opts.all_groups:
            raise UsageError(scope.format("describe"))
        if sum((opts.members, opts.offsets, opts.state is not None)) > 1:
            raise UsageError("Option [describe] takes at most one of these options: [members], [offsets], [state]")
        if opts.state:
            raise UsageError("Option [describe] does not take a value for [state]")
    if opts.delete:
        if not opts.group and not opts.all_groups:
            raise UsageError(scope.format("delete"))
        if opts.topic:
            raise UsageError("The consumer does not support topic-specific offset deletion from a consumer group.")
    if opts.delete_offsets and (not opts.group or not opts.topic):
        raise UsageError("Option [delete-offsets] takes the following options: [group], [topic]")
    if opts.reset_offsets:
        _check_reset(opts)
    if opts.group and opts.all_groups:
        raise UsageError('Option "[group]" can\'t be used with option "[all-groups]"')
    if opts.group and opts.list:
        raise UsageError('Option "[group]" can\'t be used with option "[list]"')
    if opts.topic and (opts.list or opts.describe):
        raise UsageError(f'Option "[topic]" can\'t be used with option "{_flag(action)}"')
    if opts.timeout <= 0:
        raise UsageError(f"Invalid --timeout {opts.timeout}: must be a positive number of milliseconds")
    opts.list_states = _parse_states(opts.state) if opts.list and opts.state else None
    opts.client_id = client_id(opts.command_config, "odradek-consumer-groups")


def _check_reset(opts: argparse.Namespace) -> None:
    if opts.dry_run and opts.execute:
        raise UsageError("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
    if not opts.group and not opts.all_groups:
        raise UsageError("Option [reset-offsets] takes one of these options: [group], [all-groups]")
    scenarios = [s for s in _SCENARIOS if _given(opts, s)]
    if len(scenarios) > 1:
        raise UsageError(f'Option "{_flag(scenarios[0])}" can\'t be used with option "{_flag(scenarios[1])}"')
    if not scenarios:
        raise UsageError("Option '[reset-offsets]' requires one of the following scenarios: "
                         + ", ".join(_flag(s) for s in _SCENARIOS))
    if not opts.all_topics and not opts.topic and not opts.from_file:
        raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    if opts.all_topics and opts.topic:
        raise UsageError('Option "[all-topics]" can\'t be used with option "[topic]"')
    opts.scopes = [parse_topic_scope(t) for t in opts.topic]
    opts.timestamp = parse_datetime(opts.to_datetime) if opts.to_datetime else None
    opts.duration_ms = parse_duration(opts.by_duration) if opts.by_duration else None
    if not opts.dry_run and not opts.execute:
        print(_NO_EXECUTE_WARNING, file=sys.stderr)


def parse_topic_scope(text: str) -> tuple[str, list[int] | None]:
    """'t' -> ('t', None: every partition); 't:0,2' -> ('t', [0, 2])."""
    topic, sep, partitions = text.partition(":")
    if not topic:
        raise UsageError(f"Invalid --topic {text!r}: expected topic or topic:partition,...")
    if not sep:
        return topic, None
    try:
        return topic, [int(p) for p in partitions.split(",")]
    except ValueError:
        raise UsageError(f"Invalid --topic {text!r}: partitions must be integers, as in topic:0,1,2") from None


def parse_datetime(text: str) -> int:
    """Kafka's Utils.getDateTime: 'YYYY-MM-DDTHH:mm:SS.sss' in local time, or with 'Z' / '+hh:mm' -> epoch ms."""
    date, sep, clock = text.partition("T")
    if not sep or not clock:
        raise UsageError(f"Error parsing --to-datetime {text!r}: it does not contain a 'T' according to ISO8601 "
                         "format (expected 'YYYY-MM-DDTHH:mm:SS.sss')")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}(Z|[+-]\d{2}:?\d{2}|[+-]\d{2})?", text):
        raise UsageError(f"Error parsing --to-datetime {text!r}: expected 'YYYY-MM-DDTHH:mm:SS.sss' with an "
                         "optional zone ('Z', '+hh:mm')")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageError(f"Error parsing --to-datetime {text!r}: {exc}") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # local time, as SimpleDateFormat without a zone
    return int(moment.timestamp() * 1000)


_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+(?:[.,]\d{1,9})?)S)?)?",
                       re.IGNORECASE)


def parse_duration(text: str) -> int:
    """java.time.Duration.parse's 'PnDTnHnMn.nS' -> milliseconds."""
    match = _DURATION.fullmatch(text)
    if not match or text.upper().endswith("T") or not any(match.groups()[1:]):
        raise UsageError(f"Error parsing --by-duration {text!r}: expected an ISO-8601 duration 'PnDTnHnMnS', "
                         "e.g. PT1H30M or P1D")
    sign, days, hours, minutes, seconds = match.groups()
    total = (int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60
             + float((seconds or "0").replace(",", ".")))
    return int(round(total * 1000)) * (-1 if sign == "-" else 1)


def parse_reset_plan(text: str, groups: list[str]) -> dict[str, dict[TopicPartition, int]]:
    """A --from-file/--export CSV: 'topic,partition,offset' for one --group, else 'group,topic,partition,offset'."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    single = len(groups) == 1 and bool(lines) and len(lines[0].split(",")) == 3
    plan: dict[str, dict[TopicPartition, int]] = {}
    for line in lines:
        fields = line.split(",")
        try:
            if single:
                group, (topic, partition, offset) = groups[0], fields
            else:
                group, topic, partition, offset = fields
            plan.setdefault(group, {})[TopicPartition(topic, int(partition))] = int(offset)
        except ValueError:
            raise UsageError(f"Invalid line in --from-file: {line!r} (expected "
                             f"{'topic,partition,offset' if single else 'group,topic,partition,offset'})") from None
    return plan


class ConsumerGroupCommand(AdminCommand):
    def print_error(self, message: str) -> None:
        self.emit(f"\nError: {message}")

    async def run(self) -> None:
        action = next(a for a in _ACTIONS if _given(self.opts, a))
        await getattr(self, f"_{action}")()

    async def _group_ids(self) -> list[str]:
        if self.opts.all_groups:
            return [g.group_id for g in await self.admin.list_consumer_groups(timeout_ms=self.opts.timeout)]
        return list(dict.fromkeys(self.opts.group))

    async def _describe_groups(self, group_ids: list[str]) -> dict[str, ConsumerGroupDescription]:
        described = await self.admin.describe_consumer_groups(group_ids, timeout_ms=self.opts.timeout)
        for d in described:  # a Connect worker group, say: the Java AdminClient refuses it (Kafka 2.8)
            if d.protocol_type not in ("consumer", ""):
                raise ValueError(f"GroupId {d.group_id} is not a consumer group ({d.protocol_type}).")
        return {d.group_id: d for d in sorted(described, key=lambda d: d.group_id)}

    # -- --list -----------------------------------------------------------------------------------
    async def _list(self) -> None:
        if self.opts.state is None:
            for listing in await self.admin.list_consumer_groups(timeout_ms=self.opts.timeout):
                self.emit(listing.group_id)
            return
        listings = await self.admin.list_consumer_groups(states=self.opts.list_states, timeout_ms=self.opts.timeout)
        width = max([15] + [len(g.group_id) for g in listings])
        self.emit(f"{'GROUP':<{width}} STATE")
        for g in listings:
            self.emit(f"{g.group_id:<{width}} {g.state or 'Unknown'}")

    # -- --describe -------------------------------------------------------------------------------
    def _should_print(self, group: str, state: str, rows: int) -> bool:
        """ConsumerGroupService.shouldPrintMemberState."""
        if state == "Dead":
            self.print_error(f"Consumer group '{group}' does not exist.")
        elif state == "Empty":
            self.note(f"\nConsumer group '{group}' has no active members.")
        elif state in ("PreparingRebalance", "CompletingRebalance"):
            self.note(f"\nWarning: Consumer group '{group}' is rebalancing.")
        return state != "Dead" and rows > 0

    async def _describe(self) -> None:
        groups = await self._describe_groups(await self._group_ids())
        if self.opts.members:
            self._print_members(groups)
        elif self.opts.state is not None:
            self._print_states(groups)
        else:
            for group_id, description in groups.items():
                rows = await self._offset_rows(description)
                if self._should_print(group_id, description.state, len(rows)):
                    self._print_offsets(rows)

    async def _offset_rows(self, group: ConsumerGroupDescription) -> list[tuple[Any, ...]]:
        """(group, topic, partition, current, log end, lag, consumer id, host, client id) rows: the
        members' partitions (biggest assignment first), then committed partitions nobody owns."""
        if group.state == "Dead":
            return []
        committed = await self.admin.list_consumer_group_offsets(group.group_id, timeout_ms=self.opts.timeout)
        owners = [(m, tp) for m in sorted((m for m in group.members if m.assignment),
                                          key=lambda m: -len(m.assignment)) for tp in m.assignment]
        owned = {tp for _, tp in owners}
        unowned = sorted(tp for tp in committed if tp not in owned)
        ends = await self.admin.list_offsets({tp: LATEST for tp in [*owned, *unowned]}, raise_errors=False)
        rows = []
        for member, tp in [*owners, *((None, tp) for tp in unowned)]:
            current = committed[tp].offset if tp in committed else None
            end = ends.get(tp)
            end = end if isinstance(end, int) else None
            lag = end - current if current is not None and current != -1 and end is not None else None
            who = (member.member_id, member.host, member.client_id) if member else (MISSING, MISSING, MISSING)
            rows.append((group.group_id, tp.topic, tp.partition, current, end, lag, *who))
        return rows

    def _print_offsets(self, rows: list[tuple[Any, ...]]) -> None:
        shown = [tuple(MISSING if v is None else str(v) for v in row) for row in rows]
        group_w, topic_w, consumer_w, host_w = (max([15] + [len(r[i]) for r in shown]) for i in (0, 1, 6, 7))
        fmt = (f"{{:<{group_w}}} {{:<{topic_w}}} {{:<10}} {{:<15}} {{:<15}} {{:<15}} {{:<{consumer_w}}} "
               f"{{:<{host_w}}} {{}}")
        self.emit("\n" + fmt.format("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                    "CONSUMER-ID", "HOST", "CLIENT-ID"))
        for row in shown:
            self.emit(fmt.format(*row))

    def _print_members(self, groups: dict[str, ConsumerGroupDescription]) -> None:
        verbose = self.opts.verbose
        for group_id, group in groups.items():
            if not self._should_print(group_id, group.state, len(group.members)):
                continue
            members = group.members
            instance = any(m.group_instance_id for m in members)
            widths = [max([minimum] + [len(value(m)) for m in members]) for minimum, value in (
                (15, lambda m: group_id), (15, lambda m: m.member_id), (17, lambda m: m.group_instance_id or ""),
                (15, lambda m: m.host), (15, lambda m: m.client_id))]
            columns = [0, 1, 2, 3, 4] if instance else [0, 1, 3, 4]
            titles = ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID"]
            fmt = " ".join(f"{{:<{widths[i]}}}" for i in columns) + " {:<15} "
            self.emit("\n" + fmt.format(*(titles[i] for i in columns), "#PARTITIONS") + ("ASSIGNMENT" if verbose else ""))
            for m in members:
                values = [group_id, m.member_id, m.group_instance_id or "", m.host, m.client_id]
                line = fmt.format(*(values[i] for i in columns), len(m.assignment))
                if verbose:
                    line += assignment_text(m.assignment)
                self.emit(line)

    def _print_states(self, groups: dict[str, ConsumerGroupDescription]) -> None:
        for group_id, group in groups.items():
            if not self._should_print(group_id, group.state, 1):
                continue
            c = group.coordinator
            coordinator = f"{c.host}:{c.port} ({c.node_id})"
            width = max(25, len(coordinator))  # Kafka sizes the GROUP column by the coordinator's text
            fmt = f"{{:<{width}}} {{:<25}} {{:<20}} {{:<15}} {{}}"
            self.emit("\n" + fmt.format("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"))
            self.emit(fmt.format(group_id, coordinator, group.partition_assignor, group.state, len(group.members)))

    # -- --delete ---------------------------------------------------------------------------------
    async def _delete(self) -> None:
        results = await self.admin.delete_consumer_groups(await self._group_ids(), timeout_ms=self.opts.timeout,
                                                          raise_errors=False)
        succeeded = [g for g, error in results.items() if error is None]
        failed = {g: error for g, error in results.items() if error is not None}
        quoted = ", ".join(f"'{g}'" for g in succeeded)
        if not failed:
            self.emit(f"Deletion of requested consumer groups ({quoted}) was successful.")
            return
        self.print_error("Deletion of some consumer groups failed:")
        for group, error in failed.items():
            self.emit(f"* Group '{group}' could not be deleted due to: {type(error).__name__}: {error_message(error)}")
        if succeeded:
            self.emit(f"\nThese consumer groups were deleted successfully: {quoted}")
        raise _Failed()

    # -- --delete-offsets -------------------------------------------------------------------------
    async def _delete_offsets(self) -> None:
        group = self.opts.group[0]
        topics = [parse_topic_scope(t) for t in self.opts.topic]
        results: dict[TopicPartition, str | None] = {}
        partitions = []
        for topic, numbers in topics:
            if numbers is not None:
                partitions += [TopicPartition(topic, p) for p in numbers]
                continue
            try:
                [description] = await self.admin.describe_topics([topic])
                partitions += [TopicPartition(topic, p.partition) for p in description.partitions]
            except KafkaError as exc:
                results[TopicPartition(topic, -1)] = error_message(exc)
        top_level: KafkaError | None = None
        try:
            answers = await self.admin.delete_consumer_group_offsets(group, partitions, timeout_ms=self.opts.timeout,
                                                                     raise_errors=False)
            results.update({tp: None if e is None else error_message(e) for tp, e in answers.items()})
        except KafkaError as exc:
            top_level = exc
            results.update({tp: error_message(exc) for tp in partitions})
        if top_level is None and not any(results.values()):
            self.emit(f"Request succeed for deleting offsets with topic {', '.join(self.opts.topic)} group {group}")
        else:
            name = type(top_level).__name__ if top_level else ""
            self.print_error({
                "InvalidGroupIdError": f"'{group}' is not valid.",
                "GroupIdNotFoundError": f"'{group}' does not exist.",
                "GroupAuthorizationFailedError": f"Access to '{group}' is not authorized.",
                "NonEmptyGroupError": f"Deleting offsets of a consumer group '{group}' is forbidden if the group is "
                                      "not empty.",
            }.get(name, "Encounter some partition level error, see the follow-up details:" if not top_level
                  else f"Encounter some unknown error: {error_message(top_level)}"))
        self.emit("\n%-30s %-15s %-15s" % ("TOPIC", "PARTITION", "STATUS"))
        for tp in sorted(results, key=lambda tp: tp.topic + str(tp.partition)):
            error = results[tp]
            self.emit("%-30s %-15s %-15s" % (tp.topic, tp.partition if tp.partition >= 0 else "Not Provided",
                                            f"Error: {error}" if error else "Successful"))
        if top_level is not None or any(results.values()):
            raise _Failed()

    # -- --reset-offsets --------------------------------------------------------------------------
    async def _reset_offsets(self) -> None:
        plan_file = None
        if self.opts.from_file:
            try:
                with open(self.opts.from_file, encoding="utf-8") as f:
                    plan_file = parse_reset_plan(f.read(), self.opts.group)
            except OSError as exc:
                raise UsageError(f"cannot read --from-file {self.opts.from_file}: {exc.strerror}") from None
        plans: dict[str, dict[TopicPartition, int]] = {}
        for group_id, group in (await self._describe_groups(await self._group_ids())).items():
            if group.state not in ("Empty", "Dead"):
                self.print_error(f"Assignments can only be reset if the group '{group_id}' is inactive, but the "
                                 f"current state is {group.state}.")
                plans[group_id] = {}
                continue
            plan = await self._plan(group_id, plan_file)
            if self.opts.execute and plan:
                await self.admin.alter_consumer_group_offsets(group_id, plan, timeout_ms=self.opts.timeout)
            plans[group_id] = plan
        if self.opts.export:
            single = len(self.opts.group) == 1
            self.emit("".join(f"{tp.topic},{tp.partition},{offset}\n" if single
                              else f"{group},{tp.topic},{tp.partition},{offset}\n"
                              for group, plan in plans.items() for tp, offset in plan.items()))
            return
        if plans:
            self.emit("\n%-30s %-30s %-10s %-15s" % ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"))
        for group, plan in plans.items():
            for tp, offset in plan.items():
                self.emit("%-30s %-30s %-10s %-15s" % (group, tp.topic, tp.partition, offset))

    async def _partitions_to_reset(self, group_id: str) -> list[TopicPartition]:
        if self.opts.all_topics:
            return list(await self.admin.list_consumer_group_offsets(group_id, timeout_ms=self.opts.timeout))
        partitions: list[TopicPartition] = []
        for topic, numbers in self.opts.scopes:
            if numbers is None:
                [description] = await self.admin.describe_topics([topic])
                numbers = [p.partition for p in description.partitions]
            partitions += [TopicPartition(topic, p) for p in numbers]
        return partitions

    async def _plan(self, group_id: str, plan_file: dict[str, dict[TopicPartition, int]] | None
                    ) -> dict[TopicPartition, int]:
        """ConsumerGroupService.prepareOffsetsToReset: the new offset of every partition in scope."""
        opts = self.opts
        if plan_file is not None:
            if group_id not in plan_file:
                self.print_error(f"No reset plan for group {group_id} found")
                return {}
            return await self._clamped(plan_file[group_id])
        partitions = sorted(await self._partitions_to_reset(group_id))
        if not partitions:
            return {}
        if opts.to_offset is not None:
            return await self._clamped({tp: opts.to_offset for tp in partitions})
        if opts.to_earliest or opts.to_latest:
            return await self._log_offsets(partitions, EARLIEST if opts.to_earliest else LATEST)
        if opts.shift_by is not None or opts.to_current:
            committed = await self.admin.list_consumer_group_offsets(group_id, timeout_ms=opts.timeout)
            if opts.to_current:  # partitions without a committed offset go to the log end
                ends = await self._log_offsets([tp for tp in partitions if tp not in committed], LATEST)
                return {tp: committed[tp].offset if tp in committed else ends[tp] for tp in partitions}
            for tp in partitions:
                if tp not in committed:
                    raise UsageError(f"Cannot shift offset for partition {tp.topic}-{tp.partition} since there is "
                                     "no current committed offset")
            return await self._clamped({tp: committed[tp].offset + opts.shift_by for tp in partitions})
        timestamp = opts.timestamp if opts.timestamp is not None else int(time.time() * 1000) - opts.duration_ms
        found = await self.admin.list_offsets({tp: timestamp for tp in partitions}, raise_errors=False)
        missing = [tp for tp, offset in found.items() if not isinstance(offset, int) or offset < 0]
        ends = await self._log_offsets(missing, LATEST)  # nothing that new: the log end, as Kafka
        return {tp: ends[tp] if tp in ends else found[tp] for tp in partitions}

    async def _log_offsets(self, partitions: list[TopicPartition], spec: int) -> dict[TopicPartition, int]:
        found = await self.admin.list_offsets({tp: spec for tp in partitions}, raise_errors=False)
        for tp, offset in found.items():
            if not isinstance(offset, int):
                which = "starting" if spec == EARLIEST else "ending"
                raise UsageError(f"Error getting {which} offset of topic partition: {tp.topic}-{tp.partition}")
        return found

    async def _clamped(self, requested: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """checkOffsetsRange: offsets past the log end go to the end, before the log start to the start."""
        starts = await self._log_offsets(list(requested), EARLIEST)
        ends = await self._log_offsets(list(requested), LATEST)
        return {tp: min(max(offset, starts[tp]), ends[tp]) for tp, offset in requested.items()}


def assignment_text(assignment: list[TopicPartition]) -> str:
    """--members --verbose's ASSIGNMENT column: 'topicA(0,1), topicB(2)', '-' when empty."""
    if not assignment:
        return MISSING
    by_topic: dict[str, list[int]] = {}
    for tp in assignment:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return ", ".join(sorted(f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in by_topic.items()))


def _parse_states(text: str) -> list[str]:
    """consumerGroupStatesFromString: comma-separated, case-insensitive."""
    known = {s.lower(): s for s in GROUP_STATES}
    states = [known.get(s.strip().lower()) for s in text.split(",")]
    if None in states:
        raise UsageError(f"Invalid state list '{text}'. Valid states are: {', '.join(GROUP_STATES)}")
    return [s for s in states if s]


class _Failed(Exception):
    """The command printed its own error lines; exit 1 without another message."""


def _run(opts: argparse.Namespace) -> None:
    run_admin(opts, lambda admin: ConsumerGroupCommand(opts, admin).run(), request_timeout_ms=opts.timeout)


def main(argv: Sequence[str] | None = None) -> int:
    # a UsageError found while running is Kafka's printUsageAndDie from the service: run_tool prints it
    return run_tool(parse_args, _run, argv, (_Failed, None),
                    ((KafkaError, OSError, ValueError),
                     failure_report("\nError: Executing consumer group command failed due to {message}")))


if __name__ == "__main__":
    sys.exit(main())
