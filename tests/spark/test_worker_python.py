"""Spark's Python workers run the interpreter odradek is installed in, unless the user named another."""

from __future__ import annotations

import os
import sys

from odradek.spark_connector import use_this_python_for_workers


def test_workers_get_this_interpreter_when_none_is_named(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    use_this_python_for_workers()
    assert os.environ["PYSPARK_PYTHON"] == sys.executable


def test_a_python_the_user_named_is_kept(monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/other/bin/python3")
    use_this_python_for_workers()
    assert os.environ["PYSPARK_PYTHON"] == "/opt/other/bin/python3"
