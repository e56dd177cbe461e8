"""The Odradek broker: reactor, request handlers, storage, replication, coordinators (issue 3 onwards)."""
