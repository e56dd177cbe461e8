"""The transaction API handlers over a real TransactionCoordinator (real logs, recorded markers): error
codes by request version, unknown partitions, and AddOffsetsToTxn's __consumer_offsets partition."""

from __future__ import annotations

from types import SimpleNamespace

from odradek.broker.apis.authorization import AuthHelper
from odradek.broker.apis.producers import ProducerApis
from odradek.broker.apis.txn_apis import TxnApis
from odradek.protocol.messages import (AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest,
                                       InitProducerIdRequest)
from tests.fakes.coordinator_services import KnownPartitions

from .helpers import run_in_loop
from .test_txn_coordinator import make  # noqa: F401  (the fixture)

_Topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic


def request(body, version):
    return SimpleNamespace(body=body, api_version=version)


async def apis(make):
    coordinator, rm = await make()
    groups = SimpleNamespace(manager=SimpleNamespace(partition_for=lambda group_id: 7))
    services = SimpleNamespace(transaction_coordinator=coordinator, group_coordinator=groups,
                               metadata_cache=KnownPartitions({("t", 0), ("t", 1)}), auth=AuthHelper())
    return TxnApis(services), ProducerApis(services), coordinator


def results(response):
    return {(t.name, r.partition_index): r.error_code for t in response.results for r in t.results}


@run_in_loop
async def test_add_partitions_with_an_unknown_partition_attempts_nothing(make):
    txn, producers, coordinator = await apis(make)
    init = await producers.init_producer_id(request(InitProducerIdRequest(transactional_id="tx",
                                                                          transaction_timeout_ms=1000), 4))
    body = AddPartitionsToTxnRequest(transactional_id="tx", producer_id=init.producer_id,
                                     producer_epoch=init.producer_epoch,
                                     topics=[_Topic(name="t", partitions=[0, 5])])
    assert results(await txn.add_partitions_to_txn(request(body, 3))) == {("t", 0): 55, ("t", 5): 3}
    body.topics = [_Topic(name="t", partitions=[0, 1])]
    assert results(await txn.add_partitions_to_txn(request(body, 3))) == {("t", 0): 0, ("t", 1): 0}
    assert coordinator.state.get_state("tx")[1].metadata.partitions == {("t", 0), ("t", 1)}


@run_in_loop
async def test_old_versions_get_invalid_producer_epoch_instead_of_producer_fenced(make):
    txn, producers, coordinator = await apis(make)
    init = await producers.init_producer_id(request(InitProducerIdRequest(transactional_id="tx",
                                                                          transaction_timeout_ms=1000), 4))
    stale = init.producer_epoch - 1
    add = AddPartitionsToTxnRequest(transactional_id="tx", producer_id=init.producer_id, producer_epoch=stale,
                                    topics=[_Topic(name="t", partitions=[0])])
    assert results(await txn.add_partitions_to_txn(request(add, 1))) == {("t", 0): 47}
    assert results(await txn.add_partitions_to_txn(request(add, 2))) == {("t", 0): 90}
    end = EndTxnRequest(transactional_id="tx", producer_id=init.producer_id, producer_epoch=stale, committed=True)
    assert (await txn.end_txn(request(end, 1))).error_code == 47
    assert (await txn.end_txn(request(end, 2))).error_code == 90
    # A v3 client recovering with an epoch it never had is fenced: INVALID_PRODUCER_EPOCH below v4.
    retry = InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=1000, producer_id=init.producer_id,
                                  producer_epoch=init.producer_epoch + 5)
    assert (await producers.init_producer_id(request(retry, 3))).error_code == 47
    assert (await producers.init_producer_id(request(retry, 4))).error_code == 90


@run_in_loop
async def test_add_offsets_adds_the_groups_offsets_partition(make):
    txn, producers, coordinator = await apis(make)
    init = await producers.init_producer_id(request(InitProducerIdRequest(transactional_id="tx",
                                                                          transaction_timeout_ms=1000), 4))
    body = AddOffsetsToTxnRequest(transactional_id="tx", producer_id=init.producer_id,
                                  producer_epoch=init.producer_epoch, group_id="g")
    assert (await txn.add_offsets_to_txn(request(body, 3))).error_code == 0
    assert coordinator.state.get_state("tx")[1].metadata.partitions == {("__consumer_offsets", 7)}
