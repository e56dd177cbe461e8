"""Storage engine: Kafka's on-disk log layout (segments, indexes, checkpoints, recovery, retention)."""
