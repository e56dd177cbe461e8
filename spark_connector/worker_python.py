"""Which Python Spark starts its Python workers with (the data source's readers and writers run there)."""

from __future__ import annotations

import os
import sys


def use_this_python_for_workers() -> None:
    """Make Spark's Python workers run this interpreter, unless ``PYSPARK_PYTHON`` already names one.

    Spark starts its workers with ``PYSPARK_PYTHON``, else ``python3`` on PATH: a venv's interpreter run
    without activating the venv would have workers that cannot import odradek. Call it before the first
    SparkSession of the process is created; the JVM reads the variable when it starts."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
