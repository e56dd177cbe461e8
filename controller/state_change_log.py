"""The state-change log: every partition and replica state transition and every controller request sent.

Kafka writes these lines through its ``state.change.logger`` log4j logger into logs/state-change.log,
apart from the server log. We do the same with a dedicated Python logger, ``odradek.state.change``,
and a file handler: the file is ``state-change.log`` in the directory named by the setting
``odradek.state.change.log.dir``, or else in the parent of the broker's first log dir. Until
``configure`` is called the logger just propagates like any other (tests see its lines in caplog).

Lines follow Kafka's wording: ``[Controller id=1 epoch=3] Changed partition t-0 from NewPartition to
OnlinePartition with state LeaderAndIsr(...)``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

STATE_CHANGE_LOGGER = "odradek.state.change"
STATE_CHANGE_LOG_DIR_KEY = "odradek.state.change.log.dir"
STATE_CHANGE_LOG_FILE = "state-change.log"

state_change_log = logging.getLogger(STATE_CHANGE_LOGGER)

_handler: logging.FileHandler | None = None


def state_change_log_dir(config: Any) -> Path:
    """The setting's directory, or the parent of the first log dir (Kafka's logs/ sits beside the data)."""
    originals = getattr(config, "originals", {}) or {}
    chosen = originals.get(STATE_CHANGE_LOG_DIR_KEY)
    if chosen:
        return Path(chosen)
    return Path(os.path.abspath(config.log_dirs[0])).parent


def configure(directory: str | os.PathLike[str]) -> Path:
    """Send the state-change lines (INFO and up) to ``<directory>/state-change.log`` and no longer to the
    server log (Kafka's additivity=false). Calling it again moves the file. Returns the file's path."""
    global _handler
    path = Path(directory) / STATE_CHANGE_LOG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    close()
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(message)s (state.change.logger)"))
    state_change_log.addHandler(handler)
    state_change_log.setLevel(logging.INFO)
    state_change_log.propagate = False
    _handler = handler
    return path


def configure_from(config: Any) -> Path:
    """``configure`` with the broker config's directory (see ``state_change_log_dir``)."""
    return configure(state_change_log_dir(config))


def close() -> None:
    """Remove the file handler (broker shutdown, tests); the logger propagates again."""
    global _handler
    if _handler is not None:
        state_change_log.removeHandler(_handler)
        _handler.close()
        _handler = None
        state_change_log.propagate = True
        state_change_log.setLevel(logging.NOTSET)


def prefix(controller_id: int, epoch: int) -> str:
    """Kafka's ``[Controller id=1 epoch=3]`` line prefix."""
    return f"[Controller id={controller_id} epoch={epoch}]"


def describe_leader_and_isr(state: Any, zk_version: int | None = None) -> str:
    """A partition state as Kafka prints LeaderAndIsr / LeaderIsrAndControllerEpoch."""
    text = (f"LeaderAndIsr(leader={state.leader}, leaderEpoch={state.leader_epoch}, isr={list(state.isr)}, "
            f"zkVersion={zk_version if zk_version is not None else -1})")
    return f"LeaderIsrAndControllerEpoch({text}, controllerEpoch={state.controller_epoch})"
