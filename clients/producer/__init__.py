"""The producer: AIOProducer and the blocking Producer, the record accumulator, the sender, idempotent
sequences and the transaction manager (as aiokafka's ``producer/`` and the Java client's ``producer/``)."""
