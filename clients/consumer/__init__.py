"""The consumer: AIOConsumer and the blocking Consumer, and the fetch buffer that turns fetched batches
into records (group membership is in ``clients/group/``)."""
