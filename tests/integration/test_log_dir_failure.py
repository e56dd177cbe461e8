"""A log directory failing under load (Kafka's KIP-112), on real brokers: 3 brokers, RF 3, min.insync.replicas=2,
an idempotent acks=all producer writing throughout.

Broker 0 has two log dirs; its second is a small tmpfs the test mounts (as root) and then fills with a file, so
the broker's next append there fails with ENOSPC. Where permissions bind the test (not root) it takes the write
permission of that dir away instead (EACCES on the next file created there: a roll, a checkpoint), a real I/O
error as well. One of the two runs, whoever runs the tests.
Expected, as Kafka 2.8: that dir goes offline (DescribeLogDirs answers KAFKA_STORAGE_ERROR for it, and
odradek-log-dirs --describe prints KafkaStorageException as kafka-log-dirs.sh does), the broker stays up with
its other dir, the controller moves leadership of the dir's partitions to in-sync replicas within seconds and
shrinks their ISRs; after room is made and broker 0 restarts, its replicas come back. Then both its dirs fail:
it halts (exit 1) and leadership moves off it. Throughout, the producer gets every record acknowledged, none
timed out, and at the end every replica holds every acknowledged record unchanged (whole batches, valid CRCs).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from odradek.clients.admin.client import Admin, NewTopic
from odradek.protocol.errors import KafkaStorageError
from odradek.protocol.records import RecordBatchView
from odradek.tools.local_cluster import LocalCluster

from .helpers import IdempotentProducerLoad, console_tool, wait_until

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

TOPIC = "disk-fault"
PARTITIONS = 6
AS_ROOT = os.geteuid() == 0


class FaultDirCluster(LocalCluster):
    """Broker 0's log dirs are ``main`` and ``fault`` beside the cluster's data dir (a later --override wins; the
    first keeps the process marker LocalCluster finds the broker by)."""

    def broker_command(self, broker):
        command = super().broker_command(broker)
        if broker.broker_id == 0:
            parent = self.data_dir.parent
            command += ["--override", f"log.dirs={parent / 'main'},{parent / 'fault'}"]
        return command


def break_dir(directory: Path, on_tmpfs: bool) -> None:
    """A tmpfs: write a file until it is full. Otherwise: take the write permission of the dir and its
    partition dirs away."""
    if not on_tmpfs:
        for path in [directory, *(p for p in directory.iterdir() if p.is_dir())]:
            path.chmod(stat.S_IRUSR | stat.S_IXUSR)
        return
    chunk = b"\0" * (1 << 20)
    with open(directory / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e


def repair_dir(directory: Path) -> None:
    for path in [directory, *(p for p in directory.iterdir() if p.is_dir())]:
        path.chmod(stat.S_IRWXU)
    (directory / "filler").unlink(missing_ok=True)


def replica_records(partition_dir: Path) -> list[tuple[int, bytes]]:
    """(offset, value) of every data record of one replica on disk; every batch whole with a valid CRC."""
    out = []
    for name in sorted(n for n in os.listdir(partition_dir) if n.endswith(".log")):
        data = (partition_dir / name).read_bytes()
        pos = 0
        while pos < len(data):
            batch = RecordBatchView(data, pos)
            batch.validate()
            if not batch.is_control:
                out += [(r.offset, bytes(r.value)) for r in batch.records()]
            pos += batch.size_in_bytes
    return out


def leaders_and_isrs(admin: Admin) -> dict[int, tuple[int, list[int]]]:
    [description] = admin.describe_topics([TOPIC])
    return {p.partition: (p.leader, sorted(p.isr)) for p in description.partitions}


def permissions_bind(directory: Path) -> bool:
    """Whether this process is refused a file in a directory it may not write (not so for root)."""
    probe = directory / "probe"
    probe.mkdir()
    probe.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        (probe / "file").touch()
        return False
    except PermissionError:
        return True
    finally:
        probe.chmod(stat.S_IRWXU)
        shutil.rmtree(probe)


@pytest.fixture(params=["tmpfs", "permission"])
def broker_0_dirs(tmp_path, request):
    """(main, fault, on_tmpfs): broker 0's two log dirs, each a 32 MiB tmpfs in the tmpfs variant."""
    dirs = [tmp_path / "main", tmp_path / "fault"]
    on_tmpfs = request.param == "tmpfs"
    for directory in dirs:
        directory.mkdir()
    if on_tmpfs:
        if not AS_ROOT:
            pytest.skip("mounting a tmpfs needs root; the permission variant runs instead")
        for directory in dirs:
            done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(directory)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    elif not permissions_bind(tmp_path):
        pytest.skip("permissions do not bind this process (root): the tmpfs variant runs instead")
    yield dirs[0], dirs[1], on_tmpfs
    for directory in dirs:
        if on_tmpfs:
            subprocess.run(["umount", "-l", str(directory)], capture_output=True)
        else:
            repair_dir(directory)


