"""Broker logging: leveled, Kafka-like text lines or JSON lines, levels per logger from the environment.

    ODRADEK_LOG_LEVEL=INFO                 root level (also KAFKA_LOG4J_ROOT_LOGLEVEL, the Confluent image's)
    ODRADEK_LOG_FORMAT=text|json           json: one object per line (time, level, logger, message, exception)
    ODRADEK_LOG_LEVELS=kafka.request.logger=DEBUG,odradek.controller=DEBUG
                                           per-logger levels (also KAFKA_LOG4J_LOGGERS, same syntax)

The request log is ``kafka.request.logger`` at DEBUG (see request_metrics); state changes go to
state-change.log (controller/state_change_log.py).
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Mapping, TextIO

from ..broker_loggers import LEVELS

TEXT_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: structured fields a log shipper can index without parsing text."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "thread": record.threadName,
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def parse_levels(text: str) -> dict[str, int]:
    """``a.b=DEBUG,c=WARN`` -> {logger: level}, log4j's names (broker_loggers.LEVELS: WARN, FATAL, TRACE) or
    Python's; unknown level names are skipped."""
    levels = {}
    for item in text.split(","):
        name, sep, level = item.partition("=")
        level = level.strip().upper()
        value = LEVELS.get(level) or logging.getLevelName(level)
        if sep and name.strip() and isinstance(value, int):
            levels[name.strip()] = value
    return levels


def setup_logging(environ: Mapping[str, str], stream: TextIO | None = None) -> None:
    root_level = (environ.get("ODRADEK_LOG_LEVEL") or environ.get("KAFKA_LOG4J_ROOT_LOGLEVEL") or "INFO").upper()
    handler = logging.StreamHandler(stream or sys.stderr)
    if environ.get("ODRADEK_LOG_FORMAT", "text").lower() == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    level = LEVELS.get(root_level) or logging.getLevelName(root_level)
    root.setLevel(level if isinstance(level, int) else logging.INFO)
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    for source in ("KAFKA_LOG4J_LOGGERS", "ODRADEK_LOG_LEVELS"):
        text = environ.get(source, "")
        levels = parse_levels(text)
        for name, value in levels.items():
            logging.getLogger(name).setLevel(value)
        for item in (i.strip() for i in text.split(",")):
            if item and item.partition("=")[0].strip() not in levels:
                logging.getLogger(__name__).warning("%s: ignoring '%s' (expected logger=LEVEL, LEVEL one of %s)",
                                                    source, item, ", ".join(LEVELS))
    if not isinstance(level, int):
        logging.getLogger(__name__).warning("Unknown root log level '%s' (one of %s): using INFO", root_level,
                                            ", ".join(LEVELS))
