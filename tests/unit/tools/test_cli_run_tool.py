"""common.run_tool: the one main() every CLI tool goes through (exit codes and where messages go)."""

import argparse

import pytest

from odradek.tools.common import KAFKA_VERSION, UsageError, failure_report, run_tool


def _parse(args):
    if args[:1] == ["--bad"]:
        raise UsageError("bad is not a recognized option")
    return argparse.Namespace(version="--version" in args, args=args)


class Expected(Exception):
    pass


class Other(Exception):
    pass


def test_usage_error_while_parsing_or_running_is_one_stderr_line_and_exit_1(capsys):
    assert run_tool(_parse, lambda opts: 0, ["--bad"]) == 1
    assert capsys.readouterr().err == "bad is not a recognized option\n"

    def run(opts):
        raise UsageError("found while running")
    assert run_tool(_parse, run, []) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "found while running\n")


def test_version_prints_kafkas_version_line_without_running(capsys):
    ran = []
    assert run_tool(_parse, ran.append, ["--version"]) == 0
    assert capsys.readouterr().out == KAFKA_VERSION + "\n"
    assert ran == []


def test_run_result_is_the_exit_code_and_none_means_0():
    assert run_tool(_parse, lambda opts: None, []) == 0
    assert run_tool(_parse, lambda opts: 3, []) == 3


def test_ctrl_c_exits_130():
    def run(opts):
        raise KeyboardInterrupt
    assert run_tool(_parse, run, []) == 130


def test_failures_are_tried_in_order_and_unlisted_exceptions_propagate(capsys):
    def failing(exc):
        def run(opts):
            raise exc
        return run

    failures = ((Expected, None), (Exception, failure_report("Error: {kind}: {exc}", stderr=True)))
    assert run_tool(_parse, failing(Expected("quiet")), [], *failures) == 1
    assert capsys.readouterr().err == ""
    assert run_tool(_parse, failing(Other("loud")), [], *failures) == 1
    assert capsys.readouterr().err == "Error: Other: loud\n"
    with pytest.raises(Other):
        run_tool(_parse, failing(Other("bug")), [], (Expected, None))


def test_failure_report_goes_to_stdout_by_default(capsys):
    failure_report("Error while doing it : {message}")(ValueError("it broke"))
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("Error while doing it : it broke\n", "")
