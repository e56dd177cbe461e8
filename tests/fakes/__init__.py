"""Test doubles shared by the tests, one copy of each: a hand-set clock (clock), an in-memory KafkaZkClient
(zookeeper), real ReplicaManagers on disk and the LeaderAndIsr partition states that drive them
(replica_manager), the coordinators' replica manager on real Logs and metadata cache
(coordinator_services), a threaded raw-socket server for the fake brokers librdkafka talks to
(socket_broker), the controller tests' brokers of real sockets and controllers (controller_brokers), and the
polling wait for a condition other tasks make true (polling).
A fake moves here once a second test module needs it."""
