"""What TLS and SASL cost: throughput over SSL and SASL_SSL as a ratio to PLAINTEXT, and connection set-up.

    python benchmarks/bench_security.py [--quick] [--rounds N] [--records N] [--connects N]

One broker (a real ZooKeeper, ``odradek-server``) with four listeners on one port each: PLAINTEXT, SSL,
SASL_PLAINTEXT and SASL_SSL (SCRAM-SHA-256 and -512 and PLAIN; the SCRAM user is written to ZooKeeper
first, as Kafka's bootstrap step). Certificates are EC P-256 from the local CA (tools/local_ca.py).

* Throughput: confluent-kafka (kafka_client_workloads.py, a process per workload) produces 100-byte records
  with acks=1 over each of PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-256) and reads them back from earliest
  with assign, on a fresh topic (3 partitions) per round and listener; the listener order rotates between
  rounds. The table shows medians of records/s and of the broker's CPU per record (utime + stime from /proc
  around the timed window), each as a ratio to PLAINTEXT's in the same run (Kafka's own TLS costs 20-40%
  without sendfile). On a shared 2-core machine the client sets the pace; the broker's CPU is the steadier
  figure.
* Connection set-up: our client's ``BrokerConnection.connect`` (TCP, TLS handshake, ApiVersions, SASL) in this
  process, ``--connects`` times per listener and mechanism; median and 90th percentile in milliseconds.
  SCRAM costs the client a PBKDF2 of 4096 iterations; the broker keeps only the derived keys.

Figures are printed, never asserted; on a 2-core machine the client and the broker share the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_vs_tansu import format_table, run_json_process  # noqa: E402

from odradek.tools.local_ca import LocalCA  # noqa: E402
from odradek.tools.local_cluster import LocalCluster  # noqa: E402
from odradek.tools.local_zookeeper import LocalZooKeeper, free_port  # noqa: E402
from odradek.clients.connection import BrokerConnection  # noqa: E402
from odradek.clients.security.client_security import ClientSecurity  # noqa: E402
from odradek.clients.security.scram import MECHANISMS, make_credential  # noqa: E402
from odradek.controller.zk_client import KafkaZkClient  # noqa: E402

WORKLOAD_SCRIPT = Path(__file__).resolve().parent / "kafka_client_workloads.py"
PARTITIONS, RECORD_SIZE = 3, 100
USER, PASSWORD = "bench", "bench-secret"
THROUGHPUT_LISTENERS = ("PLAINTEXT", "SSL", "SASL_SSL")


class Broker:
    """The broker under test, its listeners' ports and the CA."""

    def __init__(self, work: Path) -> None:
        self.zookeeper = LocalZooKeeper(work / "zookeeper")
        self.ca = LocalCA(work / "ca")
        keystore = self.ca.issue("broker", hosts=["localhost", "127.0.0.1"])
        self.ports = {name: free_port() for name in ("SSL", "SASL_PLAINTEXT", "SASL_SSL")}
        jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="x" password="x" '
                f'user_{USER}="{PASSWORD}";')
        listeners = ",".join([f"PLAINTEXT://127.0.0.1:{{port}}"] + [f"{n}://127.0.0.1:{p}" for n, p in self.ports.items()])
        overrides = {"listeners": listeners, "security.inter.broker.protocol": "PLAINTEXT",
                     "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "plain.sasl.jaas.config": jaas,
                     "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
                     "zookeeper.session.timeout.ms": "6000"}
        self.zookeeper.start(timeout=60)
        self.cluster = LocalCluster(work / "cluster", 1, zookeeper=self.zookeeper, base_port=0,
                                    broker_overrides=overrides)
        zk = KafkaZkClient(self.cluster.zookeeper_connect, 30000, 30000)
        zk.start()
        zk.create_top_level_paths()
        zk.set_entity_config("users", USER, {m: make_credential(MECHANISMS[m], PASSWORD).to_text() for m in MECHANISMS})
        zk.close()
        self.cluster.start()
        self.ports["PLAINTEXT"] = self.cluster.brokers[0].port
        self.pid = self.cluster.brokers[0].process.pid

    def librdkafka(self, listener: str) -> dict:
        config = {"security.protocol": listener}
        if "SSL" in listener:
            config["ssl.ca.location"] = str(self.ca.cert_path)
        if "SASL" in listener:
            config.update({"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": USER, "sasl.password": PASSWORD})
        return config

    def security(self, listener: str, mechanism: str | None) -> ClientSecurity:
        kwargs: dict = {"security_protocol": listener}
        if "SSL" in listener:
            kwargs["ssl_cafile"] = str(self.ca.cert_path)
        if mechanism:
            kwargs.update(sasl_mechanism=mechanism, sasl_plain_username=USER, sasl_plain_password=PASSWORD)
        return ClientSecurity.from_kwargs(**kwargs)

    def stop(self) -> None:
        self.cluster.stop(timeout=15)
        self.zookeeper.stop()


