"""Odradek's Python clients and command-line tools (issue 5)."""
