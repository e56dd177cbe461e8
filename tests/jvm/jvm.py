"""Running the Java programs of tests/jvm (src/main/java) on a chosen class path and reading their results.

The programs (odradek.jvmtests.Main) run a group of named scenarios in one JVM and print a JSON line per
scenario on stdout; before each scenario they write ``##scenario NAME`` to stderr, where the clients log
(slf4j-simple, WARN and above), so every WARN/ERROR line is attributed to the scenario that caused it.
build.sh resolves the class paths into target/; a test that cannot have them fails saying what is missing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

JVM_DIR = Path(__file__).resolve().parent
TARGET = JVM_DIR / "target"
MAIN_CLASS = "odradek.jvmtests.Main"
GROUP_TIMEOUT = 600.0  # a whole group's JVM; each scenario inside waits at most 60 s for any one condition


def _pom_properties() -> dict[str, str]:
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    properties = ET.parse(JVM_DIR / "pom.xml").getroot().find("m:properties", ns)
    return {child.tag.split("}", 1)[1]: (child.text or "").strip() for child in properties}


_POM = _pom_properties()
# The Java client versions the suite runs, as pom.xml declares them: oldest (2.8), newest 3.x, newest.
CLIENT_VERSIONS = tuple(_POM[name] for name in ("kafka.clients.oldest", "kafka.clients.3", "kafka.clients.newest"))
# Kafka's own broker and command-line tools (kafka_2.13 and kafka-tools), the version Odradek speaks.
KAFKA_TOOLS_SET = f"kafka_2.13-{_POM['kafka.core.version']}"
TOOL_TIMEOUT = 120.0
# Spark's built-in Kafka connector, Kafka Streams and Kafka Connect: a class path set each.
SPARK_SET = f"spark-sql-kafka-{_POM['spark.version']}"
STREAMS_SET = f"kafka-streams-{_POM['kafka.clients.newest']}"
CONNECT_SET = f"connect-{_POM['kafka.connect.version']}"
SPARK_CLIENT_VERSION = _POM["kafka.clients.3"]  # the kafka-clients the spark set runs


@cache
def _build() -> str | None:
    """Runs build.sh once per process; returns why it failed, or None."""
    if shutil.which("bash") is None:
        return "bash is not installed"
    done = subprocess.run(["bash", str(JVM_DIR / "build.sh")], capture_output=True, text=True)
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return "; ".join(lines) or f"tests/jvm/build.sh exited with {done.returncode}"


def classpath(set_name: str) -> str:
    """The class path of one dependency set of pom.xml (e.g. ``kafka-clients-3.9.2``) plus the programs."""
    problem = _build()
    listing = TARGET / "classpath" / f"{set_name}.txt"
    if not listing.is_file() or not (TARGET / "classes").is_dir():
        pytest.fail(f"JVM dependencies missing: {listing.relative_to(JVM_DIR.parent.parent)} "
                    f"({problem or 'tests/jvm/build.sh did not write it'})", pytrace=False)
    return f"{TARGET / 'classes'}:{listing.read_text().strip()}"


def java() -> str:
    found = shutil.which("java")
    if found is None:
        pytest.fail("JVM missing: no java on PATH (Debian: apt-get install maven, which brings Java 17)", pytrace=False)
    return found


@dataclass
class ScenarioResult:
    name: str
    ok: bool = False
    detail: dict = field(default_factory=dict)
    error: str = ""
    log_lines: list[str] = field(default_factory=list)  # the client's WARN/ERROR lines during the scenario


@dataclass
class GroupRun:
    client_version: str
    results: dict[str, ScenarioResult]


def client_command(version: str, main_class: str, *args: str, client_config: Path | None = None) -> list[str]:
    """``java`` running one of the programs with kafka-clients ``version``; ``client_config``: a Kafka client
    properties file (security settings) that every client of the program starts from."""
    options = [f"-Dodradek.client.config={client_config}"] if client_config is not None else []
    return [java(), "-Xmx256m", "-XX:TieredStopAtLevel=1", *options, "-cp", classpath(f"kafka-clients-{version}"),
            main_class, *args]


def _group_command(version: str, group: str, scenarios: list[str], bootstrap: str, prefix: str) -> list[str]:
    return client_command(version, MAIN_CLASS, group, bootstrap, prefix, *scenarios)


def run_group(version: str, group: str, scenarios: list[str], bootstrap: str, prefix: str) -> GroupRun:
    """Runs ``scenarios`` of ``group`` in one JVM with kafka-clients ``version``; every name gets a result."""
    done = subprocess.run(_group_command(version, group, scenarios, bootstrap, prefix), capture_output=True,
                          text=True, timeout=GROUP_TIMEOUT)
    return group_results(scenarios, done.stdout, done.stderr, done.returncode)


def start_group(version: str, group: str, scenarios: list[str], bootstrap: str, prefix: str) -> subprocess.Popen:
    """run_group for a test that acts while the scenarios run: it reads stderr line by line (``##progress``
    lines and such), then hands everything to group_results."""
    return subprocess.Popen(_group_command(version, group, scenarios, bootstrap, prefix), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def group_results(scenarios: list[str], stdout: str, stderr: str, returncode: int | None) -> GroupRun:
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    header = lines[0] if lines and "client_version" in lines[0] else {}
    results = {name: ScenarioResult(name) for name in scenarios}
    for line in lines:
        if "scenario" in line:
            results[line["scenario"]] = ScenarioResult(line["scenario"], line["ok"], line.get("detail") or {},
                                                       line.get("error", ""))
    for name, lines_of in _log_lines_by_scenario(stderr).items():
        if name in results:
            results[name].log_lines = lines_of
    for result in results.values():
        if not result.ok and not result.error:
            tail = " | ".join(stderr.strip().splitlines()[-5:])
            result.error = f"no result line (java exited with {returncode}): {tail}"
    return GroupRun(header.get("client_version", "?"), results)


def run_tool(main_class: str, *args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
    """One of Kafka's command-line tools (e.g. ``kafka.admin.TopicCommand``) from KAFKA_TOOLS_SET's jars."""
    command = [java(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", classpath(KAFKA_TOOLS_SET), main_class, *args]
    done = subprocess.run(command, input=input, capture_output=True, text=True, timeout=TOOL_TIMEOUT)
    if check:
        assert done.returncode == 0, f"{main_class} exited with {done.returncode}: {done.stdout}{done.stderr}"
    return done


def log_lines(stderr: str) -> list[str]:
    """The WARN/ERROR lines slf4j-simple wrote."""
    return [line for line in stderr.splitlines() if line.startswith(("WARN ", "ERROR "))]


def _log_lines_by_scenario(stderr: str) -> dict[str, list[str]]:
    by_scenario: dict[str, list[str]] = {}
    current: list[str] = []
    for line in stderr.splitlines():
        if line.startswith("##scenario "):
            current = by_scenario.setdefault(line.split(" ", 1)[1].strip(), [])
        elif line.startswith(("WARN ", "ERROR ")):
            current.append(line)
    return by_scenario


# WARN/ERROR lines of the Java client that Apache Kafka 2.8 brokers cause too; any other such line fails the
# scenario that logged it (unexpected error codes, version fallbacks, disconnects...).
BENIGN_LOG_LINES: tuple[tuple[re.Pattern, str], ...] = (
    # A new topic's leaders reach each broker's metadata cache asynchronously (UpdateMetadata from the
    # controller); a client asking a broker that has not heard yet is told LEADER_NOT_AVAILABLE and retries.
    # 2.8/3.x word it "Error while fetching metadata", 4.x "reported a recoverable issue".
    (re.compile(r"(Error while fetching metadata|reported a recoverable issue) with correlation id \d+ : "
                r"\{[^=}]+=LEADER_NOT_AVAILABLE\}"), "a new topic's metadata still propagating"),
    # Two clients with one client.id in one JVM (the fencing scenario's zombie and successor share a
    # transactional.id, hence a client id): a JMX name clash inside the client, nothing on the wire.
    (re.compile(r"Error registering AppInfo mbean"), "two clients with one client.id in one JVM"),
    # The leader a broker's metadata names may not have applied its LeaderAndIsr for a topic created a moment
    # ago (the controller's requests to different brokers race, on Apache Kafka too): it answers
    # UNKNOWN_TOPIC_OR_PARTITION once and the consumer asks again.
    (re.compile(r"Received unknown topic or partition error in (ListOffset|produce) request (for|on) partition \S+"),
     "a new topic's LeaderAndIsr still on its way to the leader"),
    (re.compile(r"Got error produce response with correlation id \d+ on topic-partition \S+, retrying "
                r"\(\d+ attempts left\)\. Error: UNKNOWN_TOPIC_OR_PARTITION"),
     "a new topic's LeaderAndIsr still on its way to the leader"),
)


# What a SIGKILLed broker causes in a client, as with Apache Kafka: its connections drop, it refuses new ones
# until it is back, and its partitions' leadership moves (requests in flight to it are retried elsewhere).
BROKER_KILLED_LOG_LINES: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"Error: NETWORK_EXCEPTION\. Error Message: Disconnected from node \d+"), "in flight to it"),
    (re.compile(r"Received invalid metadata error in produce request on partition \S+ due to "
                r"org\.apache\.kafka\.common\.errors\.(NetworkException: Disconnected from node \d+|"
                r"NotLeaderOrFollowerException)"), "its partitions' leadership moves"),
    (re.compile(r"Connection to node -?\d+ \(\S+\) could not be established\. (Broker|Node) may not be available"),
     "it is down (a negative id: as a bootstrap address)"),
    (re.compile(r"Bootstrap broker \S+ \(id: -\d+ [^)]*\) disconnected"), "it is down, as a bootstrap address"),
    (re.compile(r"Error: NOT_LEADER_OR_FOLLOWER"), "its partitions' leadership moves"),
)


def troubling(log_lines: list[str], also_benign: tuple[tuple[re.Pattern, str], ...] = ()) -> list[str]:
    """The WARN/ERROR lines no entry of BENIGN_LOG_LINES (or ``also_benign``) explains."""
    allowed = BENIGN_LOG_LINES + also_benign
    return [line for line in log_lines if not any(pattern.search(line) for pattern, _ in allowed)]
