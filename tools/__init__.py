"""Command-line tools (odradek-topics, odradek-cluster, ...), with Kafka's flags and output, and the
local cluster they and the tests start. The top layer: tools may import the broker, the controller and
the clients; nothing below imports tools."""
