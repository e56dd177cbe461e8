"""Command-line tools (odradek-topics, odradek-cluster, ...)."""
