"""Where the state-change log goes, and that configuring it twice keeps one file handler."""

import logging
from types import SimpleNamespace

from odradek.controller import state_change_log as scl


def test_directory_is_the_setting_or_the_first_log_dirs_parent(tmp_path):
    default = SimpleNamespace(originals={}, log_dirs=[str(tmp_path / "data" / "a"), "/elsewhere"])
    assert scl.state_change_log_dir(default) == tmp_path / "data"
    chosen = SimpleNamespace(originals={scl.STATE_CHANGE_LOG_DIR_KEY: str(tmp_path / "logs")}, log_dirs=["/x"])
    assert scl.state_change_log_dir(chosen) == tmp_path / "logs"


def test_configure_twice_moves_the_file_and_close_restores_propagation(tmp_path):
    logger = logging.getLogger(scl.STATE_CHANGE_LOGGER)
    try:
        scl.configure(tmp_path / "one")
        second = scl.configure(tmp_path / "two")
        scl.state_change_log.info("%s Changed partition t-0", scl.prefix(1, 2))
        assert len(logger.handlers) == 1 and not logger.propagate
        assert "[Controller id=1 epoch=2] Changed partition t-0" in second.read_text()
        assert (tmp_path / "one" / "state-change.log").read_text() == ""
    finally:
        scl.close()
    assert logger.handlers == [] and logger.propagate
