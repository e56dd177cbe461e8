"""The resource types of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: Kafka 2.8's
ConfigResource.Type ids (kafka-python's ConfigResourceType has the same names)."""

from enum import IntEnum


class ConfigResourceType(IntEnum):
    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8  # a broker's loggers and their levels (KIP-412)


TOPIC, BROKER, BROKER_LOGGER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER
