"""Schema lookups per second against odradek-schema-registry, and Spark rows/s decoding Avro values into typed
columns against reading the same records as raw bytes.

    python benchmarks/bench_schema_registry.py [--quick] [--schemas N] [--lookups N] [--records N] [--no-spark]

One local broker (LocalCluster with its own ZooKeeper) and one registry process. Measured:
- register: POST /subjects/{s}/versions of ``--schemas`` distinct Avro schemas (each a write to _schemas);
- by id, uncached: GET /schemas/ids/{id} over one keep-alive HTTP connection, ``--lookups`` requests;
- by content, uncached: POST /subjects/{s} (the lookup serializers make), same count;
- by id, cached: confluent-kafka's SchemaRegistryClient.get_schema after its first call per id (its cache),
  and our RegistryClient.schema_by_id (the Spark source's cache);
- spark (unless --no-spark): ``--records`` Avro records (two fields) read with ``valueFormat=avro`` and
  aggregated, against the same read without it (``value`` binary), on ``local[2]`` after a warm-up query.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import statistics
import tempfile
import time
import urllib.parse
from pathlib import Path


def schema_of(n: int) -> str:
    return json.dumps({"type": "record", "name": f"Bench{n}", "fields": [
        {"name": "name", "type": "string"}, {"name": "n", "type": "long"}]}, separators=(",", ":"))


def http_calls(url: str, requests: list[tuple[str, str, bytes | None]]) -> float:
    parsed = urllib.parse.urlparse(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    headers = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
    start = time.perf_counter()
    for method, path, body in requests:
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 200, (method, path, answer.status)
    elapsed = time.perf_counter() - start
    connection.close()
    return elapsed


def cached_rate(get, ids: list[int], lookups: int) -> float:
    """Lookups/s of a client's cache: every id fetched once first, then ``lookups`` calls timed."""
    for schema_id in ids:
        get(schema_id)
    start = time.perf_counter()
    for i in range(lookups):
        get(ids[i % len(ids)])
    return lookups / (time.perf_counter() - start)


def bench_lookups(url: str, schemas: int, lookups: int) -> dict[str, float]:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from odradek.schema_registry.wire import RegistryClient

    register = [("POST", f"/subjects/bench-{n}/versions", json.dumps({"schema": schema_of(n)}).encode())
                for n in range(schemas)]
    results = {"register": schemas / http_calls(url, register)}
    ids = list(range(1, schemas + 1))
    by_id = [("GET", f"/schemas/ids/{ids[i % schemas]}", None) for i in range(lookups)]
    results["by id, uncached (HTTP)"] = lookups / http_calls(url, by_id)
    by_content = [("POST", f"/subjects/bench-{i % schemas}", json.dumps({"schema": schema_of(i % schemas)}).encode())
                  for i in range(lookups)]
    results["by content, uncached (HTTP)"] = lookups / http_calls(url, by_content)
    results["by id, cached (confluent-kafka client)"] = cached_rate(SchemaRegistryClient({"url": url}).get_schema,
                                                                    ids, lookups)
    results["by id, cached (odradek RegistryClient)"] = cached_rate(RegistryClient(url).schema_by_id, ids, lookups)
    return results


def produce_avro(servers: str, url: str, topic: str, records: int) -> None:
    import fastavro

    from odradek.clients import Producer
    from odradek.schema_registry.wire import RegistryClient, frame

    schema = schema_of(0)
    schema_id = RegistryClient(url).register(f"{topic}-value", schema)
    parsed = fastavro.parse_schema(json.loads(schema))
    with Producer(bootstrap_servers=servers, linger_ms=5, batch_size=262144, acks=1,
                  enable_idempotence=False) as producer:
        for i in range(records):
            out = io.BytesIO()
            fastavro.schemaless_writer(out, parsed, {"name": f"user-{i % 1000}", "n": i})
            producer.send(topic, value=frame(schema_id, out.getvalue()), partition=i % 2)
        producer.flush()


def spark_read(spark, servers: str, url: str, topic: str, typed: bool) -> float:
    from pyspark.sql import functions as F

    reader = spark.read.format("odradek").option("kafka.bootstrap.servers", servers).option("subscribe", topic)
    if typed:
        reader = reader.option("valueFormat", "avro").option("schemaRegistryUrl", url)
    start = time.perf_counter()
    df = reader.load()
    measure = F.sum(F.length("value.name")) if typed else F.sum(F.length("value"))
    df.agg(F.count("*"), measure).collect()
    return time.perf_counter() - start


def bench_spark(servers: str, url: str, records: int, rounds: int) -> dict[str, float]:
    from pyspark.sql import SparkSession

    from odradek.clients import Admin, NewTopic
    from odradek.spark_connector import use_this_python_for_workers

    use_this_python_for_workers()
    topic = "bench-sr-avro"
    with Admin(servers) as admin:
        admin.create_topics([NewTopic(topic, 2, 1)])
    produce_avro(servers, url, topic, records)
    spark = (SparkSession.builder.master("local[2]").appName("bench-schema-registry")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark_read(spark, servers, url, topic, True)  # warm-up: JVM, workers, codecs
        results = {}
        for typed in (False, True):
            times = [spark_read(spark, servers, url, topic, typed) for _ in range(rounds)]
            results["spark rows, typed (valueFormat=avro)" if typed else "spark rows, raw bytes"] = \
                records / statistics.median(times)
        return results
    finally:
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--schemas", type=int, default=None)
    parser.add_argument("--lookups", type=int, default=None)
    parser.add_argument("--records", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args()
    schemas = args.schemas or (50 if args.quick else 200)
    lookups = args.lookups or (2000 if args.quick else 20000)
    records = args.records or (50000 if args.quick else 500000)

    from odradek.tools.local_cluster import LocalCluster
    from odradek.tools.local_schema_registry import LocalSchemaRegistry

    with tempfile.TemporaryDirectory(prefix="bench-sr-") as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster", 1, base_port=0).start()
        registry = None
        try:
            registry = LocalSchemaRegistry(cluster.bootstrap_servers, Path(tmp) / "registry.log").start()
            results = bench_lookups(registry.url, schemas, lookups)
            if not args.no_spark:
                results.update(bench_spark(cluster.bootstrap_servers, registry.url, records, args.rounds))
        finally:
            if registry is not None:
                registry.stop()
            cluster.stop()
    print(f"schemas {schemas}, lookups {lookups}, spark records {records}")
    for name, value in results.items():
        print(f"{name:<42}{value:>14,.0f} /s")


if __name__ == "__main__":
    main()
