"""Crash safety: SIGKILL a broker while it takes acks=1 produce, restart it, lose nothing acknowledged."""

from __future__ import annotations

import asyncio
import signal
import threading

import pytest

from odradek.clients.simple_client import SimpleClient, build_batch
from odradek.tools.local_cluster import log_tail
from tests.integration.helpers import wait_until
from tests.unit.broker.network.helpers import Client

pytestmark = pytest.mark.timeout(240)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 200))


def test_sigkill_during_produce_keeps_every_acknowledged_record(odradek_cluster_factory):
    cluster = odradek_cluster_factory(brokers=1)
    acknowledged: list[tuple[int, bytes]] = []

    async def produce_until_killed():
        async with SimpleClient(cluster.bootstrap_servers, request_timeout=5.0) as client:
            await client.create_topics({"durable": (1, 1)})
            await client.wait_for_leaders("durable")
            i = 0
            killer = asyncio.get_running_loop().run_in_executor(None, _kill_after, cluster, 1.0)
            while not killer.done():
                value = b"record-%06d" % i
                try:
                    result = await client.produce("durable", 0, [(None, value)])
                except OSError:
                    break  # the broker died under us: this record was never acknowledged
                if result.error_code == 0:
                    acknowledged.append((result.base_offset, value))
                i += 1
            await killer

    run(produce_until_killed())
    assert len(acknowledged) > 10
    cluster.start_broker(0)

    async def read_back():
        async with SimpleClient(cluster.bootstrap_servers) as client:
            await client.wait_for_leaders("durable")
            found: dict[int, bytes] = {}
            offset = 0
            while offset < acknowledged[-1][0] + 1:
                fetched = await client.fetch("durable", 0, offset, max_wait_ms=100)
                assert fetched.error_code == 0
                for record in fetched.records:
                    found[record.offset] = record.value
                offset = max(found) + 1 if found else offset
            return found

    found = run(read_back())
    assert all(found.get(offset) == value for offset, value in acknowledged)


def test_producer_state_survives_a_crash_so_a_retry_is_not_duplicated(odradek_cluster_factory):
    cluster = odradek_cluster_factory(brokers=1)

    async def before():
        async with SimpleClient(cluster.bootstrap_servers) as client:
            await client.create_topics({"idem-restart": (1, 1)})
            await client.wait_for_leaders("idem-restart")
            pid, epoch = await client.init_producer_id()
            batches = [build_batch([(None, b"%d" % seq)], producer_id=pid, producer_epoch=epoch, base_sequence=seq)
                       for seq in range(3)]
            for expected, batch in enumerate(batches):
                assert (await client.produce("idem-restart", 0, batch)).base_offset == expected
            return batches

    batches = run(before())
    cluster.restart_broker(0, sig=signal.SIGKILL)

    async def after():
        async with SimpleClient(cluster.bootstrap_servers) as client:
            await client.wait_for_leaders("idem-restart")
            retried = await client.produce("idem-restart", 0, batches[2])  # the reply was "lost"; retry
            assert (retried.error_code, retried.base_offset) == (0, 2)
            values = [r.value for r in (await client.fetch("idem-restart", 0, 0)).records]
            assert values == [b"0", b"1", b"2"]

    run(after())


def _kill_after(cluster, seconds: float) -> None:
    import time
    time.sleep(seconds)
    cluster.kill_broker(0, signal.SIGKILL)


def test_a_broker_whose_session_expired_registers_again(odradek_cluster_factory):
    """SIGSTOP past the ZooKeeper session timeout (6 s in tests): the registration vanishes; on SIGCONT the
    broker opens a new session and registers again, as Kafka's brokers do."""
    cluster = odradek_cluster_factory(brokers=2)
    victim = 1
    cluster.kill_broker(victim, signal.SIGSTOP)
    try:
        async def gone():
            async with SimpleClient(cluster.bootstrap_servers.split(",")[0]) as client:
                for _ in range(200):
                    if victim not in (await client.metadata([])).brokers:
                        return True
                    await asyncio.sleep(0.1)
            return False
        assert run(gone())
    finally:
        cluster.kill_broker(victim, signal.SIGCONT)

    async def back():
        async with SimpleClient(cluster.bootstrap_servers.split(",")[0]) as client:
            md = await client.wait_for_brokers(2, timeout=60)
            return sorted(md.brokers)
    assert run(back()) == [0, 1]


def test_a_restarted_broker_serves_only_once_registered_again(odradek_cluster_factory):
    """After a SIGKILL the new process finds its old session's registration still in ZooKeeper and waits for
    it to expire. Kafka 2.8 binds its ports but processes no request until start-up ends; so does ours: a
    request sent during the wait is answered only after the broker has registered again (until then a
    client would have been told there are no brokers, and KafkaJS consumers crashed on that)."""
    # A session long enough that the old registration outlives the new process's start-up on a loaded machine.
    cluster = odradek_cluster_factory(brokers=1, overrides={"zookeeper.session.timeout.ms": "20000"})
    broker = cluster.brokers[0]
    cluster.kill_broker(0, signal.SIGKILL)
    starting = threading.Thread(target=cluster.start_broker, args=(0,), daemon=True)
    starting.start()

    def since_restart() -> str:
        return log_tail(broker.log_path, lines=100_000, since=broker.log_offset)

    wait_until(lambda: "still registered by a previous session" in since_restart(), 60,
               "the restarted broker to wait for its old session")
    assert "registered broker 0 with broker epoch" not in since_restart()

    async def api_versions_answered():
        client = await Client.connect(cluster.broker_ports[0])
        try:
            return (await client.api_versions()).error_code
        finally:
            client.close()

    assert run(api_versions_answered()) == 0
    # the answer came after the registration: the log says so before the broker processes any request
    assert "registered broker 0 with broker epoch" in since_restart()
    starting.join(60)
