"""odradek-reassign-partitions: move partitions between brokers, as Kafka 2.8's kafka-reassign-partitions.sh.

Kafka's ReassignPartitionsCommand in its --bootstrap-server mode (CONVENTIONS.md §1), through the
AlterPartitionReassignments / ListPartitionReassignments APIs:

- ``--generate --topics-to-move-json-file f --broker-list 0,1,2`` prints the current assignment and a
  proposal (Kafka's rack-unaware AdminUtils placement, random start as Kafka's);
- ``--execute --reassignment-json-file f [--throttle B/s] [--replica-alter-log-dirs-throttle B/s] [--additional]``
  prints the current assignment (to keep for a rollback) and starts the moves; a replica given a log dir other
  than "any" is then moved to that dir of its broker (AlterReplicaLogDirs, KIP-113), asked again every 100 ms while its broker answers
  REPLICA_NOT_AVAILABLE (it is not there yet), up to ``--timeout`` ms (Kafka's executeMoves);
- ``--verify`` prints each partition's status, then each log dir move's (Kafka's replicaMoveStatesToString, from
  DescribeLogDirs), and, once nothing is moving, clears the throttles;
- ``--list`` prints the reassignments in progress, ``--cancel`` reverts those of the file and sends each log dir
  move under way back to its current dir.

JSON as Kafka's: ``{"version":1,"topics":[{"topic":"foo"}]}`` and ``{"version":1,"partitions":[{"topic":
"foo","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}``. A usage mistake prints one line on
stderr and exits 1; a failed command prints Kafka's message on stdout and exits 1.

``--throttle`` writes Kafka's leader/follower.replication.throttled.replicas topic configs and the
leader/follower.replication.throttled.rate broker configs of the brokers involved (Kafka's
modifyInterBrokerThrottle); ``--replica-alter-log-dirs-throttle`` writes replica.alter.log.dirs.io.max.bytes.per.second
on the brokers given a log dir (modifyLogDirThrottle); ``--verify`` clears them all once nothing moves
(clearAllThrottles).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any, Mapping, Sequence

from ..controller.replica_assignment import (
    AdminOperationError, RackAwareMode, assign_replicas_to_brokers, racks_for_assignment,
)
from ..protocol.errors import KafkaError, ReplicaNotAvailableError  # type: ignore[attr-defined]
from ..clients.admin.log_dirs import TopicPartitionReplica
from ..clients.admin.client import AIOAdmin, AlterConfigOp, AlterConfigOpType, ConfigResource, ConfigResourceType
from ..clients.types import TopicPartition
from .common import Parser, UsageError, client_id, error_message, failure_report, parse_known, run_admin, run_tool

__all__ = ["main", "parse_args", "parse_reassignment", "parse_replica_moves", "parse_topics", "reassignment_json",
           "propose", "status_lines", "move_status_lines", "list_text"]

_ACTIONS = ("generate", "execute", "verify", "list", "cancel")
ANY_LOG_DIR = "any"
LEADER_THROTTLE, FOLLOWER_THROTTLE = "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"
INTER_BROKER_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
LOG_DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
BROKER_THROTTLE_RATES = INTER_BROKER_RATES + (LOG_DIR_RATE,)  # what --verify clears (Kafka's brokerLevelThrottles)
CANNOT_EXECUTE = ("Cannot execute because there is an existing partition assignment.  Use --additional to override "
                  "this and create a new partition assignment in addition to the existing one. The --additional "
                  "flag can also be used to change the throttle by resubmitting the current reassignment.")
VERIFY_PERIODICALLY = ("Warning: You must run --verify periodically, until the reassignment completes, to ensure "
                       "the throttle is removed.")

Plan = dict[TopicPartition, list[int]]
Moves = dict[TopicPartitionReplica, str]  # replica -> the log dir it goes to
DYNAMIC_BROKER_CONFIG = 2  # DescribeConfigs' source of a rate set on one broker
MOVE_RETRY_S = 0.1  # Kafka's executeMoves: a replica not on its new broker yet is asked for again this often


class CommandFailed(Exception):
    """Kafka's TerseReassignmentFailureException / AdminCommandFailedException: message printed, exit 1."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="odradek-reassign-partitions", allow_abbrev=False,
                    description="This tool helps to move topic partitions between replicas.")
    add = parser.add_argument
    add("--bootstrap-server", metavar="<String: Server(s) to use for bootstrapping>",
        help="REQUIRED: the server(s) to use for bootstrapping.")
    add("--zookeeper", help=argparse.SUPPRESS)
    add("--command-config", metavar="<String: Admin client property file>",
        help="Property file containing configs to be passed to Admin Client (client.id is used).")
    add("--generate", action="store_true", help="Generate a candidate partition reassignment configuration.")
    add("--execute", action="store_true", help="Kick off the reassignment as specified by the "
                                                "--reassignment-json-file option.")
    add("--verify", action="store_true", help="Verify if the reassignment completed as specified by the "
                                               "--reassignment-json-file option; clears throttles once done.")
    add("--list", action="store_true", help="List all active partition reassignments.")
    add("--cancel", action="store_true", help="Cancel an active reassignment.")
    add("--reassignment-json-file", metavar="<String: manual assignment json file path>",
        help="The JSON file with the partition reassignment configuration.")
    add("--topics-to-move-json-file", metavar="<String: topics to reassign json file path>",
        help="Generate a reassignment configuration to move the partitions of the specified topics to the list "
             "of brokers specified by the --broker-list option.")
    add("--broker-list", metavar="<String: brokerlist>",
        help="The list of brokers to which the partitions need to be reassigned in the form \"0,1,2\".")
    add("--disable-rack-aware", action="store_true", help="Disable rack aware replica assignment")
    add("--throttle", type=int, default=-1, metavar="<Long: throttle>",
        help="The movement of partitions between brokers will be throttled to this value (bytes/sec).")
    add("--additional", action="store_true",
        help="Execute this reassignment in addition to any other ongoing ones.")
    add("--preserve-throttles", action="store_true", help="Do not modify broker or topic throttles.")
    add("--replica-alter-log-dirs-throttle", type=int, default=-1, metavar="<Long: replicaAlterLogDirsThrottle>",
        help="The movement of replicas between log directories on the same broker will be throttled to this value "
             "(bytes/sec). This option can be included with --execute when a reassignment is started, and it can "
             "be altered by resubmitting the current reassignment along with the --additional flag.")
    add("--timeout", type=int, default=10000, metavar="<Long: timeout>",
        help="The maximum time in ms to wait for log directory replica assignment to begin.")
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    opts = parse_known(build_parser(), argv)
    if opts.zookeeper is not None:
        raise UsageError("zookeeper is not a recognized option")  # administered through brokers (Kafka 3.0)
    actions = [a for a in _ACTIONS if getattr(opts, a)]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: --execute, --verify, --generate, --cancel, "
                         "or --list")
    action = actions[0]
    if not opts.bootstrap_server:
        raise UsageError('Missing required argument "[bootstrap-server]"')
    required = {"generate": ("topics-to-move-json-file", "broker-list"), "execute": ("reassignment-json-file",),
                "verify": ("reassignment-json-file",), "cancel": ("reassignment-json-file",), "list": ()}[action]
    for option in required:
        if getattr(opts, option.replace("-", "_")) is None:
            raise UsageError(f'Missing required argument "[{option}]"')
    allowed = {"generate": {"topics-to-move-json-file", "broker-list", "disable-rack-aware"},
               "execute": {"reassignment-json-file", "throttle", "replica-alter-log-dirs-throttle", "additional",
                           "timeout"},
               "verify": {"reassignment-json-file", "preserve-throttles"},
               "cancel": {"reassignment-json-file", "preserve-throttles", "timeout"}, "list": set()}[action]
    given = {"reassignment-json-file": opts.reassignment_json_file is not None,
             "topics-to-move-json-file": opts.topics_to_move_json_file is not None,
             "broker-list": opts.broker_list is not None, "disable-rack-aware": opts.disable_rack_aware,
             "throttle": opts.throttle != -1,
             "replica-alter-log-dirs-throttle": opts.replica_alter_log_dirs_throttle != -1, "additional": opts.additional,
             "preserve-throttles": opts.preserve_throttles, "timeout": opts.timeout != 10000}
    for option, present in given.items():
        if present and option not in allowed:
            raise UsageError(f'Option "[{option}]" can\'t be used with option "[{action}]"')
    if opts.broker_list is not None:
        try:
            opts.brokers = [int(b) for b in opts.broker_list.split(",")]
        except ValueError:
            raise UsageError(f"Invalid --broker-list {opts.broker_list!r}: expected broker ids such as "
                             f"\"0,1,2\"") from None
    opts.action = action
    opts.client_id = client_id(opts.command_config, "reassign-partitions-tool")
    return opts


