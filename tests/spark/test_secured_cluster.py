"""The source and the sink on a SASL_SSL cluster, configured with Spark's kafka.-prefixed Kafka names:
a batch write through the sink (exactly-once, so transactions and group offsets too) read back through the
source. The broker is odradek-cluster's ``--security sasl_ssl``."""

from __future__ import annotations

import uuid

import pytest

from odradek.clients import Admin, NewTopic
from odradek.tools.local_cluster import LocalCluster
from tests.conftest import TEST_BROKER_OVERRIDES

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def secured_cluster(zookeeper, tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("spark-sasl-ssl"), 1, zookeeper=zookeeper, base_port=0,
                           chroot=f"/odradek-{uuid.uuid4().hex}", broker_overrides=TEST_BROKER_OVERRIDES,
                           security="sasl_ssl")
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop(timeout=15.0)


def kafka_options(cluster: LocalCluster) -> dict[str, str]:
    """What a Spark user writes: Kafka's client property names under kafka. (as Spark's own Kafka source)."""
    properties = dict(line.split("=", 1) for line in cluster.security.properties_path.read_text().splitlines())
    return {"kafka.bootstrap.servers": cluster.bootstrap_servers, **{f"kafka.{k}": v for k, v in properties.items()}}


def test_sink_and_source_over_sasl_ssl(spark, secured_cluster):
    topic = f"spark-secured-{uuid.uuid4().hex[:6]}"
    with Admin(secured_cluster.bootstrap_servers, **secured_cluster.security.client_kwargs()) as admin:
        admin.create_topics([NewTopic(topic, 2, 1)])
    options = kafka_options(secured_cluster)
    assert options["kafka.security.protocol"] == "SASL_SSL" and "kafka.sasl.jaas.config" in options
    rows = [(f"k{i}", f"v{i}") for i in range(20)]
    spark.createDataFrame(rows, "key string, value string").write.format("odradek").options(**options) \
        .option("topic", topic).mode("append").save()
    read = spark.read.format("odradek").options(**options).option("subscribe", topic).load() \
        .selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)").collect()
    assert sorted((r.key, r.value) for r in read) == sorted(rows)
