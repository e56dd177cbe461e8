"""scripts/python_env.sh: the one place where cluster.sh and tests/run.sh pick their Python, so that on a
Debian whose python3 is externally managed (PEP 668) both install into, and run from, one ./.venv."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"


def _choose(directory: Path, python: str) -> str:
    shutil.copytree(ROOT / "scripts", directory / "scripts")
    done = subprocess.run(["bash", "-c", 'set -euo pipefail; source scripts/python_env.sh; choose_python; echo "$PYTHON"'],
                          cwd=directory, env={**os.environ, "PYTHON": python}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _externally_managed(python: str) -> bool:
    done = subprocess.run([python, "-c", "import os, sys, sysconfig; sys.exit(not os.path.exists("
                           "os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))"])
    return done.returncode == 0


@pytest.mark.skipif(not os.path.exists(SYSTEM_PYTHON) or not _externally_managed(SYSTEM_PYTHON),
                    reason="needs an externally managed /usr/bin/python3 (Debian 12's)")
def test_an_externally_managed_python_gets_a_venv_which_is_then_reused(tmp_path):
    assert _choose(tmp_path, SYSTEM_PYTHON) == ".venv/bin/python"
    assert (tmp_path / ".venv" / "bin" / "pip").exists()
    marker = tmp_path / ".venv" / "made-once"
    marker.touch()
    shutil.rmtree(tmp_path / "scripts")
    assert _choose(tmp_path, SYSTEM_PYTHON) == ".venv/bin/python" and marker.exists()  # the same venv


def test_a_python_that_is_not_externally_managed_is_used_as_it_is(tmp_path):
    python = os.path.realpath(shutil.which("python3") or "")
    if not python or _externally_managed(python):
        pytest.skip("python3 on PATH is externally managed")
    assert _choose(tmp_path, python) == python and not (tmp_path / ".venv").exists()


@pytest.mark.parametrize("script", ["cluster.sh", "tests/run.sh"])
def test_both_commands_pick_their_python_through_the_shared_script(script):
    lines = [line.strip() for line in (ROOT / script).read_text().splitlines()]
    assert "source scripts/python_env.sh" in lines and "choose_python" in lines
