"""odradek-server's command line: a bad value stops start-up with one line, a misspelt key is named."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.timeout(120)


def server(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "odradek.broker.server", "config/server.properties", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_an_invalid_value_stops_start_up_with_one_line_naming_the_key(tmp_path):
    result = server("--override", "num.io.threads=lots", "--override", f"log.dirs={tmp_path}")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "num.io.threads" in lines[0] and "lots" in lines[0]


def test_an_unreadable_file_is_one_line_too(tmp_path):
    result = subprocess.run([sys.executable, "-m", "odradek.broker.server", str(tmp_path / "missing.properties")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1


def test_a_misspelt_key_is_warned_about_with_the_closest_key(tmp_path, zookeeper):
    """The broker starts (the key is only unknown), warns naming zookeeper.session.timeout.ms, and stops on
    SIGTERM."""
    log_path = tmp_path / "broker.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "odradek.broker.server", "config/server.properties",
             "--override", "zookeeper.sesion.timeout.ms=6000", "--override", f"log.dirs={tmp_path / 'logs'}",
             "--override", "listeners=PLAINTEXT://127.0.0.1:0",
             "--override", f"zookeeper.connect={zookeeper.connect_string}/cli-test"],
            stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 60
            while "started" not in log_path.read_text() and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            proc.terminate()
            assert proc.wait(30) == 0
    text = log_path.read_text()
    warning = next(line for line in text.splitlines() if "zookeeper.sesion.timeout.ms" in line)
    assert "WARNING" in warning and "zookeeper.session.timeout.ms" in warning
    assert "[KafkaServer id=0] started" in text and "shut down completed" in text


@pytest.mark.parametrize("setting", ["zookeeper.set.acl=true", "zookeeper.ssl.client.enable=true"])
def test_security_it_cannot_provide_stops_start_up_naming_the_key(tmp_path, setting):
    """Fail closed: a broker asked for znode ACLs or TLS to ZooKeeper, which it does not have, must not start
    without them."""
    result = server("--override", setting, "--override", f"log.dirs={tmp_path}")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"'{setting.partition('=')[0]}'" in lines[0] and "refusing to start" in lines[0]
    assert not (tmp_path / "meta.properties").exists()  # nothing was started