# --- JSON ------------------------------------------------------------------------------------------------
def _read_json(path: str, option: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise UsageError(f"cannot read --{option} {path}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CommandFailed(f"Error: the --{option} {path} is not valid JSON: {exc}") from None


def parse_topics(document: Any) -> list[str]:
    """Kafka's parseTopicsData: {"version":1,"topics":[{"topic":"foo"}]}."""
    if not isinstance(document, dict) or not isinstance(document.get("topics"), list):
        raise CommandFailed("Error: The topics JSON must contain a \"topics\" list of {\"topic\": name} entries")
    topics = [entry.get("topic") for entry in document["topics"] if isinstance(entry, dict)]
    if len(topics) != len(document["topics"]) or not all(isinstance(t, str) for t in topics):
        raise CommandFailed("Error: every entry of \"topics\" needs a \"topic\" name")
    duplicates = sorted({t for t in topics if topics.count(t) > 1})
    if duplicates:
        raise CommandFailed(f"List of topics to reassign contains duplicate entries: {','.join(duplicates)}")
    return topics


def parse_reassignment(document: Any) -> Plan:
    """Kafka's parsePartitionReassignmentData and parseExecuteAssignmentArgs checks."""
    if not isinstance(document, dict) or not isinstance(document.get("partitions"), list):
        raise CommandFailed("Error: The reassignment JSON must contain a \"partitions\" list")
    plan: Plan = {}
    seen: list[TopicPartition] = []
    for entry in document["partitions"]:
        try:
            tp = TopicPartition(str(entry["topic"]), int(entry["partition"]))
            replicas = [int(r) for r in entry["replicas"]]
        except (KeyError, TypeError, ValueError):
            raise CommandFailed(f"Error: every partition needs \"topic\", \"partition\" and \"replicas\": "
                                f"{json.dumps(entry)}") from None
        log_dirs = entry.get("log_dirs")
        if log_dirs is not None:
            if not isinstance(log_dirs, list) or not all(isinstance(d, str) for d in log_dirs):
                raise CommandFailed(f"Error: \"log_dirs\" must be a list of \"any\" or absolute paths: "
                                    f"{json.dumps(entry)}")
            if len(log_dirs) != len(replicas):
                raise CommandFailed(f"Error: Size of replicas list {replicas} is different from size of log dirs "
                                    f"list {log_dirs} for partition {tp.topic}-{tp.partition}")
        seen.append(tp)
        plan[tp] = replicas
    if not plan:
        raise CommandFailed("Partition reassignment list cannot be empty")
    duplicates = sorted({tp for tp in seen if seen.count(tp) > 1})
    if duplicates:
        raise CommandFailed("Partition reassignment contains duplicate topic partitions: "
                            + ",".join(_name(tp) for tp in duplicates))
    repeated = [f"{_name(tp)} contains multiple entries for {sorted({r for r in rs if rs.count(r) > 1})}"
                for tp, rs in sorted(plan.items()) if len(set(rs)) != len(rs)]
    if repeated:
        raise CommandFailed("Partition replica lists may not contain duplicate entries: " + ". ".join(repeated))
    return plan


def parse_replica_moves(document: Any) -> Moves:
    """The replicas given a log dir other than "any" (Kafka's parsePartitionReassignmentData); call after
    parse_reassignment has checked the document."""
    moves: Moves = {}
    for entry in document["partitions"]:
        for broker, log_dir in zip(entry["replicas"], entry.get("log_dirs") or ()):
            if log_dir != ANY_LOG_DIR:
                moves[TopicPartitionReplica(str(entry["topic"]), int(entry["partition"]), int(broker))] = log_dir
    return moves


def _replica_name(replica: TopicPartitionReplica) -> str:
    return f"{replica.topic}-{replica.partition}-{replica.broker_id}"  # Java's TopicPartitionReplica.toString


def reassignment_json(plan: Plan) -> str:
    """Kafka's formatAsReassignmentJson (partitions sorted by topic then partition, log_dirs "any")."""
    return json.dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas),
         "log_dirs": [ANY_LOG_DIR] * len(replicas)} for tp, replicas in sorted(plan.items())]},
        separators=(",", ":"))


