"""Members leaving and dying, as real clients do it: LeaveGroup at every version (0-4) for a member of a
real group, each client family's close, and a SIGKILLed member process, which must not hold the next
rebalance for the whole rebalance timeout (Kafka 2.8 expires it at its session timeout)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from odradek.clients import Admin
from odradek.clients.connection import BrokerConnection
from odradek.protocol.consumer_protocol import encode_assignment, encode_subscription
from odradek.protocol.messages import (FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
                                       SyncGroupRequest)

from tests.conftest import new_cluster, running

from .helpers import create_topic, run, wait_until

pytestmark = pytest.mark.timeout(240)
GROUP_OVERRIDES = {"offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}
MEMBER_SCRIPT = Path(__file__).with_name("group_member.py")
PARTITIONS = 4
LONG_SESSION_MS = 120000  # a member with this session can only leave within a test's waits by LeaveGroup


class MemberProcess:
    """tests/integration/group_member.py in a subprocess; ``assigned`` is the last assignment it printed."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str, client_id: str = "member",
                 session_ms: int = 6000, rebalance_ms: int = 300000) -> None:
        self.client_id = client_id
        self.process = subprocess.Popen(
            [sys.executable, str(MEMBER_SCRIPT), client, bootstrap, group, topic, client_id, str(session_ms),
             str(rebalance_ms)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.assigned: set[int] | None = None
        self.history: list[set[int]] = []  # every assignment printed, for a failure's message
        self.closed = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.startswith("assigned"):
                parts = line.split()[1:]
                self.assigned = {int(p) for p in parts[0].split(",")} if parts else set()
                self.history.append(self.assigned)
            elif line.startswith("closed"):
                self.closed.set()

    def close(self) -> None:
        """A clean close: the client leaves the group its own way."""
        self.process.stdin.close()
        assert self.closed.wait(60), f"{self.client_id} did not close"
        self.process.wait(30)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)


@pytest.fixture(scope="module")
def bootstrap(zookeeper, tmp_path_factory):
    """One broker for the module: each test has its own group and topic."""
    with running(new_cluster(tmp_path_factory.mktemp("group-membership"), zookeeper, 1, GROUP_OVERRIDES)) as cluster:
        yield cluster.bootstrap_servers


def _shares(*members: MemberProcess):
    """The members' assignments once each has one and together they hold every partition once."""
    shares = [m.assigned for m in members]
    if all(shares) and sorted(p for s in shares for p in s) == list(range(PARTITIONS)):
        return shares
    return None


def _member_id(bootstrap: str, group: str, client_id: str) -> str:
    with Admin(bootstrap_servers=bootstrap) as admin:
        [description] = admin.describe_consumer_groups([group])
    return next(m.member_id for m in description.members if m.client_id == client_id)


def _group_and_topic(bootstrap: str) -> tuple[str, str]:
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    run(create_topic(bootstrap, topic, PARTITIONS))
    return group, topic


def _leave(bootstrap: str, group: str, member_id: str, version: int):
    async def send():
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        conn = await BrokerConnection.connect(host, int(port))
        try:
            if version < 3:
                request = LeaveGroupRequest(group_id=group, member_id=member_id)
            else:
                request = LeaveGroupRequest(group_id=group, members=[
                    LeaveGroupRequest.MemberIdentity(member_id=member_id, group_instance_id=None)])
            return await conn.send(request, version=version)
        finally:
            await conn.close()
    return run(send(), 30)


def test_leave_group_at_every_version_removes_a_real_member_at_once(bootstrap):
    group, topic = _group_and_topic(bootstrap)
    staying = MemberProcess("odradek", bootstrap, group, topic, "staying")
    members = [staying]
    try:
        for version in range(5):
            leaving = MemberProcess("confluent", bootstrap, group, topic, f"leaving-v{version}", LONG_SESSION_MS)
            members.append(leaving)
            wait_until(lambda: _shares(staying, leaving), 60, f"leaving-v{version} to join")
            member_id = _member_id(bootstrap, group, leaving.client_id)
            leaving.kill()  # it can no longer heartbeat, rejoin or leave by itself
            answer = _leave(bootstrap, group, member_id, version)
            assert answer.error_code == 0
            if version >= 3:
                assert [(m.member_id, m.group_instance_id, m.error_code) for m in answer.members] == \
                    [(member_id, None, 0)]
            wait_until(lambda: staying.assigned == set(range(PARTITIONS)), 60,
                       f"the group to rebalance after LeaveGroup v{version}")
        # An unknown member: v0-2 answer with the member's error at the top, v3+ per member.
        assert _leave(bootstrap, group, "nobody", 0).error_code == 25
        unknown = _leave(bootstrap, group, "nobody", 3)
        assert (unknown.error_code, [m.error_code for m in unknown.members]) == (0, [25])
    finally:
        for member in members:
            member.kill()


def _raw_join(conn: BrokerConnection, group: str, member_id: str, topic: str):
    protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=encode_subscription([topic]))
    return conn.send(JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=30000,
                                      member_id=member_id, protocol_type="consumer", protocols=[protocol]), version=7)


