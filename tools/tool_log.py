"""One line of a tool's log in the layout of Kafka's tools-log4j.properties: ``[%d] %p %m (%c)%n``, where
log4j's %d is ``yyyy-MM-dd HH:mm:ss,SSS`` in local time."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TextIO


def log4j_timestamp(moment: datetime | None = None) -> str:
    moment = moment or datetime.now()
    return moment.strftime("%Y-%m-%d %H:%M:%S,") + f"{moment.microsecond // 1000:03d}"


def log_line(level: str, message: str, logger: str, file: TextIO | None = None) -> None:
    print(f"[{log4j_timestamp()}] {level} {message} ({logger})", file=file or sys.stderr)
