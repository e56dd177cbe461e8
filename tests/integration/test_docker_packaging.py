"""The container packaging without a Docker engine: the entrypoint maps the environment as the bitnami and
Confluent images do and execs a real broker (against the session's real ZooKeeper), the healthcheck speaks
ApiVersions, and docker-compose.yml / Dockerfile / docker/prometheus.yml are parsed and cross-checked."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from odradek.broker.config import KafkaConfig, load_config, parse_properties
from odradek.tools.local_zookeeper import free_port
from tests.integration.helpers import request_log

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "docker" / "entrypoint.py"
HEALTHCHECK = ROOT / "docker" / "healthcheck.py"
BROKERS = ("kafka-1", "kafka-2", "kafka-3")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


entrypoint = _load(ENTRYPOINT, "odradek_docker_entrypoint")
healthcheck = _load(HEALTHCHECK, "odradek_docker_healthcheck")


def example_pipeline():
    return _load(ROOT / "examples" / "spark_pipeline.py", "odradek_example_spark_pipeline")


def props_of(entries) -> dict[str, str]:
    return {key: value for key, value, _ in entries}


def no_base(environ: dict) -> dict:
    return {"ODRADEK_BASE_CONFIG": "/nonexistent/base.properties", **environ}


# --- the entrypoint's mapping ---------------------------------------------------------------------------

@pytest.mark.parametrize("var, key", [
    ("KAFKA_CFG_LOG_DIRS", "log.dirs"),                                      # bitnami
    ("KAFKA_CFG_ZOOKEEPER_CONNECT", "zookeeper.connect"),
    ("KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP", "listener.security.protocol.map"),
    ("KAFKA_BROKER_ID", "broker.id"),                                        # Confluent
    ("KAFKA_ADVERTISED_LISTENERS", "advertised.listeners"),
    ("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "offsets.topic.replication.factor"),
    ("KAFKA_LISTENER_NAME_INTERNAL_X__Y", "listener.name.internal.x_y"),     # `__` -> `_`
    ("KAFKA_SOME___DASHED_KEY", "some-dashed.key"),                          # `___` -> `-`
    ("KAFKA_ODRADEK_METRICS_PORT", "odradek.metrics.port"),
    ("KAFKA_METRICS_PORT", "metrics.port"),
])
def test_environment_variables_become_properties(var, key):
    assert props_of(entrypoint.build_properties(no_base({var: "v1"})))[key] == "v1"


def test_metrics_port_defaults_to_7071_and_odradek_metrics_port_wins(tmp_path):
    def port(environ):
        env = no_base({"ODRADEK_CONFIG_FILE": str(tmp_path / "server.properties"),
                       "KAFKA_ZOOKEEPER_CONNECT": "zookeeper:2181", **environ})
        return load_config(entrypoint.write_config(env), [], {})[0].metrics_port

    assert port({}) == 7071
    assert port({"KAFKA_METRICS_PORT": "9404"}) == 9404
    assert port({"KAFKA_METRICS_PORT": "9404", "KAFKA_CFG_ODRADEK_METRICS_PORT": "9500"}) == 9500
    assert port({"KAFKA_METRICS_PORT": "-1"}) == -1  # off


def test_script_variables_are_not_properties_and_empty_values_are_skipped():
    env = no_base({"KAFKA_HEAP_OPTS": "-Xmx1G", "KAFKA_OPTS": "-Dx", "KAFKA_LOG4J_LOGGERS": "a=DEBUG",
                   "KAFKA_JMX_PORT": "9999", "KAFKA_CFG_NUM_PARTITIONS": "", "ALLOW_PLAINTEXT_LISTENER": "yes"})
    props = props_of(entrypoint.build_properties(env))
    assert set(props) == {k for k, _ in entrypoint.IMAGE_DEFAULTS}


def test_layers_image_defaults_then_base_file_then_confluent_then_bitnami(tmp_path):
    base = tmp_path / "base.properties"
    base.write_text("log.retention.hours=1\nnum.partitions=4\nlisteners=PLAINTEXT://:9999\n")
    env = {"ODRADEK_BASE_CONFIG": str(base), "KAFKA_NUM_PARTITIONS": "5", "KAFKA_LOG_RETENTION_HOURS": "2",
           "KAFKA_CFG_LOG_RETENTION_HOURS": "3"}
    entries = entrypoint.build_properties(env)
    props = props_of(entries)
    assert props["log.dirs"] == "/var/lib/odradek/data"        # image default kept
    assert props["listeners"] == "PLAINTEXT://:9999"           # base file over the image default
    assert props["num.partitions"] == "5"                      # KAFKA_* over the base file
    assert props["log.retention.hours"] == "3"                 # KAFKA_CFG_* over KAFKA_*
    sources = {key: source for key, _, source in entries}
    assert sources["log.retention.hours"] == "environment variable KAFKA_CFG_LOG_RETENTION_HOURS"
    assert sources["listeners"] == f"{base} line 3"


def test_written_file_reads_back_identically_through_the_brokers_parser(tmp_path):
    awkward = {"KAFKA_CFG_SASL_JAAS_CONFIG": "a=b c:d \\ back#slash!", "KAFKA_CFG_X_Y": " leading space",
               "KAFKA_CFG_MULTI_LINE": "one\ntwo\tthree"}
    env = no_base({"ODRADEK_CONFIG_FILE": str(tmp_path / "conf" / "server.properties"), **awkward})
    path = entrypoint.write_config(env)
    read = {k: v for k, v, _ in parse_properties(Path(path).read_text())}
    assert read == props_of(entrypoint.build_properties(env))
    assert read["sasl.jaas.config"] == "a=b c:d \\ back#slash!"
    assert read["x.y"] == " leading space"
    assert read["multi.line"] == "one\ntwo\tthree"


def test_other_commands_run_as_given(tmp_path):
    out = subprocess.run([sys.executable, str(ENTRYPOINT), "echo", "hello"], capture_output=True, text=True,
                         env=dict(os.environ, ODRADEK_CONFIG_FILE=str(tmp_path / "server.properties")), timeout=30)
    assert out.returncode == 0 and out.stdout == "hello\n"
    assert not (tmp_path / "server.properties").exists()  # only the broker gets a config file


# --- the entrypoint execs a real broker ------------------------------------------------------------------

def _wait_until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.mark.timeout(180)
def test_entrypoint_execs_the_broker_which_serves_and_stops_cleanly_on_sigterm(zk_chroot, tmp_path):
    port, metrics_port = free_port("127.0.0.1"), free_port("127.0.0.1")
    config_file = tmp_path / "config" / "server.properties"
    env = dict(os.environ, PYTHONUNBUFFERED="1",
               ODRADEK_CONFIG_FILE=str(config_file), ODRADEK_BASE_CONFIG=str(tmp_path / "absent"),
               KAFKA_ZOOKEEPER_CONNECT=zk_chroot, KAFKA_BROKER_ID="7",
               KAFKA_CFG_LISTENERS=f"PLAINTEXT://127.0.0.1:{port}",
               KAFKA_CFG_LOG_DIRS=str(tmp_path / "data"),
               KAFKA_CFG_ODRADEK_METRICS_PORT=str(metrics_port),
               KAFKA_CFG_ODRADEK_METRICS_HOST="127.0.0.1",
               KAFKA_CFG_ODRADEK_STATE_CHANGE_LOG_DIR=str(tmp_path / "logs"),
               KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR="1", KAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS="6000",
               KAFKA_HEAP_OPTS="-Xmx1G",
               # structured logs, and the request log switched on as the Confluent image's variable does
               ODRADEK_LOG_FORMAT="json", KAFKA_LOG4J_LOGGERS="kafka.request.logger=DEBUG")
    log_path = tmp_path / "broker.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, str(ENTRYPOINT)], env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    try:
        _wait_until(lambda: healthcheck.check("127.0.0.1", port, timeout=2.0) is None or proc.poll() is not None,
                    90, "the broker to answer ApiVersions")
        assert proc.poll() is None, log_path.read_text()
        # exec, not spawn: the entrypoint's pid is now the broker (so docker stop's SIGTERM reaches it)
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        assert any(part.endswith(b"odradek-server") for part in cmdline), cmdline
        assert str(config_file).encode() in cmdline
        props = {k: v for k, v, _ in parse_properties(config_file.read_text())}
        assert props["broker.id"] == "7" and props["listeners"] == f"PLAINTEXT://127.0.0.1:{port}"
        assert "kafka.heap.opts" not in props
        # the HEALTHCHECK command, as Docker runs it: exit 0 with the address from the written file
        check = subprocess.run([sys.executable, str(HEALTHCHECK)], env=env, capture_output=True, text=True,
                               timeout=30)
        assert check.returncode == 0, check.stdout
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as response:
            assert b"kafka_controller_kafkacontroller_activecontrollercount 1.0" in response.read()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    output = log_path.read_text()
    assert "wrote" in output and "shut down completed" in output
    entries = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert {"time", "level", "logger", "message"} <= set(entries[0])
    assert any(e["logger"] == "odradek.server" and e["level"] == "INFO" and "shut down completed" in e["message"]
               for e in entries)
    requests = [e for e in entries if e["logger"] == "kafka.request.logger"]
    assert requests and all(e["level"] == "DEBUG" for e in requests)
    completed = request_log("".join(e["message"] + "\n" for e in requests))
    assert any(c["requestHeader"]["requestApiKeyName"] == "API_VERSIONS" and c["requestHeader"]["requestApiVersion"] == 0
               and c["requestHeader"]["clientId"] == "odradek-healthcheck" and c["response"]["errorCode"] == 0
               and c["totalTimeMs"] >= 0 for c in completed)
    assert not any(e["level"] == "DEBUG" and e["logger"] != "kafka.request.logger" for e in entries)
    assert healthcheck.check("127.0.0.1", port, timeout=2.0) is not None  # nothing answers any more
    check = subprocess.run([sys.executable, str(HEALTHCHECK)], env=env, capture_output=True, text=True, timeout=30)
    assert check.returncode == 1 and check.stdout.startswith("unhealthy:")


# --- docker-compose.yml ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def broker_config(compose, name, tmp_path):
    """The server.properties the entrypoint writes from the service's environment, loaded by the broker's
    own configuration code (so a bad value or key in the compose file fails here)."""
    environment = compose["services"][name]["environment"]
    assert all(isinstance(v, str) for v in environment.values()), "quote numbers: compose passes strings"
    env = no_base({**environment, "ODRADEK_CONFIG_FILE": str(tmp_path / f"{name}.properties")})
    path = entrypoint.write_config(env)
    config, warnings = load_config(path, [], {})
    assert warnings == []
    return config


def published(service) -> dict[int, int]:
    """container port -> host port."""
    out = {}
    for entry in service.get("ports", []):
        host, _, container = str(entry).rpartition(":")
        out[int(container)] = int(host.rpartition(":")[2])
    return out


def test_compose_services_profiles_and_images(compose):
    services = compose["services"]
    assert set(services) == {"zookeeper", *BROKERS, "prometheus", "spark-job", "secure-init", "kafka-secure",
                             "schema-registry", "console"}
    registry = services["schema-registry"]
    assert registry["image"] == "odradek:latest" and "profiles" not in registry
    assert registry["command"][0] == "odradek-schema-registry" and published(registry) == {8081: 8081}
    assert registry["depends_on"] == {b: {"condition": "service_healthy"} for b in BROKERS}
    assert services["zookeeper"]["image"].startswith("zookeeper:")  # the official image
    assert services["prometheus"]["profiles"] == ["monitoring"]
    assert services["spark-job"]["profiles"] == ["spark"]
    assert services["secure-init"]["profiles"] == services["kafka-secure"]["profiles"] == ["secure"]
    for name in ("zookeeper", *BROKERS):
        assert "profiles" not in services[name]  # `docker compose up` starts the cluster
    for name in BROKERS:
        assert services[name]["build"] == "."
        assert services[name]["image"] == "odradek:latest"
    assert services["spark-job"]["build"] == {"context": ".", "target": "spark-job"}
    assert services["console"]["build"] == {"context": ".", "target": "console"}
    assert "profiles" not in services["console"]  # `docker compose up` starts the console too


def test_compose_dependencies_wait_for_health(compose):
    services = compose["services"]
    zk = services["zookeeper"]["healthcheck"]
    assert zk["test"][0] in ("CMD", "CMD-SHELL") and zk["retries"] >= 3
    for name in BROKERS:
        service = services[name]
        assert service["depends_on"] == {"zookeeper": {"condition": "service_healthy"}}
        test = service["healthcheck"]["test"]
        assert test == ["CMD", "python", "/opt/odradek/bin/healthcheck.py"]
        assert int(service["stop_grace_period"].rstrip("s")) >= 30  # time for a controlled shutdown
    assert services["spark-job"]["depends_on"] == {b: {"condition": "service_healthy"} for b in BROKERS}


def test_compose_brokers_listeners_ports_and_replication(compose, tmp_path):
    services = compose["services"]
    ids = set()
    for name in BROKERS:
        service = services[name]
        config = broker_config(compose, name, tmp_path)
        ids.add(config.broker_id)
        assert config.get("zookeeper.connect") == "zookeeper:2181"
        assert config.get("default.replication.factor") == 3
        assert config.get("min.insync.replicas") == 2
        assert config.get("offsets.topic.replication.factor") == 3
        assert config.get("transaction.state.log.min.isr") == 2
        listeners = {e.name: e for e in config.listeners}
        advertised = {e.name: e for e in config.advertised_listeners}
        assert set(listeners) == set(advertised) == {"INTERNAL", "EXTERNAL"}
        assert config.inter_broker_listener_name == "INTERNAL"
        # inside the network: the service's own name, on the port it listens on
        assert advertised["INTERNAL"].host == name == service["hostname"]
        assert advertised["INTERNAL"].port == listeners["INTERNAL"].port == 9092
        # from the host: localhost, on a port published to the same number (what clients are told is reachable)
        external = listeners["EXTERNAL"].port
        assert advertised["EXTERNAL"].host == "localhost" and advertised["EXTERNAL"].port == external
        ports = published(service)
        assert ports[external] == external
        assert ports[config.metrics_port] in (7071, 7072, 7073)
        assert 9092 not in ports  # the internal listener stays inside the network
        # the data volume is the log dir
        mounts = dict(v.split(":", 1)[::-1] for v in service["volumes"])
        assert config.log_dirs == ["/var/lib/odradek/data"]
        volume = mounts["/var/lib/odradek/data"]
        assert volume in compose["volumes"]
    assert ids == {1, 2, 3}
    host_ports = [p for name in BROKERS for p in published(services[name]).values()]
    assert len(host_ports) == len(set(host_ports))  # no two services publish the same host port
    volumes = [v for name in BROKERS for v in services[name]["volumes"]]
    assert len(volumes) == len(set(volumes))  # each broker its own data volume


def test_compose_spark_job_and_prometheus_reach_the_brokers(compose, tmp_path):
    services = compose["services"]
    internal = {f"{name}:9092" for name in BROKERS}
    spark = services["spark-job"]
    assert "/opt/odradek/examples/spark_pipeline.py" in spark["command"]
    # the command's flags are the ones the example accepts
    command = spark["command"]
    args = example_pipeline().parse_args(command[command.index("/opt/odradek/examples/spark_pipeline.py") + 1:])
    assert set(args.bootstrap_servers.split(",")) == internal
    assert str(args.work_dir) in {v.split(":")[1] for v in spark["volumes"]}
    assert set(spark["environment"]["ODRADEK_BOOTSTRAP_SERVERS"].split(",")) == internal
    prometheus = services["prometheus"]
    assert "./docker/prometheus.yml:/etc/prometheus/prometheus.yml:ro" in prometheus["volumes"]
    scrape = yaml.safe_load((ROOT / "docker" / "prometheus.yml").read_text())
    targets = {t for job in scrape["scrape_configs"] for group in job["static_configs"] for t in group["targets"]}
    expected = {f"{name}:{broker_config(compose, name, tmp_path).metrics_port}" for name in BROKERS}
    assert targets == expected


def test_compose_console_reaches_the_brokers_and_their_metrics(compose, tmp_path):
    from odradek.console.server import build_parser

    console = compose["services"]["console"]
    assert console["depends_on"] == {b: {"condition": "service_healthy"} for b in BROKERS}
    args = build_parser().parse_args(console["command"][1:])  # the flags are the ones odradek-console takes
    assert console["command"][0] == "odradek-console"
    assert set(args.bootstrap_server.split(",")) == {f"{name}:9092" for name in BROKERS}
    assert set(args.metrics.split(",")) == {f"{name}:{broker_config(compose, name, tmp_path).metrics_port}"
                                            for name in BROKERS}
    assert args.host == "0.0.0.0" and published(console) == {args.port: 8080}
    assert all(str(entry).startswith("127.0.0.1:") for entry in console["ports"])  # loopback only on the host


# --- Dockerfile ---------------------------------------------------------------------------------------------

def test_dockerfile_non_root_volume_healthcheck_and_entrypoint():
    text = (ROOT / "Dockerfile").read_text()
    stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, re.M)
    assert ("python:3.12-slim-bookworm", "broker") in stages and stages[-1][0] == "broker"  # the default target
    broker = text.split("AS broker", 1)[1].split("AS spark-job", 1)[0]
    assert re.search(r"^USER odradek$", broker, re.M)
    assert 'VOLUME ["/var/lib/odradek/data"]' in broker
    assert 'ENTRYPOINT ["python", "/opt/odradek/bin/entrypoint.py"]' in broker
    assert '"python", "/opt/odradek/bin/healthcheck.py"' in broker.split("HEALTHCHECK", 1)[1]
    assert "STOPSIGNAL SIGTERM" in broker
    assert "import uvloop, cramjam, crc32c" in broker
    # every COPY source exists, and .dockerignore does not hide it
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    for sources in re.findall(r"^COPY (?!--from)(.+?) \S+$", text, re.M):
        for source in sources.split():
            if source != "examples":  # examples/ holds the Spark pipeline
                assert (ROOT / source).exists(), source
            assert source.split("/")[0] not in ignored, source
    assert entrypoint.IMAGE_DEFAULTS[0] == ("log.dirs", "/var/lib/odradek/data")


DEBIAN_RELEASES = {"bookworm": "12", "trixie": "13", "bullseye": "11"}


def test_every_apt_package_the_dockerfile_installs_exists_in_its_base_images_debian_release():
    """python:<version>-slim follows Debian's newest release, whose package names change (Debian 13 has no
    openjdk-17-jre-headless): every base image must name its release, and every package that apt-get
    installs must exist in that release's main component (checked with this Debian machine's apt lists)."""
    text = (ROOT / "Dockerfile").read_text()
    bases = {image for image, _ in re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, re.M) if ":" in image}
    releases = {next((r for r in DEBIAN_RELEASES if image.endswith(f"-{r}")), image) for image in bases}
    assert releases <= set(DEBIAN_RELEASES) and len(releases) == 1, f"unpinned or mixed base images: {bases}"
    release = releases.pop()
    packages = {word for command in re.findall(r"apt-get install ([^&\n]+)", text)
                for word in command.replace("\\", " ").split() if not word.startswith("-")}
    assert packages, "no apt-get install found"
    os_release = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    if f"VERSION_CODENAME={release}" not in os_release or shutil.which("apt-cache") is None:
        pytest.skip(f"needs a Debian {release} machine to read its package lists")
    missing = []
    for package in sorted(packages):
        policy = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True).stdout
        if not re.search(rf"^\s+\d+ \S+ {release}(-security|-updates)?/main ", policy, re.M):
            missing.append(package)
    assert missing == [], f"not in Debian {release} main: {missing}"


# --- odradek-cluster keeps parity with the compose cluster ---------------------------------------------------

@pytest.mark.timeout(180)
def test_odradek_cluster_has_the_compose_clusters_replication_defaults_and_metrics(compose, zookeeper, tmp_path,
                                                                                 capsys):
    from odradek.tools import cluster as cli

    data_dir = tmp_path / "local"
    chroot = f"/parity-{os.getpid()}-{time.monotonic_ns()}"
    try:
        assert cli.main(["start", "--brokers", "3", "--base-port", "0", "--metrics-base-port", "0",
                         "--zookeeper", zookeeper.connect_string, "--chroot", chroot,
                         "--data-dir", str(data_dir), "--override", "zookeeper.session.timeout.ms=6000"]) == 0
        started = capsys.readouterr()
        assert started.err.count("/metrics") == 3
        props = {k: v for k, v, _ in parse_properties((data_dir / "server.properties").read_text())}
        env = compose["services"]["kafka-1"]["environment"]
        assert props["default.replication.factor"] == env["KAFKA_DEFAULT_REPLICATION_FACTOR"] == "3"
        assert props["min.insync.replicas"] == env["KAFKA_MIN_INSYNC_REPLICAS"] == "2"
        assert props["offsets.topic.replication.factor"] == env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"]
        assert props["transaction.state.log.min.isr"] == env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"]
        assert cli.main(["status", "--data-dir", str(data_dir)]) == 0
        urls = re.search(r"^Metrics: (.+)$", capsys.readouterr().out, re.M).group(1).split()
        assert len(urls) == 3
        for url in urls:
            with urllib.request.urlopen(url, timeout=10) as response:
                assert b"kafka_server_replicamanager_partitioncount" in response.read()
    finally:
        cli.main(["stop", "--data-dir", str(data_dir)])


def test_odradek_cluster_rejects_a_metrics_base_port_without_room(capsys):
    from odradek.tools import cluster as cli

    assert cli.main(["start", "--brokers", "3", "--metrics-base-port", "65534"]) == 1
    assert capsys.readouterr().err.strip() == ("Error: --metrics-base-port 65534 leaves no room for 3 brokers "
                                               "below 65536")


# --- the "secure" profile: a SASL_SSL external listener --------------------------------------------------

def test_compose_secure_profile_broker_takes_sasl_ssl_with_what_secure_init_makes(compose, tmp_path, zk_chroot,
                                                                                  zk_client_factory):
    services = compose["services"]
    broker, init = services["kafka-secure"], services["secure-init"]
    assert broker["depends_on"]["secure-init"] == {"condition": "service_completed_successfully"}
    assert init["entrypoint"] == ["python", "/opt/odradek/bin/secure_init.py"]
    assert (ROOT / "docker" / "secure_init.py").exists()
    config = broker_config(compose, "kafka-secure", tmp_path)
    protocols = {e.name: e.security_protocol for e in config.listeners}
    assert protocols == {"INTERNAL": "SASL_PLAINTEXT", "EXTERNAL": "SASL_SSL"}
    external = next(e for e in config.advertised_listeners if e.name == "EXTERNAL")
    assert (external.host, external.port) == ("localhost", 49092) and published(broker)[49092] == 49092
    assert config.inter_broker_listener_name == "INTERNAL"
    # secure-init, run for real (its ZooKeeper on this test's chroot, its secrets in a temp dir), makes what the
    # broker's settings name: the key store, the trust store and the admin user the brokers log in as
    secrets_dir = tmp_path / "secrets"
    env = {**init["environment"], "ODRADEK_ZOOKEEPER": zk_chroot, "ODRADEK_SECRETS_DIR": str(secrets_dir)}
    _load(ROOT / "docker" / "secure_init.py", "odradek_docker_secure_init").prepare(env)
    mounted = dict(v.split(":")[:2][::-1] for v in broker["volumes"])["/var/lib/odradek/secrets"]
    assert mounted == dict(v.split(":")[::-1] for v in init["volumes"])["/var/lib/odradek/secrets"]
    relocated = {k: str(v).replace("/var/lib/odradek/secrets", str(secrets_dir)) for k, v in config.originals.items()}
    listeners = KafkaConfig(relocated).listener_security()
    assert listeners["EXTERNAL"].ssl_context is not None and listeners["EXTERNAL"].sasl_mechanisms == [
        "SCRAM-SHA-256", "SCRAM-SHA-512"]
    users = zk_client_factory()
    assert set(users.get_entity_config("users", "admin")) == {"SCRAM-SHA-512"}
    assert set(users.get_entity_config("users", "client")) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    client = parse_properties((secrets_dir / "client.properties").read_text())
    assert dict((k, v) for k, v, _ in client)["security.protocol"] == "SASL_SSL"
