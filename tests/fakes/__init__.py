"""Test doubles shared by the unit tests, one of each: a hand-set clock, an in-memory KafkaZkClient, real
ReplicaManagers on disk with the LeaderAndIsr partition states that drive them, and a threaded raw-socket
server for the fake brokers that librdkafka talks to. A fake lives here once two test modules need it."""
