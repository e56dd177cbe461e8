"""Auto-registration hook for Spark: pyspark 4.x imports every top-level ``pyspark_*`` package on the
Python path and registers its ``DefaultSource`` under ``DefaultSource.name()``, so with odradek installed
``spark.read.format("odradek")`` works without a manual ``spark.dataSource.register(...)``."""

from odradek.spark_connector.datasource import OdradekDataSource as DefaultSource

__all__ = ["DefaultSource"]
