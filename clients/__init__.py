"""Odradek's Python clients: kafka-python-shaped blocking classes and aiokafka-shaped asyncio twins.

    from odradek.clients import Producer, Consumer, Admin, TopicPartition

Names are resolved on first use, so importing one module (the broker uses ``clients.connection``)
does not load the others.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "AIOProducer": "producer", "RecordMetadata": "producer",
    "Producer": "sync_producer", "FutureRecordMetadata": "record_futures", "FutureBatchMetadata": "record_futures",
    "SendBatchResult": "batch_input",
    "AIOConsumer": "consumer", "Consumer": "sync_consumer",
    "AIOAdmin": "admin", "Admin": "admin", "NewTopic": "admin", "NewPartitions": "admin", "AdminTimeoutError": "admin",
    "TopicPartition": "types", "OffsetAndMetadata": "types", "OffsetAndTimestamp": "types",
    "ConsumerRecord": "types", "KafkaConfigurationError": "types",
    "SimpleClient": "simple_client", "SyncSimpleClient": "simple_client",
    "TransactionContext": "producer", "TransactionManager": "transaction_manager",
    "TransactionState": "transaction_manager", "TransactionStateError": "transaction_manager",
    "TransactionAbortedError": "transaction_manager", "CommitFailedError": "transaction_manager",
    "ProducerFencedError": "transaction_manager",
    "ConsumerRebalanceListener": "group.listener", "RangeAssignor": "group.assignors",
    "RoundRobinAssignor": "group.assignors", "StickyAssignor": "group.assignors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
