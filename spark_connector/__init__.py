"""A PySpark DataSource reading and writing Kafka topics (issue 7)."""
