"""A log directory failing under load (Kafka's KIP-112), on real brokers: 3 brokers, RF 3, min.insync.replicas=2,
an idempotent acks=all producer writing throughout.

Broker 0 has two log dirs; its second is a small tmpfs the test mounts (as root) and then fills with a file, so
the broker's next append there fails with ENOSPC. Where permissions bind the test (not root) it takes the write
permission of that dir away instead (EACCES on the next file created there: a roll, a checkpoint), a real I/O
error as well. One of the two runs, whoever runs the tests.
Expected, as Kafka 2.8: that dir goes offline (DescribeLogDirs answers KAFKA_STORAGE_ERROR for it, and
odradek-log-dirs --describe prints KafkaStorageException as kafka-log-dirs.sh does), the
broker stays up with its other dir, the controller moves leadership of the dir's partitions to in-sync
replicas within seconds and shrinks their ISRs; the producer gets every record acknowledged, none timed
out; after room is made and broker 0 restarts, its replicas come back, and every replica holds every
acknowledged record unchanged (whole batches, valid CRCs).
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
    """Broker 0 gets a second log dir, ``fault`` beside the cluster's data dir (a later --override wins; the
    first keeps the process marker LocalCluster finds the broker by)."""

    def broker_command(self, broker):
        command = super().broker_command(broker)
        if broker.broker_id == 0:
            command += ["--override", f"log.dirs={broker.log_dirs},{self.data_dir.parent / 'fault'}"]
        return command


def fill(directory: Path) -> Path:
    """Write a file until the filesystem is full; returns it."""
    filler = directory / "filler"
    chunk = b"\0" * (1 << 20)
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
    return filler


def take_write_permission(directory: Path) -> None:
    for path in [directory, *(p for p in directory.iterdir() if p.is_dir())]:
        path.chmod(stat.S_IRUSR | stat.S_IXUSR)


def give_write_permission(directory: Path) -> None:
    for path in [directory, *(p for p in directory.iterdir() if p.is_dir())]:
        path.chmod(stat.S_IRWXU)


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
def fault_dir(tmp_path, request):
    directory = tmp_path / "fault"
    directory.mkdir()
    on_tmpfs = request.param == "tmpfs"
    if on_tmpfs:
        if not AS_ROOT:
            pytest.skip("mounting a tmpfs needs root; the permission variant runs instead")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(directory)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    elif not permissions_bind(tmp_path):
        pytest.skip("permissions do not bind this process (root): the tmpfs variant runs instead")
    yield directory, on_tmpfs
    if on_tmpfs:
        subprocess.run(["umount", "-l", str(directory)], capture_output=True)
    else:
        give_write_permission(directory)


def test_a_failing_log_dir_goes_offline_and_leadership_moves_without_losing_a_record(
        odradek_cluster_factory, fault_dir, capsys):
    directory, on_tmpfs = fault_dir
    cluster = odradek_cluster_factory(3, {"min.insync.replicas": "2", "replica.lag.time.max.ms": "10000"},
                                      cluster_class=FaultDirCluster)
    assert cluster.data_dir.parent == directory.parent
    servers = cluster.bootstrap_servers
    with Admin(bootstrap_servers=servers) as admin:
        admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=3)])
        wait_until(lambda: all(leader >= 0 for leader, _ in leaders_and_isrs(admin).values()), 30, "leaders")
        on_fault = sorted(int(n.rsplit("-", 1)[1]) for n in os.listdir(directory) if n.startswith(f"{TOPIC}-"))
        assert on_fault and len(on_fault) < PARTITIONS  # broker 0 has partitions in both dirs
        if on_tmpfs:  # 32 MiB free, under the 1 GiB default: the operator was warned before anything failed
            wait_until(lambda: f"Log directory {directory} has" in cluster.broker_log(0).read_text(), 30,
                       "the free-space warning")
        with IdempotentProducerLoad(servers, TOPIC, PARTITIONS, timeout_s=60) as load:
            wait_until(lambda: len(load.acked) >= 2000, 60, "records acknowledged before the fault")
            acked_before = len(load.acked)
            began = time.monotonic()
            if on_tmpfs:
                filler = fill(directory)
            else:
                take_write_permission(directory)

            def moved() -> bool:
                state = leaders_and_isrs(admin)
                return all(state[p][0] not in (-1, 0) and 0 not in state[p][1] for p in on_fault)
            wait_until(moved, 60, "leadership and ISRs off the failed dir", interval=0.1)
            moved_after = time.monotonic() - began
            dirs = admin.describe_log_dirs(brokers=[0])[0]
            assert isinstance(dirs[str(directory)].error, KafkaStorageError)
            assert dirs[str(cluster.brokers[0].log_dirs)].error is None
            assert cluster.broker_alive(0)  # its other dir is online: it keeps serving
            described = console_tool("log-dirs", "--bootstrap-server", servers, "--describe", "--broker-list", "0",
                                     "--topic-list", TOPIC).stdout.splitlines()
            assert described[:2] == ["Querying brokers for log directories information",
                                     "Received log directory information from brokers 0"]
            [broker_0] = json.loads(described[2])["brokers"]
            by_dir = {d["logDir"]: d for d in broker_0["logDirs"]}
            assert by_dir[str(directory)] == {"logDir": str(directory), "partitions": [],
                                              "error": "org.apache.kafka.common.errors.KafkaStorageException"}
            assert by_dir[str(cluster.brokers[0].log_dirs)]["error"] is None
            # the writes go on: twice as many records acknowledged after the move as before the fault
            wait_until(lambda: len(load.acked) >= 2 * acked_before + 2000, 90, "records acknowledged after the move")
        offered = len(load.acked) + len(load.failed)
        assert load.fatal == [] and load.failed == [], (load.fatal, load.failed[:5])
        # room again, then a restart brings broker 0's replicas back
        if on_tmpfs:
            filler.unlink()
        else:
            give_write_permission(directory)
        cluster.restart_broker(0)
        wait_until(lambda: all(isr == [0, 1, 2] for _, isr in leaders_and_isrs(admin).values()), 90,
                   "every replica back in the ISR")
        assert all(d.error is None for d in admin.describe_log_dirs(brokers=[0])[0].values())
    cluster.stop(timeout=30)
    checked = 0
    for partition in range(PARTITIONS):
        copies = []
        for broker in cluster.brokers:
            dirs = [Path(broker.log_dirs)] + ([directory] if broker.broker_id == 0 else [])
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
              f"dir {moved_after:.1f} s after the fault; {checked} acknowledged records read back unchanged from "
              f"each of 3 replicas of {PARTITIONS} partitions")
