"""The broker's loggers as a config resource (BROKER_LOGGER, KIP-412): Kafka 2.8's Log4jController over
Python's logging.

DescribeConfigs lists every logger with its level and IncrementalAlterConfigs sets (SET) or unsets
(DELETE) levels at run time, e.g. ``kafka.request.logger`` to DEBUG for the request log:

    kafka-configs --bootstrap-server ... --entity-type broker-loggers --entity-name 0 \\
        --alter --add-config kafka.request.logger=DEBUG

Levels are log4j's names (FATAL ERROR WARN INFO DEBUG TRACE; TRACE is a level below DEBUG here). The root
logger is ``root``; a logger without a level of its own shows the level it logs at (Kafka 2.8 shows the
root's, which is the same unless a parent logger has a level). A level set this way lasts until the
broker stops, as in Kafka.
"""

from __future__ import annotations

import logging
from typing import Iterable

ROOT_LOGGER = "root"
TRACE = 5
LEVELS = {"FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING, "INFO": logging.INFO,
          "DEBUG": logging.DEBUG, "TRACE": TRACE}  # Kafka's LogLevelConfig.VALID_LOG_LEVELS
_NAMES = {value: name for name, value in LEVELS.items()}

if logging.getLevelName(TRACE) != "TRACE":
    logging.addLevelName(TRACE, "TRACE")


class LoggerConfigError(ValueError):
    """A change Kafka refuses with a ConfigException (answered as INVALID_REQUEST "Invalid config value ...")."""


class LoggerRequestError(ValueError):
    """A change Kafka refuses with an InvalidRequestException (its message as it is)."""


def level_name(level: int) -> str:
    return _NAMES.get(level) or logging.getLevelName(level)


def loggers() -> dict[str, str]:
    """Every logger of the broker process and the level it logs at, the root logger as ``root``."""
    found = {ROOT_LOGGER: level_name(logging.getLogger().level)}
    for name, logger in sorted(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            found[name] = level_name(logger.getEffectiveLevel())
    return found


def _existing(name: str) -> logging.Logger | None:
    if name == ROOT_LOGGER:
        return logging.getLogger()
    logger = logging.Logger.manager.loggerDict.get(name)
    return logger if isinstance(logger, logging.Logger) else None


def validate(ops: Iterable[tuple[str, str, str | None]]) -> None:
    """Kafka's validateLogLevelConfigs over (logger, operation name, level): SET names an existing logger
    and a valid level, DELETE an existing logger other than root; APPEND and SUBTRACT are refused."""
    for name, op, value in ops:
        if op not in ("SET", "DELETE"):
            raise LoggerRequestError(f"{op} operation is not allowed for the BROKER_LOGGER resource")
        if _existing(name) is None:
            raise LoggerConfigError(f"Logger {name} does not exist!")
        if op == "SET" and value not in LEVELS:
            raise LoggerConfigError(f"Cannot set the log level of {name} to {value} as it is not a supported log "
                                    f"level. Valid log levels are {', '.join(LEVELS)}")
        if op == "DELETE" and name == ROOT_LOGGER:
            raise LoggerRequestError(f"Removing the log level of the {ROOT_LOGGER} logger is not allowed")


def apply(ops: Iterable[tuple[str, str, str | None]], log: logging.Logger) -> None:
    """Set or unset the levels (after ``validate``); an unset logger logs at its parent's level."""
    for name, op, value in ops:
        logger = _existing(name)
        assert logger is not None
        if op == "SET":
            log.info("Updating the log level of %s to %s", name, value)
            logger.setLevel(LEVELS[value])  # type: ignore[index]
        else:
            log.info("Unset the log level of %s", name)
            logger.setLevel(logging.NOTSET)
