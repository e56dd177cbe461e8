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
from typing import Any, Callable, Iterable, Sequence, TypeVar

STATE_CHANGE_LOGGER = "odradek.state.change"
STATE_CHANGE_LOG_DIR_KEY = "odradek.state.change.log.dir"
STATE_CHANGE_LOG_FILE = "state-change.log"

state_change_log = logging.getLogger(STATE_CHANGE_LOGGER)

_handler: logging.FileHandler | None = None

T = TypeVar("T")

# Up to this many items, a transition logs Kafka's line per partition or replica at INFO; beyond it one INFO
# line names the first few and the count, and the per-item lines go to DEBUG. Kafka 2.8 logs partition
# transitions per partition at INFO (replica transitions and per-partition requests at TRACE); thousands of
# them per controller action are what Kafka 1.1 had to take out of the hot loops.
PER_ITEM_LINES = 10


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


def log_items(items: Sequence[T], line: Callable[[T], str], name: Callable[[T], str], summary: str,
              level: int = logging.INFO) -> None:
    """Log one state change per item (``line(item)``) when there are few, else ``summary`` (formatted with the
    count and the first names) once and the per-item lines at DEBUG."""
    if not items:
        return
    if len(items) <= PER_ITEM_LINES:
        if state_change_log.isEnabledFor(level):
            for item in items:
                state_change_log.log(level, line(item))
        return
    if state_change_log.isEnabledFor(level):
        shown = ", ".join(name(item) for item in items[:PER_ITEM_LINES])
        state_change_log.log(level, summary.format(count=len(items), first=f"{shown}, ..."))
    if state_change_log.isEnabledFor(logging.DEBUG):
        for item in items:
            state_change_log.debug(line(item))


def partition_name(tp: tuple[str, int]) -> str:
    """``topic-0``, as Kafka's TopicPartition prints."""
    return f"{tp[0]}-{tp[1]}"


def apply_transitions(states: dict, items: Sequence[T], target: Any, absent: Any) -> list[tuple[T, Any]]:
    """Move ``items`` to ``target`` in a state machine's ``states`` (``absent``: the state of items not in it,
    which removes them); returns (item, previous state) of each."""
    moved = []
    for item in items:
        moved.append((item, states.get(item, absent)))
        if target == absent:
            states.pop(item, None)
        else:
            states[item] = target
    return moved


def split_valid(states: dict, items: Iterable[T], allowed: Any, absent: Any) -> tuple[list[T], list[tuple[T, Any]]]:
    """(items whose current state is in ``allowed``, (item, current state) of the others)."""
    valid, invalid = [], []
    for item in items:
        current = states.get(item, absent)
        if current in allowed:
            valid.append(item)
        else:
            invalid.append((item, current))
    return valid, invalid
