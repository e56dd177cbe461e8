"""A schema registry speaking Confluent's REST API (v1), storing its data in the cluster's `_schemas` topic.

``odradek-schema-registry`` (``main.py``) runs one process; any number share one `_schemas` topic, one of them
(the writer, elected through a consumer group) writes and the others forward writes to it. ``wire.py`` holds the
client side Spark needs: Confluent's framing (magic byte, schema id) and a caching REST client.
"""
