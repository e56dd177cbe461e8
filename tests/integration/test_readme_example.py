"""The README's Python example, as a new user runs it against a local cluster: it must end by itself and
run again without a traceback (the topic is there the second time)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _example() -> str:
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    return next(b for b in blocks if "Consumer(" in b and "Producer(" in b)


def test_the_readme_python_example_ends_and_can_run_twice(odradek_cluster_factory):
    cluster = odradek_cluster_factory(3)
    code = _example().replace("127.0.0.1:9092", cluster.bootstrap_servers)
    outputs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        outputs.append([line.split()[1] for line in done.stdout.splitlines() if line.endswith("b'key' b'value'")])
    # Each run adds a record; the group "readers" reads on from where the first run's close committed.
    assert outputs == [["0"], ["1"]]
