"""The broker's life cycle as Kafka 2.8 reports it (org.apache.kafka.metadata.BrokerState): the values of
the kafka.server:type=KafkaServer,name=BrokerState gauge, which dashboards and alerts compare with 3."""

from __future__ import annotations

from enum import IntEnum


class BrokerState(IntEnum):
    NOT_RUNNING = 0
    STARTING = 1
    RECOVERY = 2  # opening (and recovering) the logs
    RUNNING = 3
    PENDING_CONTROLLED_SHUTDOWN = 6
    SHUTTING_DOWN = 7
