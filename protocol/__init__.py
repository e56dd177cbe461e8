"""Sans-IO Kafka wire protocol: bytes <-> messages. Imports no I/O library."""
