"""The merger's line parsing and heap merge, on files written here (no broker needed)."""

from __future__ import annotations

from odradek.tools.state_change_log_merger import main, merge, parse_args, partitions_named


def test_partitions_named_in_every_form():
    assert partitions_named("Changed partition my-topic-10 from A to B") == [("my-topic", 10)]
    assert partitions_named("for partitions a-0(leader_epoch=1, delete=False), a.b_c-2(x)") == [("a", 0), ("a.b_c", 2)]
    assert partitions_named("[Controller 1]: [events,3] leader=-1 isr=[1, 2]") == [("events", 3)]
    assert partitions_named("notifications: [('t', 0), ('u-1', 4)]") == [("t", 0), ("u-1", 4)]
    assert partitions_named("Sending UpdateMetadata request to broker 1 for 3 partitions (live brokers [0, 1])") == []


def test_merge_interleaves_by_time_streams_and_filters(tmp_path, capsys):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("[2026-01-01 10:00:00,000] INFO x partition t-0 a1\n"
                 "  a continuation line without a timestamp\n"
                 "[2026-01-01 10:00:02,000] INFO x partition t-1 a2\n")
    b.write_text("[2026-01-01 10:00:00,000] INFO y partition t-1 b1\n"
                 "[2026-01-01 10:00:01,000] INFO y UpdateMetadata b2\n"
                 "[2026-01-01 10:00:03,000] INFO y partition u-0 b3\n")
    logs = f"{a},{b}"
    ends = lambda args: [line.rsplit(" ", 1)[1] for line in merge(parse_args(args))]  # noqa: E731
    assert ends(["--logs", logs]) == ["a1", "b1", "b2", "a2", "b3"]  # equal stamps keep the files' order
    assert ends(["--logs", logs, "--topic", "t"]) == ["a1", "b1", "a2"]
    assert ends(["--logs", logs, "--topic", "t", "--partitions", "1"]) == ["b1", "a2"]
    assert ends(["--logs", logs, "--start-time", "2026-01-01 10:00:01,000",
                 "--end-time", "2026-01-01 10:00:02,000"]) == ["b2", "a2"]
    assert main(["--logs-regex", f"{tmp_path}/^[ab]\\.log$", "--topic", "u"]) == 0
    assert capsys.readouterr().out.endswith("partition u-0 b3\n")