def _raw_sync(conn: BrokerConnection, group: str, generation: int, member_id: str, assignments: dict[str, bytes]):
    return conn.send(SyncGroupRequest(group_id=group, generation_id=generation, member_id=member_id,
                                      protocol_type="consumer", protocol_name="range", assignments=[
                                          SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                                          for m, a in assignments.items()]), version=5)


def _raw_heartbeat(conn: BrokerConnection, group: str, generation: int, member_id: str):
    return conn.send(HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id), version=4)


def test_a_leader_that_rejoins_while_a_member_joins_keeps_the_lead_and_gets_its_sync_answered(bootstrap):
    """The requests of kafka-python's leader that hung in CI, one by one: A leads generation 1 alone and assigns
    nothing; B joins; A rejoins (kafka-python does on the topic's metadata). Both get generation 2, A still
    leading; A's SyncGroup, with a Heartbeat pipelined behind it on its connection, is answered first with A's
    part, B's with B's (Kafka 2.8's answers). kafka-python lost its answer after it had read it."""
    group, topic = _group_and_topic(bootstrap)
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    parts = {"a": encode_assignment({topic: [0, 1]}), "b": encode_assignment({topic: [2, 3]})}

    async def scenario():
        a, b = await BrokerConnection.connect(host, int(port)), await BrokerConnection.connect(host, int(port))
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while True:  # as a client: FindCoordinator (it creates __consumer_offsets), then join once it is loaded
                found = await a.send(FindCoordinatorRequest(key=group))
                unnamed = await _raw_join(a, group, "", topic) if found.error_code == 0 else None
                if unnamed is not None and unnamed.error_code == 79:  # MEMBER_ID_REQUIRED names the member
                    break
                assert loop.time() < deadline, "the coordinator never took the group"
                await asyncio.sleep(0.05)
            a_id = unnamed.member_id
            first = await _raw_join(a, group, a_id, topic)
            assert (first.error_code, first.generation_id, first.leader) == (0, 1, a_id)
            assert (await _raw_sync(a, group, 1, a_id, {a_id: encode_assignment({})})).error_code == 0
            b_id = (await _raw_join(b, group, "", topic)).member_id
            b_joining = asyncio.ensure_future(_raw_join(b, group, b_id, topic))
            while (await _raw_heartbeat(a, group, 1, a_id)).error_code != 27:  # REBALANCE_IN_PROGRESS: B is in
                assert loop.time() < deadline, "B's JoinGroup never started a rebalance"
            rejoined = await _raw_join(a, group, a_id, topic)
            b_joined = await b_joining
            assert [(j.error_code, j.generation_id, j.leader) for j in (rejoined, b_joined)] == [(0, 2, a_id)] * 2
            assert sorted(m.member_id for m in rejoined.members) == sorted([a_id, b_id]) and not b_joined.members
            b_syncing = asyncio.ensure_future(_raw_sync(b, group, 2, b_id, {}))
            a_syncing = asyncio.ensure_future(_raw_sync(a, group, 2, a_id, {a_id: parts["a"], b_id: parts["b"]}))
            a_beating = asyncio.ensure_future(_raw_heartbeat(a, group, 2, a_id))
            answered = []
            for name, future in (("a-sync", a_syncing), ("a-heartbeat", a_beating), ("b-sync", b_syncing)):
                future.add_done_callback(lambda _, name=name: answered.append(name))
            a_synced, beat, b_synced = await asyncio.gather(a_syncing, a_beating, b_syncing)
            assert answered.index("a-sync") < answered.index("a-heartbeat")
            assert (a_synced.error_code, a_synced.assignment, beat.error_code) == (0, parts["a"], 0)
            assert (b_synced.error_code, b_synced.assignment) == (0, parts["b"])
        finally:
            await a.close()
            await b.close()

    run(scenario(), 60)
    with Admin(bootstrap_servers=bootstrap) as admin:
        [description] = admin.describe_consumer_groups([group])
    assert description.state == "Stable" and len(description.members) == 2


