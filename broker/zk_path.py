"""ZooKeeper's rule for a path (its client's PathUtils.validatePath), which Kafka 2.8 meets when it builds a
znode path from a name in a request: a name that makes an illegal path fails there (IllegalArgumentException,
UNKNOWN_SERVER_ERROR), where kazoo would normalise the path or fail otherwise."""

from __future__ import annotations


def is_valid_path(path: str) -> bool:
    """Absolute, no empty, "." or ".." element, no trailing "/", none of the characters ZooKeeper refuses."""
    if not path.startswith("/"):
        return False
    if path == "/":
        return True
    return all(part not in ("", ".", "..") for part in path[1:].split("/")) and not any(
        c < "\u0020" or "\u007f" <= c <= "\u009f" or "\ud800" <= c <= "\uf8ff" or c >= "\ufff0" for c in path)
