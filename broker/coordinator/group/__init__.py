"""The group coordinator: __consumer_offsets, group membership and committed offsets (Kafka's GroupCoordinator)."""
