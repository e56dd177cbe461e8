"""``log-cleaner.log``: the cleaner's own log file, as Kafka's log4j.properties sets up ``kafka.log.LogCleaner``.

The cleaner's lines (which log to clean, the offset map, each swap, the figures of every cleaning) go to
``log-cleaner.log`` beside ``state-change.log`` (``odradek.state.change.log.dir``, else the parent of the
first log dir) and not to the server log (Kafka's additivity=false). Until ``configure`` is called the
logger propagates like any other.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ....controller.state_change_log import state_change_log_dir

CLEANER_LOGGER = "kafka.log.LogCleaner"
CLEANER_LOG_FILE = "log-cleaner.log"

cleaner_log = logging.getLogger(CLEANER_LOGGER)
_handler: logging.FileHandler | None = None


def configure(directory: str | os.PathLike[str]) -> Path:
    global _handler
    close()
    path = Path(directory) / CLEANER_LOG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(message)s (%(name)s)"))
    cleaner_log.addHandler(handler)
    if cleaner_log.level == logging.NOTSET:
        cleaner_log.setLevel(logging.INFO)
    cleaner_log.propagate = False
    _handler = handler
    return path


def configure_from(config: object) -> Path:
    return configure(state_change_log_dir(config))


def close() -> None:
    global _handler
    if _handler is not None:
        cleaner_log.removeHandler(_handler)
        _handler.close()
        _handler = None
        cleaner_log.propagate = True
