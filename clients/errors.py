"""Client-side failures that have no Kafka error code: the connection itself went wrong.

Kafka error codes in responses are ``odradek.protocol.errors`` classes; these are for the transport.
They subclass the builtin ``ConnectionError`` so callers can catch either.
"""

from __future__ import annotations


class KafkaConnectionError(ConnectionError):
    """The connection to a broker failed or was closed; every request in flight on it fails with this."""


class CorrelationIdError(KafkaConnectionError):
    """A response arrived whose correlation id is not the oldest one in flight (the stream is out of sync)."""


class NoBrokersAvailableError(KafkaConnectionError):
    """None of the bootstrap servers (nor any known broker) could be reached."""
