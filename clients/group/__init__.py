"""Consumer-group membership for our consumer: the coordinator protocol (Join/Sync/Heartbeat/Leave) and the partition assignors."""
