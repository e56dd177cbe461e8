"""``odradek-state-change-log-merger``: Kafka 2.8's StateChangeLogMerger (kafka-run-class kafka.tools.StateChangeLogMerger).

Merges the ``state-change.log`` files of several brokers (and rotated days) into one history ordered by
the lines' timestamps::

    odradek-state-change-log-merger --logs b0/state-change.log,b1/state-change.log --topic events \\
        --partitions 0,1 --start-time "2026-11-21 08:00:00,000" --end-time "2026-11-21 09:00:00,000"
    odradek-state-change-log-merger --logs-regex '/var/log/odradek/state-change.log.*'

As Kafka: exactly one of --logs (comma-separated files) and --logs-regex (a directory, then a regex searched
in its file names); --partitions needs --topic and may not repeat; times are "yyyy-MM-dd HH:mm:ss,SSS"
(quotes stripped) and both ends are inclusive; a line without such a timestamp (a stack trace's
continuation) is skipped; the merge is an n-way heap merge that holds one line per file, so logs of any
size stream through. Lines with equal timestamps keep the order of the files given.

Where we differ, on purpose: Kafka finds a line's partition only in the old "[topic,partition]" form,
which its own 2.x controller no longer writes ("partition topic-0"), so it dropped almost every line.
We recognise "[topic,partition]", "topic-partition" tokens (as our and Kafka's 2.x controllers write them)
and "('topic', partition)"; with --topic a line is kept when any partition it names matches; without
--topic every timestamped line in the time range is kept (the lines naming no partition, e.g.
UpdateMetadata sends, are part of the history).
"""

from __future__ import annotations

import heapq
import os
import re
import sys
from datetime import datetime
from typing import Iterator, Sequence

from .common import Parser, UsageError, failure_report, parse_known, run_tool

DATE_FORMAT = "yyyy-MM-dd HH:mm:ss,SSS"
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2},[0-9]{3}")
_LEGAL = r"[a-zA-Z0-9._-]"  # Kafka's Topic.LEGAL_CHARS
_PARTITIONS = re.compile(
    rf"\[({_LEGAL}+),([0-9]+)\]"   # Kafka 0.8-1.x: [topic,0] (Kafka allows spaces; "isr=[1, 2]" is no partition)
    rf"|(?<![a-zA-Z0-9._-])({_LEGAL}+)-([0-9]+)(?![a-zA-Z0-9._])"  # 2.x and ours: partition topic-0
    rf"|\('({_LEGAL}+)', ([0-9]+)\)")  # a Python (topic, partition) tuple


def _parser() -> Parser:
    parser = Parser(prog="odradek-state-change-log-merger", add_help=True,
                    description="A tool for merging the log files from several brokers to reconstruct a unified "
                                "history of what happened.")
    parser.add_argument("--logs", help="Comma separated list of state change logs", metavar="file1,file2,...")
    parser.add_argument("--logs-regex", help="Regex to match the state change log files to be merged",
                        metavar="for example: /tmp/state-change.log*")
    parser.add_argument("--topic", help="The topic whose state change logs should be merged")
    parser.add_argument("--partitions", help="Comma separated list of partition ids whose state change logs "
                                             "should be merged", metavar="0,1,2,...")
    parser.add_argument("--start-time", help=f"The earliest timestamp of state change log entries to be merged, "
                                             f"in the format {DATE_FORMAT}")
    parser.add_argument("--end-time", help=f"The latest timestamp of state change log entries to be merged, "
                                           f"in the format {DATE_FORMAT}")
    return parser


class MergeOptions:
    def __init__(self, files: list[str], topic: str | None, partitions: set[int] | None,
                 start: str | None, end: str | None) -> None:
        self.files = files
        self.topic = topic
        self.partitions = partitions
        self.start = start
        self.end = end


