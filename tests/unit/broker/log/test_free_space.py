"""The free-space warning: once per fall below the threshold, not at every check."""

import logging

from odradek.broker.log.free_space import FreeSpaceMonitor, free_bytes


def test_one_warning_per_crossing(caplog):
    free = {"/a": 5000, "/b": 500}
    monitor = FreeSpaceMonitor(lambda: ["/a", "/b"], 1000, free=lambda d: free[d])
    with caplog.at_level(logging.INFO, logger="odradek.broker.log.free_space"):
        monitor.check()
        monitor.check()
        free["/b"] = 300
        monitor.check()
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "/b has 500 B free (500 bytes)" in warnings[0]
        free["/b"] = 1050  # above, but not by a tenth: still low
        monitor.check()
        free["/b"] = 2000
        monitor.check()
        assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == [
            "Log directory /b has 2.0 KiB free again (2000 bytes)"]
        free["/b"] = 10
        monitor.check()
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


def test_off_at_zero_and_a_real_filesystem_has_free_space(tmp_path, caplog):
    FreeSpaceMonitor(lambda: [str(tmp_path)], 0, free=lambda d: 0).check()
    assert not caplog.records
    assert free_bytes(str(tmp_path)) > 0
