"""The crash-safe swap (segment_swap.py): a crash at each step of replacing segments by a cleaned one leaves
a log that loads either as before the cleaning (the swap is discarded) or as after it (the swap is
completed), with no temporary files left and nothing removed coming back."""

import os
import shutil

import pytest

from odradek.broker.log import Log

from .helpers import DirectControl, append, compacted_log, keyed, records
from odradek.broker.log.cleaner.cleaner import Cleaner
from odradek.broker.log.cleaner.config import CleanerConfig
from odradek.broker.log.cleaner.log_cleaner import make_task
from odradek.broker.log.cleaner.manager import LogCleanerManager

SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")
STEPS = ["cleaned", "log-swap-only", "all-swap", "one-old-deleted", "old-gone", "log-renamed", "done"]


class Crash(Exception):
    pass


def one_group_log(directory):
    """Three small segments cleaned as one group."""
    log = compacted_log(directory, segment_bytes=1 << 20)
    for i in range(3):
        append(log, keyed((b"a", b"a%d" % i), (b"b%d" % i, b"x")), roll=True)
    return log


def two_group_log(directory):
    """Groups [s0, s1] and [s2]; s2 updates every key of s1, so s1 keeps nothing."""
    log = compacted_log(directory, segment_bytes=1024)
    append(log, keyed((b"a", b"p" * 250)), roll=True)
    append(log, keyed((b"b", b"q" * 250)), roll=True)
    append(log, keyed((b"b", b"r" * 800)), roll=True)
    return log


def crash_at_first_swap(log, snapshot_dir):
    """Clean until the first group is written, copy the log dir as it then is, and stop."""
    manager = LogCleanerManager([os.path.dirname(log.dir)], lambda: {("topic", 0): log})
    cleanable = manager.grab_filthiest_compacted_log(0)
    task, segments = make_task(cleanable)
    control = DirectControl(manager, cleanable, segments)

    def swap(group):
        shutil.copytree(log.dir, snapshot_dir)
        control.group = group
        raise Crash()
    control.swap = swap
    with pytest.raises(Crash):
        Cleaner(CleanerConfig().worker_settings(), control).clean(task)
    return control.group


def rename(directory, base, old, new, suffixes=SUFFIXES):
    for suffix in suffixes:
        path = os.path.join(directory, f"{base:020d}{suffix}{old}")
        if os.path.exists(path):
            os.rename(path, os.path.join(directory, f"{base:020d}{suffix}{new}"))


def crash_state(directory, group, step):
    """Leave ``directory`` as Log.replace_segments would at ``step`` (segment_swap.py's numbered steps)."""
    base, old = group.base_offset, [b for b, _ in group.replaced]
    if step == "cleaned":
        return
    if step == "log-swap-only":
        rename(directory, base, ".cleaned", ".swap", suffixes=(".log",))
        return
    rename(directory, base, ".cleaned", ".swap")
    if step == "all-swap":
        return
    rename(directory, old[0], "", ".deleted")
    if step == "one-old-deleted":
        return
    for b in old:
        rename(directory, b, "", ".deleted")
        for name in os.listdir(directory):
            if name.endswith(".deleted"):
                os.unlink(os.path.join(directory, name))
    if step == "old-gone":
        return
    rename(directory, base, ".swap", "", suffixes=(".log",))
    if step == "log-renamed":
        return
    rename(directory, base, ".swap", "")


def load(directory):
    log = Log(str(directory), compacted_log(os.path.dirname(directory)).config, had_clean_shutdown=False)
    return [(o, k, v) for o, k, v, _ in records(log)], sorted(os.listdir(directory))


@pytest.mark.parametrize("layout", [one_group_log, two_group_log])
def test_a_crash_at_any_step_of_a_swap_leaves_the_log_before_or_after_the_cleaning(tmp_path, layout):
    log = layout(tmp_path / "live")
    before = [(o, k, v) for o, k, v, _ in records(log)]
    group = crash_at_first_swap(log, tmp_path / "snapshot")
    # What the log is once this group is swapped in: the crash-free path, on a copy.
    reference = layout(tmp_path / "reference")
    ref_manager = LogCleanerManager([str(tmp_path / "reference")], lambda: {("topic", 0): reference})
    cleanable = ref_manager.grab_filthiest_compacted_log(0)
    task, segments = make_task(cleanable)
    control = DirectControl(ref_manager, cleanable, segments)
    first_only = control.swap

    def swap_first(g):
        first_only(g)
        raise Crash()
    control.swap = swap_first
    with pytest.raises(Crash):
        Cleaner(CleanerConfig().worker_settings(), control).clean(task)
    after = [(o, k, v) for o, k, v, _ in records(reference)]
    assert after != before

    for step in STEPS:
        directory = tmp_path / f"step-{step}" / "topic-0"
        shutil.copytree(tmp_path / "snapshot", directory)
        crash_state(str(directory), group, step)
        loaded, files = load(str(directory))
        expected = before if step in ("cleaned", "log-swap-only") else after
        assert loaded == expected, step
        assert not [f for f in files if f.endswith((".cleaned", ".swap", ".deleted"))], (step, files)