def _name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


# --- output ----------------------------------------------------------------------------------------------
def propose(current: Plan, brokers: Sequence[int], racks: Mapping[int, str] | None = None) -> Plan:
    """Kafka's calculateAssignment: each topic placed afresh on ``brokers`` with its replication factor
    (rack-aware when ``racks`` gives the brokers' racks)."""
    proposed: Plan = {}
    for topic in sorted({tp.topic for tp in current}):
        partitions = sorted(tp for tp in current if tp.topic == topic)
        factor = len(current[partitions[0]])
        for p, replicas in assign_replicas_to_brokers(brokers, len(partitions), factor, racks=racks).items():
            proposed[TopicPartition(topic, p)] = replicas
    return proposed


def status_lines(targets: Plan, ongoing: set[TopicPartition], current: Plan) -> list[str]:
    """Kafka's partitionReassignmentStatesToString."""
    lines = ["Status of partition reassignment:"]
    for tp in sorted(targets):
        if tp in ongoing:
            lines.append(f"Reassignment of partition {_name(tp)} is still in progress.")
        elif current.get(tp) == targets[tp]:
            lines.append(f"Reassignment of partition {_name(tp)} is complete.")
        else:
            lines.append(f"There is no active reassignment of partition {_name(tp)}, but replica set is "
                         f"{','.join(map(str, current.get(tp, [])))} rather than {','.join(map(str, targets[tp]))}.")
    return lines


