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


def test_a_transition_of_many_partitions_is_one_info_line_and_each_at_debug(tmp_path, caplog):
    """Kafka's line per partition for a handful; one INFO line naming the first ten and the count beyond,
    the per-partition lines at DEBUG (thousands of INFO lines per controller action are what Kafka 1.1 cut)."""
    def line(tp):
        return f"Changed partition {tp[0]}-{tp[1]} from NewPartition to OnlinePartition"

    few = [("t", p) for p in range(3)]
    many = [("t", p) for p in range(2500)]
    with caplog.at_level(logging.INFO, logger=scl.STATE_CHANGE_LOGGER):
        scl.log_items(few, line, scl.partition_name, "Changed {count} partitions: {first}")
        scl.log_items(many, line, scl.partition_name, "Changed {count} partitions: {first}")
    messages = [r.getMessage() for r in caplog.records]
    assert messages[:3] == [line(tp) for tp in few]
    assert len(messages) == 4 and messages[3].startswith("Changed 2500 partitions: t-0, t-1,")
    assert "t-9, ..." in messages[3] and "t-10," not in messages[3]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger=scl.STATE_CHANGE_LOGGER):
        scl.log_items(many, line, scl.partition_name, "Changed {count} partitions: {first}")
    assert len(caplog.records) == 1 + 2500 and caplog.records[-1].getMessage() == line(("t", 2499))
