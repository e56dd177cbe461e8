"""Odradek's Python clients: kafka-python-shaped blocking classes and aiokafka-shaped asyncio twins.

    from odradek.clients import Producer, Consumer, Admin, TopicPartition

Names are resolved on first use, so importing one module (the broker uses ``clients.connection``)
does not load the others.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "AIOProducer": "producer.producer", "RecordMetadata": "producer.producer",
    "TransactionContext": "producer.producer", "Producer": "producer.sync_producer",
    "FutureRecordMetadata": "producer.record_futures", "FutureBatchMetadata": "producer.record_futures",
    "SendBatchResult": "producer.batch_input",
    "TransactionManager": "producer.transaction_manager", "TransactionState": "producer.transaction_manager",
    "TransactionStateError": "producer.transaction_manager", "TransactionAbortedError": "producer.transaction_manager",
    "CommitFailedError": "producer.transaction_manager", "ProducerFencedError": "producer.transaction_manager",
    "AIOConsumer": "consumer.consumer", "Consumer": "consumer.sync_consumer",
    "AIOAdmin": "admin.client", "Admin": "admin.client", "NewTopic": "admin.client", "NewPartitions": "admin.client",
    "AdminTimeoutError": "admin.client",
    "TopicPartition": "types", "OffsetAndMetadata": "types", "OffsetAndTimestamp": "types",
    "ConsumerRecord": "types", "KafkaConfigurationError": "types",
    "SimpleClient": "simple_client", "SyncSimpleClient": "simple_client",
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