def move_status_lines(moves: Moves, found: Mapping[TopicPartitionReplica, tuple[str | None, str | None]]) -> list[str]:
    """Kafka's replicaMoveStatesToString; ``found``: replica -> (current dir, future dir) of each one its broker
    listed (a replica missing there is not in any live dir)."""
    lines = []
    for replica in sorted(moves):
        target, where = moves[replica], f"Partition {replica.topic}-{replica.partition}"
        if replica not in found:
            lines.append(f"{where} cannot be found in any live log directory on broker {replica.broker_id}.")
            continue
        current, future = found[replica]
        if current is None:
            lines.append(f"{where} is not found in any live log dir on broker {replica.broker_id}. There is likely "
                         f"an offline log directory on the broker.")
        elif future is None and current == target:
            lines.append(f"Reassignment of replica {_replica_name(replica)} completed successfully.")
        elif future is None:
            lines.append(f"{where} on broker {replica.broker_id} is not being moved from log dir {current} to "
                         f"{target}.")
        elif future == target:
            lines.append(f"Reassignment of replica {_replica_name(replica)} is still in progress.")
        else:
            lines.append(f"{where} on broker {replica.broker_id} is being moved to log dir {future} instead of "
                         f"{target}.")
    return lines


def list_text(ongoing: dict[TopicPartition, Any]) -> str:
    """Kafka's curReassignmentsToString."""
    lines = []
    for tp, r in sorted(ongoing.items()):
        adding = f" adding: {','.join(map(str, r.adding_replicas))}." if r.adding_replicas else ""
        removing = f" removing: {','.join(map(str, r.removing_replicas))}." if r.removing_replicas else ""
        lines.append(f"{_name(tp)}: replicas: {','.join(map(str, r.replicas))}.{adding}{removing}")
    return "Current partition reassignments:\n" + "\n".join(lines) if lines else "No partition reassignments found."


