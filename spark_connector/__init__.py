"""A PySpark DataSource reading and writing Kafka topics, batch and Structured Streaming (issue 7).

With odradek installed, Spark finds it by itself (the top-level ``pyspark_odradek`` package exposes it
as ``DefaultSource``); ``register(spark)`` does the same by hand:

    from odradek.spark_connector import register
    register(spark)
    df = spark.read.format("odradek").option("kafka.bootstrap.servers", "127.0.0.1:9092") \\
        .option("subscribe", "events").load()

A program that creates its own SparkSession calls ``use_this_python_for_workers()`` first, so that Spark's
Python workers can import odradek even when this interpreter is not the ``python3`` on PATH.
"""

from __future__ import annotations

from typing import Any

from .datasource import SHORT_NAME, OdradekDataSource
from .worker_python import use_this_python_for_workers


def register(spark: Any) -> None:
    """Register the data source with ``spark`` under the short name ``odradek``."""
    spark.dataSource.register(OdradekDataSource)


__all__ = ["OdradekDataSource", "SHORT_NAME", "register", "use_this_python_for_workers"]
