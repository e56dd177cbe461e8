"""The crash-safe segment swap of the log cleaner, on disk: Kafka 2.8's replaceSegments file protocol.

The cleaner writes a group of segments into one new segment whose files carry the ``.cleaned`` suffix
(``<base>.log.cleaned``, ``<base>.index.cleaned``, ...). ``Log.replace_segments`` then:

1. renames the new segment's files ``.cleaned`` -> ``.swap`` (log file first, then its indexes);
2. renames each replaced segment's files to ``.deleted`` and removes them;
3. renames the new segment's files ``.swap`` -> ``""``.

A crash at any point leaves a log that loading repairs (``remove_temp_files_and_collect_swaps``, then
``Log._complete_swaps``): before step 1 ends, ``.cleaned`` files exist, every ``.swap`` log at or above the
lowest ``.cleaned`` offset is an unfinished rename and is discarded with them (the old segments are
intact); after step 1, the ``.swap`` segment is recovered and replaces the segments it overlaps; after
step 3 there is nothing left to do. ``.deleted`` files are always removed, and index files next to a
``.swap`` are rebuilt, as Kafka does.
"""

from __future__ import annotations

import os

from .segment import (
    CLEANED_SUFFIX, DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX,
    parse_base_offset, segment_path,
)

_INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _delete_indexes(directory: str, base_offset: int, suffix: str = "") -> None:
    for index_suffix in _INDEX_SUFFIXES:
        _unlink(segment_path(directory, base_offset, index_suffix + suffix))


def remove_temp_files_and_collect_swaps(directory: str) -> list[int]:
    """Kafka's removeTempFilesAndCollectSwapFiles: remove ``.deleted``, ``.cleaned`` and ``.tmp`` files and
    unfinished swaps; return the base offsets of the ``.log.swap`` files that must complete their swap.

    The indexes of a swapped segment are rebuilt (the swap segment is recovered), so the regular index
    files of every ``.swap`` base offset, and the ``.swap`` indexes themselves, are removed here.
    """
    swap_logs: list[int] = []
    cleaned: list[str] = []
    min_cleaned = None
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if name.endswith((DELETED_SUFFIX, ".tmp")):
            _unlink(path)
        elif name.endswith(CLEANED_SUFFIX):
            base = parse_base_offset(name)
            min_cleaned = base if min_cleaned is None else min(min_cleaned, base)
            cleaned.append(path)
        elif name.endswith(SWAP_SUFFIX):
            base = parse_base_offset(name)
            _delete_indexes(directory, base)
            if name[:-len(SWAP_SUFFIX)].endswith(LOG_SUFFIX):
                swap_logs.append(base)
            else:
                _unlink(path)
    valid = []
    for base in sorted(swap_logs):
        if min_cleaned is not None and base >= min_cleaned:
            # A rename from .cleaned to .swap that did not finish: the swap never happened.
            _unlink(segment_path(directory, base, LOG_SUFFIX + SWAP_SUFFIX))
        else:
            valid.append(base)
    for path in cleaned:
        _unlink(path)
    return valid

