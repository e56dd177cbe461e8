"""Which (api key, version) pairs the differential scenarios have compared, for the coverage test and report."""

from __future__ import annotations

from typing import Iterable

from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS

_covered: set[tuple[int, int]] = set()


def note_covered(pairs: Iterable[tuple[int, int]]) -> None:
    _covered.update(pairs)


def covered() -> set[tuple[int, int]]:
    return set(_covered)


def advertised() -> set[tuple[int, int]]:
    return {(key, v) for key, (low, high) in KAFKA_2_8_VERSIONS.items() for v in range(low, high + 1)}