def test_a_failing_log_dir_goes_offline_and_leadership_moves_without_losing_a_record(
        odradek_cluster_factory, broker_0_dirs, capsys):
    main, fault, on_tmpfs = broker_0_dirs
    cluster = odradek_cluster_factory(3, {"min.insync.replicas": "2", "replica.lag.time.max.ms": "10000"},
                                      cluster_class=FaultDirCluster)
    assert cluster.data_dir.parent == fault.parent
    servers = cluster.bootstrap_servers
    with Admin(bootstrap_servers=servers) as admin:
        admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=3)])
        wait_until(lambda: all(leader >= 0 for leader, _ in leaders_and_isrs(admin).values()), 30, "leaders")
        on_fault = sorted(int(n.rsplit("-", 1)[1]) for n in os.listdir(fault) if n.startswith(f"{TOPIC}-"))
        assert on_fault and len(on_fault) < PARTITIONS  # broker 0 has partitions in both dirs
        # the notification a Kafka 2.8 broker writes, byte for byte: our controller reads it (asks broker 1, which
        # has nothing offline) and deletes it
        zk = KazooClient(hosts=cluster.zookeeper_connect)
        zk.start(timeout=15)
        try:
            zk.create("/log_dir_event_notification/log_dir_event_", b'{"version":1,"broker":1,"event":1}',
                      sequence=True, makepath=True)
            wait_until(lambda: zk.get_children("/log_dir_event_notification") == [], 30,
                       "the controller to take the Kafka-written notification")
        finally:
            zk.stop()
            zk.close()
        if on_tmpfs:  # 32 MiB free, under the 1 GiB default: the operator was warned before anything failed
            wait_until(lambda: f"Log directory {fault} has" in cluster.broker_log(0).read_text(), 30,
                       "the free-space warning")

        def off_broker_0(partitions) -> bool:
            state = leaders_and_isrs(admin)
            return all(state[p][0] not in (-1, 0) and 0 not in state[p][1] for p in partitions)
        with IdempotentProducerLoad(servers, TOPIC, PARTITIONS, timeout_s=60) as load:
            # 1. one dir fails: its partitions go offline, the broker serves the others
            wait_until(lambda: len(load.acked) >= 2000, 60, "records acknowledged before the fault")
            acked_before = len(load.acked)
            began = time.monotonic()
            break_dir(fault, on_tmpfs)
            wait_until(lambda: off_broker_0(on_fault), 60, "leadership and ISRs off the failed dir", interval=0.1)
            moved_after = time.monotonic() - began
            dirs = admin.describe_log_dirs(brokers=[0])[0]
            assert isinstance(dirs[str(fault)].error, KafkaStorageError)
            assert dirs[str(main)].error is None
            assert cluster.broker_alive(0)  # its other dir is online: it keeps serving
            described = console_tool("log-dirs", "--bootstrap-server", servers, "--describe", "--broker-list", "0",
                                     "--topic-list", TOPIC).stdout.splitlines()
            assert described[:2] == ["Querying brokers for log directories information",
                                     "Received log directory information from brokers 0"]
            [broker_0] = json.loads(described[2])["brokers"]
            by_dir = {d["logDir"]: d for d in broker_0["logDirs"]}
            assert by_dir[str(fault)] == {"logDir": str(fault), "partitions": [],
                                          "error": "org.apache.kafka.common.errors.KafkaStorageException"}
            assert by_dir[str(main)]["error"] is None
            # the writes go on: twice as many records acknowledged after the move as before the fault
            wait_until(lambda: len(load.acked) >= 2 * acked_before + 2000, 90, "records acknowledged after the move")
            # 2. room again, then a restart brings broker 0's replicas back
            repair_dir(fault)
            cluster.restart_broker(0)
            wait_until(lambda: all(isr == [0, 1, 2] for _, isr in leaders_and_isrs(admin).values()), 90,
                       "every replica back in the ISR")
            assert all(d.error is None for d in admin.describe_log_dirs(brokers=[0])[0].values())
            # 3. both dirs fail: the broker halts, leadership of every partition moves
            acked_before = len(load.acked)
            began = time.monotonic()
            break_dir(main, on_tmpfs)
            break_dir(fault, on_tmpfs)
            wait_until(lambda: not cluster.broker_alive(0), 60, "broker 0 to halt")
            assert cluster.brokers[0].process.returncode == 1
            wait_until(lambda: off_broker_0(range(PARTITIONS)), 60, "leadership and ISRs off broker 0", interval=0.1)
            halted_moved_after = time.monotonic() - began
            wait_until(lambda: len(load.acked) >= acked_before + 2000, 90, "records acknowledged after the halt")
            repair_dir(main)
            repair_dir(fault)
            cluster.start_broker(0)
            wait_until(lambda: all(isr == [0, 1, 2] for _, isr in leaders_and_isrs(admin).values()), 90,
                       "every replica back in the ISR after the halt")
        offered = len(load.acked) + len(load.failed)
        assert load.fatal == [] and load.failed == [], (load.fatal, load.failed[:5])
        wait_until(lambda: all(isr == [0, 1, 2] for _, isr in leaders_and_isrs(admin).values()), 90,
                   "every replica in the ISR at the end")
    cluster.stop(timeout=30)
    checked = 0
    for partition in range(PARTITIONS):
        copies = []
        for broker in cluster.brokers:
            dirs = [main, fault] if broker.broker_id == 0 else [Path(broker.log_dirs)]
            [found] = [d / f"{TOPIC}-{partition}" for d in dirs if (d / f"{TOPIC}-{partition}").is_dir()]
            copies.append(replica_records(found))
        assert all(copy == copies[0] for copy in copies), f"replicas of partition {partition} differ"
        values = {value for _, value in copies[0]}
        mine = {v for v in load.acked if int(v[7:]) % PARTITIONS == partition}
        assert mine <= values, f"partition {partition} lost {len(mine - values)} acknowledged records"
        assert all(v.startswith(b"record-") for v in values)
        checked += len(mine)
    assert checked == len(load.acked)
    with capsys.disabled():
        print(f"\nlog dir failure ({'tmpfs filled' if on_tmpfs else 'write permission removed'}): "
              f"{len(load.acked)}/{offered} records acknowledged, none failed; leadership and ISRs off the failed "
              f"dir {moved_after:.1f} s after the fault; off the broker {halted_moved_after:.1f} s after both its "
              f"dirs failed (it halted); {checked} acknowledged records read back unchanged from each of 3 replicas "
              f"of {PARTITIONS} partitions")
