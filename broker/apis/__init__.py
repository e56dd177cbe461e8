"""One module per API: the handlers KafkaApis dispatches to."""