@pytest.mark.parametrize("client_leads", [True, False], ids=["client-leads", "client-follows"])
@pytest.mark.parametrize("client", ["odradek", "confluent", "aiokafka", "kafka-python"])
def test_a_closing_member_leaves_and_the_rest_rebalance_at_once(bootstrap, client, client_leads):
    group, topic = _group_and_topic(bootstrap)
    # The first member to join leads the group, and still leads it after the second one joins (Kafka keeps a
    # leader that rejoins): the client under test is the leader or the follower of that rebalance.
    def client_member() -> MemberProcess:
        return MemberProcess(client, bootstrap, group, topic, "leaving", LONG_SESSION_MS)

    def our_member() -> MemberProcess:
        return MemberProcess("odradek", bootstrap, group, topic, "staying")

    first, second = (client_member, our_member) if client_leads else (our_member, client_member)
    members = [first()]
    try:
        wait_until(lambda: members[0].assigned == set(range(PARTITIONS)), 60, "the leader's assignment")
        members.append(second())
        leaving, staying = members if client_leads else members[::-1]
        try:
            wait_until(lambda: _shares(staying, leaving), 60, "two members sharing the partitions")
        except AssertionError as exc:  # say what each member was given (group in the broker's log)
            raise AssertionError(f"{exc}; group {group}, assignments printed: staying {staying.history}, "
                                 f"leaving {leaving.history}") from None
        leaving.close()
        wait_until(lambda: staying.assigned == set(range(PARTITIONS)), 60, "the group to rebalance after the close")
    finally:
        for member in members:
            member.kill()


@pytest.mark.parametrize("client", ["odradek", "confluent"])
def test_a_sigkilled_member_is_expired_at_its_session_timeout_while_another_joins(bootstrap, client):
    group, topic = _group_and_topic(bootstrap)
    # Session 6 s, rebalance timeout 300 s: only the dead member's session expiry can end the join in time.
    dying, staying = MemberProcess(client, bootstrap, group, topic), MemberProcess(client, bootstrap, group, topic)
    members = [dying, staying]
    try:
        wait_until(lambda: _shares(dying, staying), 60, "two members sharing the partitions")
        dying.kill()  # no LeaveGroup
        joining = MemberProcess(client, bootstrap, group, topic)
        members.append(joining)
        started = time.monotonic()
        wait_until(lambda: _shares(staying, joining), 60, "the join to complete without the dead member")
        print(f"the join completed {time.monotonic() - started:.1f} s after the new member started")
    finally:
        for member in members:
            member.kill()