# --- actions ---------------------------------------------------------------------------------------------
async def _current_assignment(admin: AIOAdmin, topics: Sequence[str]) -> Plan:
    current: Plan = {}
    for description in await admin.describe_topics(sorted(set(topics))):
        for p in description.partitions:
            current[TopicPartition(p.topic, p.partition)] = list(p.replicas)
    return current


async def _generate(admin: AIOAdmin, opts: argparse.Namespace) -> None:
    topics = parse_topics(_read_json(opts.topics_to_move_json_file, "topics-to-move-json-file"))
    duplicates = sorted({b for b in opts.brokers if opts.brokers.count(b) > 1})
    if duplicates:
        raise CommandFailed(f"Broker list contains duplicate entries: {','.join(map(str, duplicates))}")
    current = await _current_assignment(admin, topics)
    live = {b.node_id: b.rack for b in (await admin.describe_cluster()).brokers}
    brokers = [b for b in opts.brokers if b in live]  # Kafka omits brokers it cannot find
    mode = RackAwareMode.DISABLED if opts.disable_rack_aware else RackAwareMode.ENFORCED
    try:
        racks = racks_for_assignment({b: live[b] for b in brokers}, mode)
    except AdminOperationError as e:
        raise CommandFailed(f"Error: {e.detail}") from None
    proposed = propose(current, brokers, racks)
    print(f"Current partition replica assignment\n{reassignment_json(current)}\n")
    print(f"Proposed partition reassignment configuration\n{reassignment_json(proposed)}")


async def _execute(admin: AIOAdmin, opts: argparse.Namespace) -> None:
    document = _read_json(opts.reassignment_json_file, "reassignment-json-file")
    plan = parse_reassignment(document)
    moves = parse_replica_moves(document)
    if not opts.additional and await admin.list_partition_reassignments():
        raise CommandFailed(CANNOT_EXECUTE)
    known = {b.node_id for b in (await admin.describe_cluster()).brokers}
    unknown = sorted({b for replicas in plan.values() for b in replicas} - known)
    if unknown:
        raise CommandFailed(f"Error: Unknown broker id {unknown[0]}")
    current = await _current_assignment(admin, [tp.topic for tp in plan])
    print("Current partition replica assignment\n\n"
          f"{reassignment_json({tp: r for tp, r in current.items() if tp in plan})}\n\n"
          "Save this to use as the --reassignment-json-file option during rollback")
    if opts.throttle >= 0 or opts.replica_alter_log_dirs_throttle >= 0:
        print(VERIFY_PERIODICALLY)
    if opts.throttle >= 0:
        await _set_throttled_replicas(admin, plan, current)
        brokers = {b for tp in plan for b in plan[tp] + current.get(tp, [])}  # calculateReassigningBrokers
        await admin.incremental_alter_configs({
            ConfigResource(ConfigResourceType.BROKER, str(b)): [AlterConfigOp(k, str(opts.throttle))
                                                                for k in INTER_BROKER_RATES]
            for b in sorted(brokers)})
        print(f"The inter-broker throttle limit was set to {opts.throttle} B/s")
    if opts.replica_alter_log_dirs_throttle >= 0:  # Kafka's modifyLogDirThrottle: the brokers given a log dir
        await admin.incremental_alter_configs({
            ConfigResource(ConfigResourceType.BROKER, str(b)): [AlterConfigOp(LOG_DIR_RATE,
                                                                              str(opts.replica_alter_log_dirs_throttle))]
            for b in sorted({r.broker_id for r in moves})})
        print(f"The replica-alter-dir throttle limit was set to {opts.replica_alter_log_dirs_throttle} B/s")
    errors = {tp: e for tp, e in (await admin.alter_partition_reassignments(plan)).items() if e is not None}
    if errors:
        raise CommandFailed("Error reassigning partition(s):\n" + "\n".join(
            f"{_name(tp)}: {error_message(e)}" for tp, e in sorted(errors.items())))
    print(f"Successfully started partition reassignment{'' if len(plan) == 1 else 's'} for "
          + ",".join(_name(tp) for tp in sorted(plan)))
    if moves:
        await _execute_moves(admin, moves, opts.timeout)