def _parse_time(flag: str, value: str) -> str:
    """A timestamp in Kafka's format, returned in the same (sortable) form."""
    text = value.replace('"', " ").strip()
    try:
        if not _DATE.fullmatch(text):
            raise ValueError
        datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f")
    except ValueError:
        raise UsageError(f"--{flag} {value!r} is not a timestamp in the format {DATE_FORMAT}") from None
    return text


def _files_matching(regex: str) -> list[str]:
    """Kafka's --logs-regex: the part up to the last '/' is a directory, the rest a regex searched in names."""
    cut = regex.rfind("/") + 1
    directory = "." if cut == 0 else regex[:cut - 1] or "/"
    try:
        pattern = re.compile(regex[cut:])
    except re.error as exc:
        raise UsageError(f"--logs-regex {regex!r} is not a valid regex: {exc}") from None
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise UsageError(f"--logs-regex: cannot list directory {directory}: {exc.strerror}") from None
    return [os.path.join(directory, n) for n in names
            if pattern.search(n) and os.path.isfile(os.path.join(directory, n))]


def parse_args(argv: Sequence[str]) -> MergeOptions:
    if not argv:
        raise UsageError("Provide arguments to exactly one of the two options \"logs\" or \"logs-regex\"")
    opts = parse_known(_parser(), argv)
    if (opts.logs is None) == (opts.logs_regex is None):
        raise UsageError("Provide arguments to exactly one of the two options \"logs\" or \"logs-regex\"")
    if opts.partitions is not None and opts.topic is None:
        raise UsageError("The option \"topic\" needs to be provided an argument when specifying partition ids")
    files = [f for f in opts.logs.split(",") if f] if opts.logs is not None else _files_matching(opts.logs_regex)
    partitions = None
    if opts.partitions is not None:
        try:
            ids = [int(p) for p in opts.partitions.split(",")]
        except ValueError:
            raise UsageError(f"--partitions {opts.partitions!r}: expected comma-separated partition ids "
                             "(e.g. 0,1,2)") from None
        repeated = sorted({p for p in ids if ids.count(p) > 1})
        if repeated:
            raise UsageError("The list of partitions contains repeated entries: " + ",".join(map(str, repeated)))
        partitions = set(ids)
    start = _parse_time("start-time", opts.start_time) if opts.start_time is not None else None
    end = _parse_time("end-time", opts.end_time) if opts.end_time is not None else None
    return MergeOptions(files, opts.topic, partitions, start, end)


def partitions_named(line: str) -> list[tuple[str, int]]:
    """Every (topic, partition) a state-change line names (its text after the timestamp)."""
    found = []
    for m in _PARTITIONS.finditer(line):
        topic, partition = next((m.group(i), m.group(i + 1)) for i in (1, 3, 5) if m.group(i) is not None)
        found.append((topic, int(partition)))
    return found


def wanted_lines(path: str, options: MergeOptions) -> Iterator[tuple[str, str]]:
    """(timestamp, line) for the lines of one file that pass the filters, read lazily."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            date = _DATE.search(line)
            if date is None:
                continue
            stamp = date.group(0)
            if (options.start is not None and stamp < options.start) or (options.end is not None and stamp > options.end):
                continue
            if options.topic is not None:
                named = partitions_named(line[date.end():])
                if not any(t == options.topic and (options.partitions is None or p in options.partitions)
                           for t, p in named):
                    continue
            yield stamp, line


def merge(options: MergeOptions) -> Iterator[str]:
    """The wanted lines of every file, by timestamp (stable: equal timestamps keep the files' order)."""
    for path in options.files:
        if not os.path.isfile(path):
            raise UsageError(f"cannot read state change log {path}: no such file")
    streams = [wanted_lines(path, options) for path in options.files]
    for _, line in heapq.merge(*streams, key=lambda item: item[0]):
        yield line


def _print_merged(options: MergeOptions) -> None:
    out = sys.stdout
    for line in merge(options):
        out.write(line + "\n")
    out.flush()


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(parse_args, _print_merged, argv,
                    (OSError, failure_report("Error while merging state change logs: {exc}", stderr=True)))


if __name__ == "__main__":
    sys.exit(main())