def throughput(broker: Broker, rounds: int, records: int) -> dict[tuple[str, str], list[dict]]:
    results: dict[tuple[str, str], list[dict]] = {}
    for r in range(rounds):
        order = THROUGHPUT_LISTENERS[r % 3:] + THROUGHPUT_LISTENERS[:r % 3]
        for listener in order:
            topic = f"bench-{listener.lower()}-{uuid.uuid4().hex[:6]}"
            spec = {"bootstrap": f"127.0.0.1:{broker.ports[listener]}", "broker_pid": broker.pid, "topic": topic,
                    "partitions": PARTITIONS, "size": RECORD_SIZE, "count": records, "acks": 1, "linger_ms": 5,
                    "queue_backoff_ms": 10, "client_config": broker.librdkafka(listener)}
            for workload in ("produce", "consume"):
                result = run_json_process([str(WORKLOAD_SCRIPT), json.dumps({**spec, "workload": workload})],
                                          f"{workload} over {listener}")
                results.setdefault((workload, listener), []).append(result)
                print(f"  round {r + 1} {workload:<7} {listener:<15} {result['records'] / result['seconds']:>10,.0f} "
                      "rec/s", flush=True)
    return results


def throughput_table(results: dict) -> str:
    """Medians per workload and listener; each ratio is to PLAINTEXT's median in the same run."""
    def rate(run: dict) -> float:
        return run["records"] / run["seconds"]

    def cpu_ns(run: dict) -> float:
        return run["broker_cpu"] / run["records"] * 1e9

    rows = []
    for workload in ("produce", "consume"):
        base_rate = statistics.median(rate(r) for r in results[(workload, "PLAINTEXT")])
        base_cpu = statistics.median(cpu_ns(r) for r in results[(workload, "PLAINTEXT")])
        for listener in THROUGHPUT_LISTENERS:
            runs = results[(workload, listener)]
            median_rate = statistics.median(rate(r) for r in runs)
            median_cpu = statistics.median(cpu_ns(r) for r in runs)
            rows.append([f"{workload} [{listener}]", f"{median_rate:,.0f}", f"{median_rate * RECORD_SIZE / 1e6:.1f}",
                         f"{median_rate / base_rate:.2f}", f"{median_cpu:.0f}", f"{median_cpu / base_cpu:.2f}"])
    return format_table(["workload [listener]", "rec/s", "MB/s", "rec/s vs PLAINTEXT", "broker ns/rec",
                         "broker CPU vs PLAINTEXT"], rows)


CONNECTS = (("PLAINTEXT", None), ("SSL", None), ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
            ("SASL_PLAINTEXT", "SCRAM-SHA-512"), ("SASL_SSL", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"))


async def connect_times(broker: Broker, count: int) -> list[list[str]]:
    rows = []
    for listener, mechanism in CONNECTS:
        security = broker.security(listener, mechanism)
        samples = []
        for _ in range(count):
            began = time.perf_counter()
            conn = await BrokerConnection.connect("127.0.0.1", broker.ports[listener], security=security)
            samples.append((time.perf_counter() - began) * 1000)
            await conn.close()
        samples.sort()
        rows.append([f"{listener}{' ' + mechanism if mechanism else ''}", f"{statistics.median(samples):.2f}",
                     f"{samples[int(len(samples) * 0.9) - 1]:.2f}"])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round, 100k records, 20 connects")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--connects", type=int, default=100)
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.records, args.connects = 1, 100_000, 20
    with tempfile.TemporaryDirectory(prefix="odradek-bench-security-") as work:
        broker = Broker(Path(work))
        try:
            print(f"Throughput: {args.rounds} round(s) of {args.records:,} records of {RECORD_SIZE} bytes, "
                  f"{PARTITIONS} partitions, confluent-kafka", flush=True)
            print(throughput_table(throughput(broker, args.rounds, args.records)))
            print(f"\nConnection set-up, our client (TCP + TLS + ApiVersions + SASL), {args.connects} connects each:")
            rows = asyncio.run(connect_times(broker, args.connects))
            print(format_table(["listener [mechanism]", "median ms", "p90 ms"], rows))
        finally:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
