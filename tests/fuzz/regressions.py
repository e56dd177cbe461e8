"""Frames the fuzzer found that once broke the broker: a traceback, a dead broker, runaway memory.

Each entry keeps the seed and frame index that produced it and the (minimised, or rebuilt by hand
where noted) frame, size prefix included; ``test_fuzz.py`` replays them against a real broker.
"""

from __future__ import annotations

from typing import NamedTuple


class Regression(NamedTuple):
    name: str        # what it broke
    seed: int
    index: int
    api_key: int
    version: int
    frame_hex: str
    answered: bool = False  # the broker must answer it (within seconds), not only survive it


# Not a single frame, so kept as a unit test instead: seed 32 created a topic with a 249-character name and
# deleted it; "<topic>-0.<uuid>-delete" did not fit in 255 characters (test_log_background.py).
REGRESSIONS: list[Regression] = [
    Regression("elect-leaders-unknown-election-type", 13, 158, 43, 1,
               "00000029002b00010000009e000c00000000000000000000000080000000000000000000000000000000000000"),
    # Rebuilt: AlterConfigs of topic ".." (kazoo refused the znode path ".../.." with a ValueError).
    Regression("alter-configs-illegal-topic-name", 16, 541, 33, 0,
               "00000038002100000000021d000c6f64726164656b2d66757a7a000000010200022e2e00000001000c726574656e74696f"
               "6e2e6d7300043130303000"),
    # Rebuilt: DescribeConfigs of a 32,767-character topic name; the error message quoting it did not fit
    # an int16-length string, so the response could not be encoded.
    Regression("describe-configs-error-message-too-long", 16, 3181, 32, 3,
               "000080220020000300000c6d000c6f64726164656b2d66757a7a00000001027fff" + "78" * 32767 + "ffffffff0000"),
    Regression("leader-and-isr-stale-epoch-illegal-topic-name", 15, 898, 4, 1,
               "0000003b0004000100000382ffff00000000000000000000000100022e2e0000000000000000000000000000000000000000"
               "00000000000000000000"),
    Regression("create-partitions-illegal-topic-name", 18, 148, 37, 2,
               "000000270025000200000094000c0000000000000000000000000002032e2e000000000000000000000000"),
    Regression("offset-commit-retention-overflows-int64", 22, 3324, 8, 2,
               "0000004a0008000200000cfcffff0012000000000000000000000000000000000000ff00000000007fffff000000000000"
               "000001000666757a7a2d30000000010000000000000000000000000000"),
    # Rebuilt: validate_only CreateTopics of 2**31 - 1 partitions; the broker built that assignment (minutes,
    # gigabytes) before answering.
    Regression("create-topics-validate-only-int32-max-partitions", 14, 120, 19, 5,
               "000000300013000500000078000c6f64726164656b2d66757a7a00020966757a7a2d6e65777fffffff0001010100000003"
               "e80100", True),
    Regression("create-partitions-validate-only-int32-max-count", 15, 316, 37, 0,
               "0000002b002500000000013cffff00000001000666757a7a2d307fffffff000000010000000100000000000003e801", True),
    # A client id of ".." reached ZooKeeper as a path element.
    Regression("alter-client-quotas-dot-dot-client-id", 13, 4709, 49, 0,
               "000000260031000000001265000000000001000000010009636c69656e742d696400022e2e0000000000"),
]
