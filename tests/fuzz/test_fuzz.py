"""The protocol fuzzer against a real broker (see harness.py), and the frames it once broke us with.

CI runs ``ODRADEK_FUZZ_SECONDS`` (default 45) of fuzzing with a fixed seed; a longer run by hand:

    ODRADEK_FUZZ_SECONDS=600 ODRADEK_FUZZ_SEED=$RANDOM .venv/bin/python -m pytest -s tests/fuzz -k fuzzing

The seed is printed; a finding names its seed, frame index and frame bytes. Keep each real one in
``regressions.py``.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from odradek.clients.simple_client import SimpleClient
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages import FindCoordinatorRequest

from .corpus import Context, examples
from .harness import TRACEBACK, Bystander, BrokerUnderTest, Fuzzer, _check_response, _expected_response
from .regressions import REGRESSIONS

pytestmark = pytest.mark.timeout(600)

DEFAULT_SEED = 13
FUZZ_TOPIC, BYSTANDER_TOPIC = "fuzz-0", "bystander"
# Small internal topics: FindCoordinator creates them on the fly.
OVERRIDES = {"offsets.topic.num.partitions": "2", "transaction.state.log.num.partitions": "2",
             "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module")
def fuzz_cluster(zookeeper, tmp_path_factory):
    from tests.conftest import new_cluster, running
    with running(new_cluster(tmp_path_factory.mktemp("fuzz"), zookeeper, 1, OVERRIDES)) as cluster:
        asyncio.run(_prepare(cluster.bootstrap_servers))
        yield cluster


async def _prepare(bootstrap: str) -> None:
    """The topics, and the coordinators of the fuzz group and transactional id loaded, so that requests
    reach as far into the broker as they can."""
    async with SimpleClient(bootstrap) as client:
        created = await client.create_topics({FUZZ_TOPIC: (2, 1), BYSTANDER_TOPIC: (1, 1)})
        assert set(created.values()) == {0}, created
        await client.wait_for_leaders(FUZZ_TOPIC)
        await client.wait_for_leaders(BYSTANDER_TOPIC)
        ctx = Context(FUZZ_TOPIC)
        for key_type, key in ((0, ctx.group), (1, ctx.transactional_id)):
            request = FindCoordinatorRequest(key=key, key_type=key_type)
            deadline = asyncio.get_running_loop().time() + 30
            while (await client.send(None, request)).error_code:
                assert asyncio.get_running_loop().time() < deadline, f"no coordinator for {key} after 30 s"
                await asyncio.sleep(0.2)


def _broker(cluster) -> BrokerUnderTest:
    slot = cluster.brokers[0]
    return BrokerUnderTest(slot.port, slot.process.pid, slot.log_path)


async def _advertised(port: int) -> dict[int, tuple[int, int]]:
    from tests.unit.broker.network.helpers import Client
    client = await Client.connect(port)
    try:
        body = await client.api_versions()
        return {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    finally:
        client.close()


def test_the_seed_requests_encode_and_decode_at_every_advertised_version():
    from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS
    from odradek.protocol.header import decode_request, encode_request
    for api_key, version, request in examples(Context(FUZZ_TOPIC), dict(KAFKA_2_8_VERSIONS)):
        header, body = decode_request(memoryview(encode_request(request, version, 1, "odradek-fuzz"))[4:])
        assert (header.api_key, header.api_version) == (api_key, version)


@pytest.mark.slow
def test_fuzzing_every_api_leaves_the_broker_and_its_clients_unharmed(fuzz_cluster):
    seconds = float(os.environ.get("ODRADEK_FUZZ_SECONDS", "45"))
    seed = int(os.environ.get("ODRADEK_FUZZ_SEED", str(DEFAULT_SEED)))
    print(f"\nfuzzing for {seconds:g} s with seed {seed} (ODRADEK_FUZZ_SEED={seed} repeats it)")
    broker = _broker(fuzz_cluster)

    async def main():
        versions = await _advertised(broker.port)
        fuzzer = Fuzzer(broker, seed, Context(FUZZ_TOPIC), {BYSTANDER_TOPIC}, versions, {0})
        bystander = Bystander(fuzz_cluster.bootstrap_servers, BYSTANDER_TOPIC)
        stop = asyncio.Event()
        client = asyncio.ensure_future(bystander.run(stop))
        try:
            await fuzzer.run(seconds)
        finally:
            stop.set()
            await asyncio.wait_for(client, 60)
        if not bystander.errors:
            await bystander.verify()
        return fuzzer, bystander

    fuzzer, bystander = asyncio.run(main())
    s = fuzzer.stats
    print(f"sent {s.sent} frames over {len(s.per_api)} apis ({s.skipped} skipped as legitimate orders): "
          f"{s.answered} answered, {s.closed} closed, {s.timed_out} held past the reply timeout; broker RSS "
          f"{s.rss_start_kib // 1024} MiB after warm-up, at most {s.rss_max_kib // 1024} MiB; the bystander "
          f"wrote and read back {bystander.produced} records")
    for finding in fuzzer.findings:
        print(finding.describe(seed), end="\n\n")
    assert not fuzzer.findings, f"seed {seed}: {len(fuzzer.findings)} findings (printed above)"
    assert not bystander.errors, bystander.errors
    assert set(s.per_api) == set(fuzzer.versions), "some apis were never fuzzed"


@pytest.mark.parametrize("regression", REGRESSIONS, ids=[r.name for r in REGRESSIONS])
def test_frames_the_fuzzer_found_are_answered_without_a_traceback(fuzz_cluster, regression):
    broker = _broker(fuzz_cluster)

    async def main():
        framed = bytes.fromhex(regression.frame_hex)
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
        try:
            writer.write(framed)
            try:
                size = int.from_bytes(await asyncio.wait_for(reader.readexactly(4), 5), "big", signed=True)
                data = await asyncio.wait_for(reader.readexactly(size), 5)
            except (asyncio.IncompleteReadError, ConnectionError):
                data = None  # closed: Kafka's answer to some bad input
            except asyncio.TimeoutError:
                data = None  # held (a parked request): the broker must still be fine
        finally:
            writer.close()
        if data is not None:
            assert _check_response(data, _expected_response(framed)) == ""
        else:
            assert not regression.answered, "no answer within 5 s"
        await asyncio.sleep(0.2)
        assert await broker.answers_api_versions()

    asyncio.run(main())
    log = broker.new_log()
    assert TRACEBACK not in log, log[log.find(TRACEBACK) - 300:][:3000]
    assert regression.api_key in ApiKey._value2member_map_