async def _execute_moves(admin: AIOAdmin, moves: Moves, timeout_ms: int) -> None:
    """Kafka's executeMoves: a replica whose broker does not hold it yet (REPLICA_NOT_AVAILABLE, a replica
    being added) is asked for again until it does or ``timeout_ms`` passed; any other error fails the command."""
    deadline = time.monotonic() + timeout_ms / 1000
    pending = dict(moves)
    while True:
        results = await admin.alter_replica_log_dirs(pending)
        for replica, error in sorted(results.items()):
            if error is not None and not isinstance(error, ReplicaNotAvailableError):
                raise CommandFailed(f"Error: Failed to alter dir for {_replica_name(replica)}: {error_message(error)}")
        started = sorted(r for r, error in results.items() if error is None)
        if started:
            print(f"Successfully started log directory move{'' if len(started) == 1 else 's'} for: "
                  + ",".join(_replica_name(r) for r in started))
        for replica in started:
            del pending[replica]
        if not pending:
            return
        if time.monotonic() >= deadline:
            raise CommandFailed(f"Timed out before log directory move{'' if len(pending) == 1 else 's'} could be "
                                f"started for: " + ",".join(_replica_name(r) for r in sorted(pending)))
        await asyncio.sleep(MOVE_RETRY_S)


async def _log_dir_moves(admin: AIOAdmin, moves: Moves) -> dict[TopicPartitionReplica, tuple[str | None, str | None]]:
    """Kafka's describeReplicaLogDirs: for each replica its broker lists, (current dir, future dir)."""
    if not moves:
        return {}
    described = await admin.describe_log_dirs([TopicPartition(r.topic, r.partition) for r in moves],
                                              brokers=sorted({r.broker_id for r in moves}))
    found: dict[TopicPartitionReplica, tuple[str | None, str | None]] = {}
    for broker, dirs in described.items():
        for log_dir, description in dirs.items():
            for tp, info in description.replicas.items():
                replica = TopicPartitionReplica(tp.topic, tp.partition, broker)
                current, future = found.get(replica, (None, None))
                found[replica] = (current, log_dir) if info.is_future else (log_dir, future)
    return found


async def _set_throttled_replicas(admin: AIOAdmin, plan: Plan, current: Plan) -> None:
    """Kafka's calculateLeaderThrottles / calculateFollowerThrottles: sources lead-throttled, new replicas
    follow-throttled, as "partition:broker" lists per topic."""
    changes: dict[ConfigResource, list[AlterConfigOp]] = {}
    for topic in sorted({tp.topic for tp in plan}):
        leaders, followers = [], []
        for tp in sorted(t for t in plan if t.topic == topic):
            sources = current.get(tp, [])
            leaders += [f"{tp.partition}:{b}" for b in sources]
            followers += [f"{tp.partition}:{b}" for b in plan[tp] if b not in sources]
        ops = [AlterConfigOp(LEADER_THROTTLE, ",".join(leaders))]
        if followers:
            ops.append(AlterConfigOp(FOLLOWER_THROTTLE, ",".join(followers)))
        changes[ConfigResource(ConfigResourceType.TOPIC, topic)] = ops
    await admin.incremental_alter_configs(changes)


async def _clear_throttles(admin: AIOAdmin, topics: set[str], moves: Moves) -> None:
    # Kafka clears the rates of every live broker and target replica each time. We do it only when a topic
    # still lists throttled replicas (our --throttle sets both) or a broker given a log dir has a rate set
    # (--replica-alter-log-dirs-throttle), so a reassignment run without a throttle never waits on a broker
    # that does not answer; and only on live brokers.
    if await _has_throttled_replicas(admin, topics) or await _has_broker_rates(admin, {r.broker_id for r in moves}):
        brokers = sorted(b.node_id for b in (await admin.describe_cluster()).brokers)
        print(f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} "
              f"{','.join(map(str, brokers))}")
        await admin.incremental_alter_configs({
            ConfigResource(ConfigResourceType.BROKER, str(b)): [AlterConfigOp(k, None, AlterConfigOpType.DELETE)
                                                                for k in BROKER_THROTTLE_RATES]
            for b in brokers})
    print(f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} {','.join(sorted(topics))}")
    await admin.incremental_alter_configs({
        ConfigResource(ConfigResourceType.TOPIC, topic): [AlterConfigOp(key, None, AlterConfigOpType.DELETE)
                                                          for key in (LEADER_THROTTLE, FOLLOWER_THROTTLE)]
        for topic in sorted(topics)})


