"""The blocking Producer's bulk hand-off to its event loop, against real broker processes: bursts of
sends from several threads keep each thread's order, every callback fires, and a record's own error
(too large, no such partition, topic unknown after max_block_ms) fails that record only."""

from __future__ import annotations

import threading

import pytest

from odradek.clients.producer.sync_producer import Producer
from odradek.protocol.errors import MessageTooLargeError, RequestTimedOutError
from tests.integration.helpers import create_topic, read_all, run

pytestmark = pytest.mark.timeout(240)


# buffer_memory of 20,000 bytes: the hand-off keeps stopping at a full buffer and waiting on the loop.
@pytest.mark.parametrize("buffer_memory", [33554432, 20000])
def test_bursts_from_two_threads_keep_each_threads_order_and_fire_every_callback(single_broker_cluster,
                                                                                 buffer_memory):
    servers = single_broker_cluster.bootstrap_servers
    topic, per_thread = f"handoff-order-{buffer_memory}", 3000
    run(create_topic(servers, topic, 1))
    called: dict[str, list] = {"a": [], "b": []}
    futures: dict[str, list] = {}
    with Producer(bootstrap_servers=servers, linger_ms=2, buffer_memory=buffer_memory) as producer:
        def burst(name: str) -> None:
            sent = []
            for i in range(per_thread):
                future = producer.send(topic, b"%s-%d" % (name.encode(), i), partition=0)
                sent.append(future.add_callback(called[name].append))
            futures[name] = sent

        threads = [threading.Thread(target=burst, args=(name,)) for name in called]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        producer.flush(timeout=120)
        assert all(future.succeeded() for sent in futures.values() for future in sent)
    log = run(read_all(servers, topic, 1))[0]
    assert len(log) == 2 * per_thread
    by_offset = {record.offset: record.value for record in log}
    for name, sent in futures.items():
        offsets = [future.get(timeout=0).offset for future in sent]
        assert offsets == sorted(offsets), f"thread {name}'s records were reordered"
        assert [by_offset[offset] for offset in offsets] == [b"%s-%d" % (name.encode(), i) for i in range(per_thread)]
        assert sorted(m.offset for m in called[name]) == offsets  # each callback once, with its metadata


def test_errors_surface_per_record_inside_one_burst(single_broker_cluster):
    servers = single_broker_cluster.bootstrap_servers
    topic = "handoff-errors"
    run(create_topic(servers, topic, 3))
    errors: list = []
    with Producer(bootstrap_servers=servers, max_request_size=1024, linger_ms=5) as producer:
        futures = []
        for i in range(600):
            if i % 10 == 3:
                future = producer.send(topic, b"x" * 2000, partition=i % 3)  # larger than max_request_size
            elif i % 10 == 7:
                future = producer.send(topic, b"bad-%d" % i, partition=5)  # the topic has 3 partitions
            else:
                future = producer.send(topic, b"ok-%d" % i, partition=i % 3)
            futures.append(future.add_errback(errors.append))
        producer.flush(timeout=120)
    for i, future in enumerate(futures):
        if i % 10 == 3:
            with pytest.raises(MessageTooLargeError):
                future.get(timeout=0)
        elif i % 10 == 7:
            assert isinstance(future.exception(timeout=0), ValueError)
        else:
            assert future.get(timeout=0).partition == i % 3
    assert len(errors) == 120
    stored = run(read_all(servers, topic, 3))
    for partition, records in stored.items():
        assert [r.value for r in records] == [b"ok-%d" % i for i in range(600)
                                              if i % 3 == partition and i % 10 not in (3, 7)]


def test_a_record_for_an_unknown_topic_fails_after_max_block_ms_and_later_records_keep_their_order(
        odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, {"auto.create.topics.enable": "false"})
    servers = cluster.bootstrap_servers
    topic = "handoff-known"
    run(create_topic(servers, topic, 1))
    with Producer(bootstrap_servers=servers, max_block_ms=1500, linger_ms=5) as producer:
        before = [producer.send(topic, b"before-%d" % i) for i in range(200)]
        unknown = producer.send("handoff-never-created", b"lost")
        after = [producer.send(topic, b"after-%d" % i) for i in range(200)]
        with pytest.raises(RequestTimedOutError):
            unknown.get(timeout=60)
        producer.flush(timeout=60)
        assert all(future.succeeded() for future in before + after)
    values = [record.value for record in run(read_all(servers, topic, 1))[0]]
    assert values == [b"before-%d" % i for i in range(200)] + [b"after-%d" % i for i in range(200)]
