"""Apache Kafka 2.8.2 brokers beside ours: the oracle of the differential tests and the peer of the benchmarks.

``KafkaCluster`` is a ``LocalCluster`` whose brokers are real ``kafka.Kafka`` processes (ZooKeeper mode) from
the ``kafka_2.13:2.8.2`` jars that ``tests/jvm/build.sh`` resolves into the Maven cache. It takes the same
arguments and configuration keys as LocalCluster (``broker_overrides`` is passed as ``--override key=value``,
which kafka.Kafka accepts as our server does), so everything LocalCluster does (free ports, waiting until
Metadata lists every broker and a controller, SIGTERM then SIGKILL, restart, log tails) works unchanged.
``kafka_ids`` picks which brokers are Kafka's; the others are Odradek's, which makes a mixed cluster.

A plain helper, usable from benchmarks as well as from pytest:

    with KafkaCluster(tmp_dir, brokers=1, broker_overrides={"num.partitions": 3}) as kafka:
        run_workload(kafka.bootstrap_servers)

Missing jars or Java raise ``KafkaJarsMissing`` with one line saying what is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, Iterable

from odradek.tools.local_cluster import BrokerSlot, LocalCluster

JVM_DIR = Path(__file__).resolve().parent.parent / "jvm"
CLASSPATH_FILE = JVM_DIR / "target" / "classpath" / "kafka_2.13-2.8.2.txt"
MAIN_CLASS = "kafka.Kafka"
KAFKA_VERSION = "2.8.2"
DEFAULT_HEAP_MB = 512  # JVM.md: fits this 2-core, 24 GiB machine beside ZooKeeper and our brokers

# Kafka 2.8.2 logs through slf4j; the class path may carry more than one binding. This file is read by the
# log4j 1 binding when that one wins; the others write to stdout as well, which goes to broker-<i>.log.
LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.zookeeper=WARN
"""


class KafkaJarsMissing(RuntimeError):
    """Java or the Kafka 2.8.2 jars cannot be had; the message is one line."""


def kafka_classpath(build: bool = True) -> str:
    """The class path of Kafka 2.8.2's broker (``tests/jvm/target/classpath/kafka_2.13-2.8.2.txt``), running
    ``tests/jvm/build.sh`` first when ``build`` (free when nothing changed)."""
    if shutil.which("java") is None:
        raise KafkaJarsMissing("Kafka 2.8.2 needs `java` on PATH (Debian: apt-get install maven, which brings it)")
    if build:
        result = subprocess.run(["bash", str(JVM_DIR / "build.sh")], capture_output=True, text=True)
        if result.returncode != 0 and not CLASSPATH_FILE.is_file():
            reason = result.stderr.strip().splitlines()[-1:] or [f"exit code {result.returncode}"]
            raise KafkaJarsMissing(f"Kafka 2.8.2 jars missing: tests/jvm/build.sh failed: {reason[0]}")
    try:
        classpath = CLASSPATH_FILE.read_text().strip()
    except OSError:
        raise KafkaJarsMissing(f"Kafka 2.8.2 jars missing: no {CLASSPATH_FILE} (run bash tests/jvm/build.sh)") from None
    missing = [jar for jar in classpath.split(":") if jar and not Path(jar).is_file()]
    if missing or not classpath:
        raise KafkaJarsMissing(f"Kafka 2.8.2 jars missing: {missing[0] if missing else 'empty class path'} "
                               "(run bash tests/jvm/build.sh)")
    return classpath


class KafkaCluster(LocalCluster):
    """ZooKeeper plus ``brokers`` brokers of which those in ``kafka_ids`` (default: all) are Apache Kafka 2.8.2.

    ``heap_mb`` is each Kafka JVM's -Xmx (and -Xms, so the heap is not grown under load); ``jvm_options`` are
    added to the java command. Every other argument is LocalCluster's.
    """

    def __init__(self, data_dir, brokers: int = 1, *, kafka_ids: Iterable[int] | None = None,
                 heap_mb: int = DEFAULT_HEAP_MB, jvm_options: Iterable[str] = (), **options: Any):
        if options.get("security"):
            raise ValueError("KafkaCluster does not set up security; pass the listener keys in broker_overrides")
        super().__init__(data_dir, brokers, **options)
        self.kafka_ids = set(range(brokers)) if kafka_ids is None else set(kafka_ids)
        self.heap_mb = heap_mb
        self.jvm_options = list(jvm_options)
        self._classpath: str | None = None

    def is_kafka(self, broker_id: int) -> bool:
        return broker_id in self.kafka_ids

    @property
    def log4j_path(self) -> Path:
        return self.data_dir / "kafka-log4j.properties"

    def start(self, timeout: float = 120.0) -> "KafkaCluster":
        """As LocalCluster.start; a JVM takes longer to come up than our broker, hence the longer timeout.
        Raises KafkaJarsMissing before anything starts when Java or the jars cannot be had."""
        if self.kafka_ids and self._classpath is None:
            self._classpath = kafka_classpath()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log4j_path.write_text(LOG4J_PROPERTIES)
        super().start(timeout)
        return self

    def start_broker(self, broker_id: int, timeout: float = 120.0):
        return super().start_broker(broker_id, timeout)

    def broker_command(self, broker: BrokerSlot) -> list[str]:
        """Ours for an Odradek broker; for a Kafka one ``java ... kafka.Kafka server.properties --override ...``
        with the very same overrides (``broker.id``, ``listeners``, ``log.dirs``, ``zookeeper.connect``, the
        cluster's ``broker_overrides``)."""
        command = super().broker_command(broker)
        if not self.is_kafka(broker.broker_id):
            return command
        start = command.index("odradek.broker.server")
        arguments = command[start + 1:]  # server.properties, then --override pairs
        # odradek.* keys mean nothing to Kafka (it would log each as unknown)
        arguments = [a for i, a in enumerate(arguments)
                     if not (a.startswith("odradek.") or (a == "--override" and i + 1 < len(arguments)
                                                           and arguments[i + 1].startswith("odradek.")))]
        java = shutil.which("java") or "java"
        return [*broker.command_prefix, java, f"-Xmx{self.heap_mb}m", f"-Xms{self.heap_mb}m",
                "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
                f"-Dlog4j.configuration=file:{self.log4j_path}", f"-Dkafka.logs.dir={broker.log_dirs}-logs",
                *self.jvm_options, "-cp", self._classpath or kafka_classpath(build=False), MAIN_CLASS, *arguments]

    def __repr__(self) -> str:
        kinds = "".join("K" if self.is_kafka(b.broker_id) else "O" for b in self.brokers)
        return f"KafkaCluster({str(self.data_dir)!r}, brokers={kinds}, {self.bootstrap_servers})"