async def _has_broker_rates(admin: AIOAdmin, brokers: set[int]) -> bool:
    """A throttle rate set on one of ``brokers`` (per broker; the cluster default is not the tool's to clear)."""
    configs = await admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(b))
                                            for b in sorted(brokers)])
    return any(entries.get(key) is not None and entries[key].source == DYNAMIC_BROKER_CONFIG
               for entries in configs.values() for key in BROKER_THROTTLE_RATES)


async def _has_throttled_replicas(admin: AIOAdmin, topics: set[str]) -> bool:
    configs = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t) for t in sorted(topics)])
    return any(entries.get(key) is not None and entries[key].value and not entries[key].is_default
               for entries in configs.values() for key in (LEADER_THROTTLE, FOLLOWER_THROTTLE))


async def _verify(admin: AIOAdmin, opts: argparse.Namespace) -> None:
    document = _read_json(opts.reassignment_json_file, "reassignment-json-file")
    plan = parse_reassignment(document)
    moves = parse_replica_moves(document)
    ongoing = set(await admin.list_partition_reassignments(list(plan)))
    current = await _current_assignment(admin, [tp.topic for tp in plan])
    print("\n".join(status_lines(plan, ongoing, current)))
    found = await _log_dir_moves(admin, moves)
    print("\n".join(move_status_lines(moves, found)))  # Kafka prints this block, empty without moves
    moving = any(found.get(replica, (None, None))[1] is not None for replica in moves)  # Kafka's ActiveMoveState
    if not ongoing and not moving and not opts.preserve_throttles:
        await _clear_throttles(admin, {tp.topic for tp in plan}, moves)


async def _list(admin: AIOAdmin, opts: argparse.Namespace) -> None:
    print(list_text(await admin.list_partition_reassignments()))


async def _cancel(admin: AIOAdmin, opts: argparse.Namespace) -> None:
    document = _read_json(opts.reassignment_json_file, "reassignment-json-file")
    plan = parse_reassignment(document)
    moves = parse_replica_moves(document)
    moving = sorted(tp for tp, r in (await admin.list_partition_reassignments(list(plan))).items()
                    if r.adding_replicas or r.removing_replicas)
    if moving:
        errors = {tp: e for tp, e in (await admin.alter_partition_reassignments({tp: None for tp in moving})).items()
                  if e is not None}
        if errors:
            raise CommandFailed(f"Error cancelling partition reassignment{'' if len(errors) == 1 else 's'} for:\n"
                                + "\n".join(f"{_name(tp)}: {error_message(e)}" for tp, e in sorted(errors.items())))
        print(f"Successfully cancelled partition reassignment{'' if len(moving) == 1 else 's'} for: "
              + ",".join(_name(tp) for tp in moving))
    else:
        print("None of the specified partition reassignments are active.")
    # Kafka's cancelAssignment: a log dir move under way (a future replica beside the current one) is asked
    # back to the current dir, which drops the future replica
    found = await _log_dir_moves(admin, moves)
    back = {replica: current for replica, (current, future) in found.items()
            if replica in moves and current is not None and future is not None}
    if back:
        await _execute_moves(admin, back, opts.timeout)
    else:
        print("None of the specified partition moves are active.")
    if not opts.preserve_throttles:
        await _clear_throttles(admin, {tp.topic for tp in plan}, moves)


_RUN = {"generate": _generate, "execute": _execute, "verify": _verify, "list": _list, "cancel": _cancel}


def _run(opts: argparse.Namespace) -> None:
    run_admin(opts, lambda admin: _RUN[opts.action](admin, opts))


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(parse_args, _run, argv, (CommandFailed, failure_report("{exc}")),
                    ((KafkaError, OSError, ValueError), failure_report("Error: {message}")))


if __name__ == "__main__":
    sys.exit(main())
