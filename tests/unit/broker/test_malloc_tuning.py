"""The broker's malloc tuning: megabyte buffers freed and allocated again reuse the heap instead of faulting in
fresh pages each time, and an operator's own malloc settings are left alone. Each case runs in a process of
its own, so that this test process keeps glibc's defaults."""

import subprocess
import sys

import pytest

from odradek.broker.malloc_tuning import keep_freed_buffers

CHURN = """
import resource, sys
from odradek.broker.malloc_tuning import keep_freed_buffers
tuned = keep_freed_buffers() if sys.argv[1] == "tune" else None
faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    blocks = [bytes(1 << 20) for _ in range(3)]  # warm-up: the heap grows to its working size
del blocks
before = faults()
for _ in range(200):  # what a broker does per consumer fetch of three partitions: read, answer, free
    blocks = [bytes(1 << 20) for _ in range(3)]
    del blocks
print(tuned, (faults() - before) / 200)
"""


def churn(mode: str) -> tuple[str, float]:
    out = subprocess.run([sys.executable, "-c", CHURN, mode], capture_output=True, text=True, check=True).stdout
    tuned, per_round = out.split()
    return tuned, float(per_round)


def test_megabyte_buffers_reuse_the_heap_once_tuned():
    tuned, faults_per_round = churn("tune")
    if tuned != "True":
        pytest.skip("no glibc mallopt here")
    # 3 MiB fresh from the kernel would be 768 page faults a round (glibc's defaults give tens to hundreds)
    assert faults_per_round < 10


def test_an_operators_malloc_settings_are_left_alone():
    assert keep_freed_buffers({"MALLOC_TRIM_THRESHOLD_": "1048576"}) is False
    assert keep_freed_buffers({"MALLOC_MMAP_THRESHOLD_": "131072"}) is False
    assert keep_freed_buffers({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1048576"}) is False
