"""One broker with the issue's listener layout, secured for real, against unmodified clients.

Listeners: INTERNAL (SASL_PLAINTEXT: SCRAM-SHA-512 and PLAIN; the inter-broker listener, the broker reaching
itself as ``admin``), EXTERNAL (SASL_SSL: SCRAM-SHA-256 and SCRAM-SHA-512, advertised as localhost), OPEN
(PLAINTEXT) and TLS (SSL, client certificates requested). The SCRAM users are made with
``odradek-configs --zookeeper`` before the broker starts, as Kafka's bootstrap step. confluent-kafka,
kafka-python, aiokafka and kcat each create a topic, produce and consume with a group over SSL (mutual TLS),
SASL_PLAINTEXT PLAIN, SASL_SSL SCRAM-SHA-256 and SCRAM-SHA-512; bad credentials, bad certificates and
clients that skip the handshake are refused as Kafka refuses them while the broker keeps serving.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import struct
import uuid

import pytest

from odradek.clients import Admin, AIOAdmin, AIOConsumer, AIOProducer, Consumer, NewTopic, Producer
from odradek.clients.admin.client import AdminTimeoutError, ConfigResource, ConfigResourceType
from odradek.clients.admin.quotas import ClientQuotaAlteration, ClientQuotaEntity
from odradek.clients.admin.scram import UserScramCredentialUpsertion
from odradek.tools.local_ca import LocalCA
from odradek.tools.local_zookeeper import free_port
from odradek.clients.connection import BrokerConnection
from odradek.clients.security.client_security import ClientSecurity
from odradek.clients.simple_client import SimpleClient
from odradek.protocol.errors import (  # type: ignore[attr-defined]
    SaslAuthenticationFailedError, UnsupportedSaslMechanismError,
)
from odradek.protocol.header import decode_response, encode_request
from odradek.protocol.messages import ApiVersionsRequest, MetadataRequest, SaslHandshakeRequest
from tests.conftest import new_cluster
from tests.integration.helpers import console_tool, request_log, run, wait_until
from tests.integration.security_clients import Profile, kcat, round_trip

pytestmark = pytest.mark.timeout(300)
FAMILIES = ("kafka-python", "confluent-kafka", "aiokafka", "kcat")
PROFILES = ("ssl", "sasl_plain", "scram_sha_256", "scram_sha_512")
SCRAM_FAILED = "Authentication failed during authentication due to invalid credentials with SASL mechanism"
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


class Secured:
    """The running broker, its ports and what clients need to reach each listener."""

    def __init__(self, cluster, ca: LocalCA, ports: dict[str, int], files: dict[str, str]) -> None:
        self.cluster, self.ca, self.ports, self.files = cluster, ca, ports, files
        cafile = str(ca.cert_path)
        self.profiles = {
            "ssl": Profile("ssl", f"127.0.0.1:{ports['TLS']}", "SSL", cafile, keystore=files["alice"]),
            "sasl_plain": Profile("sasl_plain", f"127.0.0.1:{ports['INTERNAL']}", "SASL_PLAINTEXT",
                                  mechanism="PLAIN", username="alice", password="alice-secret"),
            "scram_sha_256": Profile("scram_sha_256", f"localhost:{ports['EXTERNAL']}", "SASL_SSL", cafile,
                                     mechanism="SCRAM-SHA-256", username="alice", password="alice-secret"),
            "scram_sha_512": Profile("scram_sha_512", f"localhost:{ports['EXTERNAL']}", "SASL_SSL", cafile,
                                     mechanism="SCRAM-SHA-512", username="alice", password="alice-secret"),
        }
        self.admin = Profile("admin", f"127.0.0.1:{ports['INTERNAL']}", "SASL_PLAINTEXT", mechanism="SCRAM-SHA-512",
                             username="admin", password="admin-secret")

    def log(self) -> str:
        return self.cluster.broker_log(0).read_text(errors="replace")


def add_scram_user(connect: str, user: str, config: str) -> None:
    done = console_tool("configs", "--zookeeper", connect, "--alter", "--add-config", config, "--entity-type",
                        "users", "--entity-name", user)
    assert f"Completed updating config for entity: user-principal '{user}'." in done.stdout


@pytest.fixture(scope="module")
def secured(zookeeper, tmp_path_factory):
    work = tmp_path_factory.mktemp("secured")
    ca = LocalCA(work / "ca")
    files = {"broker": str(ca.issue("broker", hosts=["localhost", "127.0.0.1"])),
             "alice": str(ca.issue("alice", client=True)),
             "expired": str(ca.issue("expired", client=True, expired=True)),
             "mallory": str(LocalCA(work / "other-ca").issue("mallory", client=True)),
             "other_ca": str(work / "other-ca" / "ca.pem")}
    ports = {name: free_port() for name in ("INTERNAL", "EXTERNAL", "TLS", "MTLS")}
    overrides = {
        "listeners": f"INTERNAL://127.0.0.1:{ports['INTERNAL']},EXTERNAL://127.0.0.1:{ports['EXTERNAL']},"
                     f"OPEN://127.0.0.1:{{port}},TLS://127.0.0.1:{ports['TLS']},MTLS://127.0.0.1:{ports['MTLS']}",
        "advertised.listeners": f"INTERNAL://127.0.0.1:{ports['INTERNAL']},EXTERNAL://localhost:{ports['EXTERNAL']},"
                                f"OPEN://127.0.0.1:{{port}},TLS://127.0.0.1:{ports['TLS']},"
                                f"MTLS://127.0.0.1:{ports['MTLS']}",
        "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,EXTERNAL:SASL_SSL,OPEN:PLAINTEXT,TLS:SSL,MTLS:SSL",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
        "listener.name.internal.scram-sha-512.sasl.jaas.config":
            'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";',
        "listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.external.sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.tls.ssl.client.auth": "requested",
        # Kafka 2.8 applies the broker-wide key to SSL listeners only (MTLS here): EXTERNAL (SASL_SSL) clients
        # need no certificate
        "ssl.client.auth": "required",
        "listener.name.internal.sasl.server.max.receive.size": "65536",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": files["broker"],
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca.cert_path),
    }
    cluster = new_cluster(work / "cluster", zookeeper, 1, overrides)
    add_scram_user(cluster.zookeeper_connect, "admin", "SCRAM-SHA-512=[password=admin-secret]")
    add_scram_user(cluster.zookeeper_connect, "alice",
                   "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]")
    previous = os.environ.get("KAFKA_LOG4J_LOGGERS")
    os.environ["KAFKA_LOG4J_LOGGERS"] = "kafka.request.logger=DEBUG"  # request lines name the principal
    try:
        cluster.start()
    finally:
        os.environ.pop("KAFKA_LOG4J_LOGGERS") if previous is None else os.environ.update(KAFKA_LOG4J_LOGGERS=previous)
    ports["OPEN"] = cluster.brokers[0].port
    try:
        yield Secured(cluster, ca, ports, files)
    finally:
        cluster.stop(timeout=15.0)


def topic_name() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("family", FAMILIES)
def test_unmodified_clients_create_produce_and_consume_in_a_group(secured, family, profile):
    topic = topic_name()
    assert round_trip(family, secured.profiles[profile], topic, group=f"g-{topic}") == [b"one", b"two", b"three"]


def test_metadata_answers_with_the_listener_the_client_came_in_on(secured):
    expected = {"INTERNAL": ("127.0.0.1", secured.ports["INTERNAL"]), "OPEN": ("127.0.0.1", secured.ports["OPEN"]),
                "EXTERNAL": ("localhost", secured.ports["EXTERNAL"]), "TLS": ("127.0.0.1", secured.ports["TLS"])}
    reached = {"INTERNAL": secured.admin, "EXTERNAL": secured.profiles["scram_sha_512"],
               "TLS": secured.profiles["ssl"], "OPEN": Profile("open", f"127.0.0.1:{secured.ports['OPEN']}", "PLAINTEXT")}

    async def brokers(profile: Profile):
        security = ClientSecurity.from_kwargs(**profile.ours())
        async with SimpleClient(profile.bootstrap, security=security) as client:
            return {(b.host, b.port) for b in (await client.metadata(topics=[])).brokers.values()}

    for listener, profile in reached.items():
        assert run(brokers(profile)) == {expected[listener]}, listener


def test_principals_are_the_sasl_user_the_certificate_subject_or_anonymous(secured):
    with Producer(bootstrap_servers=secured.profiles["ssl"].bootstrap, **secured.profiles["ssl"].ours()) as producer:
        producer.send(topic_name(), b"x").get(timeout=60)
    with Admin(secured.profiles["scram_sha_256"].bootstrap, **secured.profiles["scram_sha_256"].ours()) as admin:
        admin.list_topics()
    anonymous_tls = secured.profiles["ssl"].with_(keystore=None)
    with Admin(anonymous_tls.bootstrap, **anonymous_tls.ours()) as admin:
        admin.list_topics()
    with Admin(f"127.0.0.1:{secured.ports['OPEN']}") as admin:
        admin.list_topics()
    seen = {(entry["listener"], entry["principal"]) for entry in request_log(secured.log())}
    assert {("TLS", "User:CN=alice,O=Odradek"), ("TLS", "User:ANONYMOUS"), ("EXTERNAL", "User:alice"),
            ("OPEN", "User:ANONYMOUS")} <= seen
    # the broker's own clients (its controller here) authenticate on INTERNAL as the inter-broker user
    assert ("INTERNAL", "User:admin") in seen


def refused_by(error: BaseException) -> BaseException:
    """What refused an admin call: the error itself, or what the retries ended on. A broker that turns
    down a client certificate after a TLS 1.3 handshake just closes the connection, which the client
    cannot tell from a lost one: it tries again (Kafka's client reads the TLS alert and gives up at once)."""
    return error.__cause__ if isinstance(error, AdminTimeoutError) and error.__cause__ else error


def test_bad_credentials_and_certificates_are_refused_while_others_are_served(secured):
    good = secured.profiles["scram_sha_512"]
    with Producer(bootstrap_servers=good.bootstrap, **good.ours()) as producer:
        topic = topic_name()
        producer.send(topic, b"before").get(timeout=60)
        refusals = {
            "wrong password": (good.with_(password="nope"), SaslAuthenticationFailedError, SCRAM_FAILED),
            "unknown user": (good.with_(username="mallory"), SaslAuthenticationFailedError, SCRAM_FAILED),
            "PLAIN wrong password": (secured.profiles["sasl_plain"].with_(password="nope"),
                                     SaslAuthenticationFailedError, "Authentication failed: Invalid username or password"),
            "mechanism not enabled": (good.with_(mechanism="PLAIN"), UnsupportedSaslMechanismError, "PLAIN"),
            "expired certificate": (secured.profiles["ssl"].with_(keystore=secured.files["expired"]), ConnectionError,
                                    ""),
            "untrusted certificate": (secured.profiles["ssl"].with_(keystore=secured.files["mallory"]),
                                      ConnectionError, ""),
            "untrusted broker": (secured.profiles["ssl"].with_(cafile=secured.files["other_ca"]), ConnectionError,
                                 "CERTIFICATE_VERIFY_FAILED"),
        }
        for case, (profile, error, message) in refusals.items():
            with pytest.raises((error, AdminTimeoutError)) as info:
                with Admin(profile.bootstrap, request_timeout_ms=10000, retries=1, **profile.ours()) as admin:
                    admin.list_topics()
            refusal = refused_by(info.value)
            assert isinstance(refusal, error) and message in str(refusal), (case, info.value)
            producer.send(topic, case.encode()).get(timeout=60)  # the broker keeps serving the others
    # librdkafka's view of the same refusals. Under TLS 1.3 the client's handshake is over before the broker
    # checks its certificate, so librdkafka sees the connection end ("Receive failed") rather than an alert.
    for profile, text in ((good.with_(password="nope"), SCRAM_FAILED),
                          (secured.profiles["ssl"].with_(keystore=secured.files["expired"]), "Receive failed")):
        listing = kcat(profile, "-L", "-m", "2")  # kcat gives up after -m seconds
        assert listing.returncode != 0 and text in listing.stderr.decode(), listing.stderr
    with Consumer(topic, bootstrap_servers=good.bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=30000,
                  **good.ours()) as consumer:
        values = [record.value for _, record in zip(range(1 + len(refusals)), consumer)]
    assert values == [b"before", *(case.encode() for case in refusals)]


def _raw(port: int, *frames: bytes, tls: bool = False) -> bytes:
    """Send frames on a fresh connection and read everything until the broker closes it (or 10 s pass)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    if tls:
        context = ssl.create_default_context(cafile=None)
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        sock = context.wrap_socket(sock)
    with sock:
        for data in frames:
            sock.sendall(struct.pack(">i", len(data)) + data)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except (socket.timeout, ConnectionResetError, ssl.SSLError):
            pass
        return received


def _frames(data: bytes) -> list[bytes]:
    frames = []
    while len(data) >= 4:
        size = struct.unpack(">i", data[:4])[0]
        frames.append(data[4:4 + size])
        data = data[4 + size:]
    return frames


def test_a_client_that_skips_the_handshake_is_closed_without_an_answer(secured):
    metadata = encode_request(MetadataRequest(topics=None), 9, 7, "raw")[4:]
    assert _raw(secured.ports["INTERNAL"], metadata) == b""
    assert _raw(secured.ports["EXTERNAL"], metadata, tls=True) == b""
    assert _raw(secured.ports["TLS"], metadata) == b""  # a plaintext client on the TLS listener: no Kafka answer
    # after the handshake, any request but SaslAuthenticate gets its error response (ILLEGAL_SASL_STATE), then
    # the close, as Kafka's SaslServerAuthenticator
    handshake = encode_request(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1, 8, "raw")[4:]
    versions = encode_request(ApiVersionsRequest(), 3, 9, "raw")[4:]
    first, second = _frames(_raw(secured.ports["INTERNAL"], handshake, versions))
    assert decode_response(first, 17, 1)[1].error_code == 0
    assert decode_response(second, 18, 3)[1].error_code == 34


def _closed_on_frame_size(port: int, size: int, tls: bool = False, wait_s: float = 10.0) -> bool:
    """Announce a frame of ``size`` bytes and send nothing more: True if the broker closes the connection
    within ``wait_s`` (it refuses the size), False if it waits for the frame's bytes."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=wait_s)
    if tls:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        sock = context.wrap_socket(sock)
    with sock:
        sock.sendall(struct.pack(">i", size))
        try:
            return sock.recv(1) == b""
        except socket.timeout:
            return False
        except (ConnectionResetError, ssl.SSLError):
            return True


def test_unauthenticated_connections_may_send_only_small_frames(secured):
    # sasl.server.max.receive.size (Kafka: 512 KiB): the listener's own value, else the broker's
    assert _closed_on_frame_size(secured.ports["INTERNAL"], 65537)
    assert not _closed_on_frame_size(secured.ports["INTERNAL"], 65536, wait_s=1)
    assert _closed_on_frame_size(secured.ports["EXTERNAL"], 524289, tls=True)
    assert not _closed_on_frame_size(secured.ports["EXTERNAL"], 524288, tls=True, wait_s=1)


def test_old_clients_legacy_handshake_v0_then_bare_tokens(secured):
    sock = socket.create_connection(("127.0.0.1", secured.ports["INTERNAL"]), timeout=10)
    with sock:
        handshake = encode_request(SaslHandshakeRequest(mechanism="PLAIN"), 0, 1, "old")
        sock.sendall(handshake)
        size = struct.unpack(">i", sock.recv(4))[0]
        body = b""
        while len(body) < size:
            body += sock.recv(size - len(body))
        response = decode_response(body, 17, 0)[1]
        assert response.error_code == 0 and response.mechanisms == ["SCRAM-SHA-512", "PLAIN"]
        token = b"\0alice\0alice-secret"
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert sock.recv(4) == struct.pack(">i", 0)  # the empty server token, bare
        sock.sendall(encode_request(MetadataRequest(topics=[]), 9, 2, "old"))  # authenticated: served
        size = struct.unpack(">i", sock.recv(4))[0]
        body = b""
        while len(body) < size:
            body += sock.recv(size - len(body))
        assert [(b.host, b.port) for b in decode_response(body, 3, 9)[1].brokers] == [
            ("127.0.0.1", secured.ports["INTERNAL"])]


def test_sasl_apis_on_an_open_or_authenticated_connection_are_an_illegal_state(secured):
    async def go():
        conn = await BrokerConnection.connect("127.0.0.1", secured.ports["OPEN"])
        try:
            return (await conn.send(SaslHandshakeRequest(mechanism="PLAIN"), version=1)).error_code
        finally:
            await conn.close()
    assert run(go()) == 34


def test_scram_users_change_without_a_restart(secured, tmp_path):
    admin_config = tmp_path / "admin.properties"
    admin_config.write_text(secured.admin.properties())
    bob = secured.profiles["scram_sha_256"].with_(username="bob", password="bob-secret")

    def configs(*args: str) -> str:
        return console_tool("configs", "--bootstrap-server", secured.admin.bootstrap, "--command-config",
                            str(admin_config), *args).stdout

    def bob_gets_in() -> bool:
        try:
            with Admin(bob.bootstrap, retries=0, **bob.ours()) as admin:
                admin.list_topics()
            return True
        except SaslAuthenticationFailedError:
            return False

    assert not bob_gets_in()
    assert configs("--alter", "--add-config", "SCRAM-SHA-256=[iterations=4096,password=bob-secret]",
                   "--entity-type", "users", "--entity-name", "bob") == "Completed updating config for user bob.\n"
    wait_until(bob_gets_in, 30, "bob's new credential to work")
    assert configs("--describe", "--entity-type", "users", "--entity-name", "bob") == \
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=4096\n"
    described = configs("--describe", "--entity-type", "users")
    assert "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, " \
           "SCRAM-SHA-512=iterations=4096" in described
    configs("--alter", "--delete-config", "SCRAM-SHA-256", "--entity-type", "users", "--entity-name", "bob")
    wait_until(lambda: not bob_gets_in(), 30, "bob's deleted credential to stop working")
    refused = console_tool("configs", "--bootstrap-server", secured.admin.bootstrap, "--command-config",
                           str(admin_config), "--alter", "--add-config", "SCRAM-SHA-256=[iterations=100,password=x]",
                           "--entity-type", "users", "--entity-name", "bob", check=False)
    assert refused.returncode == 1 and "Iterations 100 is less than the minimum 4096" in refused.stderr


def test_tools_take_kafkas_client_properties(secured, tmp_path):
    profile = secured.profiles["scram_sha_512"]
    properties = tmp_path / "client.properties"
    properties.write_text(profile.properties())
    topic = topic_name()
    boot = ["--bootstrap-server", profile.bootstrap]
    console_tool("topics", *boot, "--command-config", str(properties), "--create", "--topic", topic, "--partitions", "2")
    assert f"Topic: {topic}\t" in console_tool("topics", *boot, "--command-config", str(properties), "--describe",
                                               "--topic", topic).stdout
    console_tool("console-producer", *boot, "--producer.config", str(properties), "--topic", topic, stdin="a\nb\n")
    consumed = console_tool("console-consumer", *boot, "--consumer.config", str(properties), "--topic", topic,
                            "--from-beginning", "--group", "tools", "--max-messages", "2", "--timeout-ms", "30000")
    assert sorted(consumed.stdout.split()) == ["a", "b"]
    described = console_tool("consumer-groups", *boot, "--command-config", str(properties), "--describe",
                             "--group", "tools").stdout
    assert topic in described
    # Refused connections are retried until the deadline, as by Kafka's tool: a short one here.
    plain = tmp_path / "plain.properties"
    plain.write_text("request.timeout.ms=1000\ndefault.api.timeout.ms=3000\n")
    unsecured = console_tool("topics", *boot, "--list", "--command-config", str(plain), check=False, timeout=60)
    assert unsecured.returncode != 0 and "listTopics timed out" in unsecured.stdout, unsecured.stdout


def test_our_async_clients_over_every_listener(secured):
    async def go(profile: Profile) -> list[bytes]:
        topic = topic_name()
        async with AIOAdmin(profile.bootstrap, **profile.ours()) as admin:
            await admin.create_topics([NewTopic(topic, 1, 1)])
        async with AIOProducer(bootstrap_servers=profile.bootstrap, **profile.ours()) as producer:
            await (await producer.send(topic, b"async"))
        async with AIOConsumer(topic, bootstrap_servers=profile.bootstrap, group_id=f"g-{topic}",
                               auto_offset_reset="earliest", **profile.ours()) as consumer:
            record = await asyncio.wait_for(consumer.getone(), 60)
            return [record.value]

    for name, profile in secured.profiles.items():
        assert run(go(profile), timeout=90) == [b"async"], name


def test_secrets_never_leave_the_broker(secured, tmp_path):
    """DescribeConfigs of the broker, through our Admin, kafka-python, confluent-kafka and odradek-configs, answers
    the JAAS entries (passwords) as Kafka's sensitive entries: value null, sensitive; and the broker's log,
    request log at DEBUG included, never shows a password or a SCRAM credential (salt, stored and server keys),
    also while users' credentials and quotas change."""
    from confluent_kafka.admin import AdminClient as CKAdmin, ConfigResource as CKResource
    from kafka.admin import ConfigResource as KPResource, ConfigResourceType as KPType, KafkaAdminClient

    admin, jaas = secured.admin, "listener.name.internal.scram-sha-512.sasl.jaas.config"
    resource = ConfigResource(ConfigResourceType.BROKER, "0")
    with Admin(admin.bootstrap, **admin.ours()) as ours:
        ours.alter_user_scram_credentials([UserScramCredentialUpsertion("carol", "SCRAM-SHA-256", "carol-secret")])
        ours.alter_client_quotas([ClientQuotaAlteration(ClientQuotaEntity({ClientQuotaEntity.USER: "carol"}),
                                                        [ClientQuotaAlteration.Op("producer_byte_rate", 1e6)])])
        entries = ours.describe_configs([resource], include_synonyms=True)[resource]
    assert (entries[jaas].value, entries[jaas].is_sensitive) == (None, True)
    assert entries["listener.name.internal.sasl.enabled.mechanisms"].value == "SCRAM-SHA-512,PLAIN"
    client = KafkaAdminClient(bootstrap_servers=admin.bootstrap, **admin.kafka_python())
    try:
        answer = client.describe_configs([KPResource(KPType.BROKER, "0")], config_filter="all")
    finally:
        client.close()
    (kp_entries,) = [configs for by_name in answer.values() for configs in by_name.values()]
    assert jaas in kp_entries and "alice-secret" in PLAIN_JAAS  # listed, and a secret is there to be leaked
    confluent = CKAdmin(admin.librdkafka())
    (future,) = confluent.describe_configs([CKResource("broker", "0")]).values()
    ck_entries = future.result(timeout=60)
    assert (ck_entries[jaas].value, ck_entries[jaas].is_sensitive) == (None, True)
    admin_config = tmp_path / "admin.properties"
    admin_config.write_text(admin.properties())
    described = console_tool("configs", "--bootstrap-server", admin.bootstrap, "--command-config", str(admin_config),
                             "--describe", "--entity-type", "brokers", "--entity-name", "0", "--all").stdout
    assert f"  {jaas}=null sensitive=true synonyms={{STATIC_BROKER_CONFIG:{jaas}=null}}" in described
    wait_until(lambda: "Processing override for entityPath: users/carol" in secured.log(), 30,
               "the broker to apply carol's changes")
    log = secured.log()
    assert "Updating client quotas of users/carol" in log
    assert any(entry["principal"] == "User:admin" for entry in request_log(log))
    for where, text in (("our Admin", repr(entries)), ("kafka-python", repr(answer)), ("confluent-kafka",
                        repr(ck_entries)), ("odradek-configs", described), ("the broker's log", log)):
        leaked = [secret for secret in ("admin-secret", "alice-secret", "carol-secret", "stored_key", "server_key")
                  if secret in text]
        assert not leaked, (where, leaked)


def test_scram_users_whose_names_hold_equals_signs_and_commas(secured):
    """RFC 5802's saslname escapes ('=' as =3D, ',' as =2C): our clients and librdkafka get in as the user, whose
    principal is the unescaped name. (kafka-python 3.0 sends the name unescaped, which Kafka refuses as well.)"""
    from confluent_kafka.admin import AdminClient as CKAdmin

    name = "o=dd,us=2Cer"
    with Admin(secured.admin.bootstrap, **secured.admin.ours()) as admin:
        admin.alter_user_scram_credentials([UserScramCredentialUpsertion(name, "SCRAM-SHA-512", "odd-secret")])
    odd = secured.profiles["scram_sha_512"].with_(username=name, password="odd-secret")

    def ours_gets_in() -> bool:
        try:
            with Admin(odd.bootstrap, retries=0, client_id="odd-ours", **odd.ours()) as admin:
                admin.list_topics()
            return True
        except SaslAuthenticationFailedError:
            return False

    wait_until(ours_gets_in, 30, "the new user's credential to work")
    confluent = CKAdmin({**odd.librdkafka(), "client.id": "odd-librdkafka"})
    assert confluent.list_topics(timeout=30).brokers
    def requests_of(client_id: str) -> list[dict]:
        return [entry for entry in request_log(secured.log()) if entry["requestHeader"].get("clientId") == client_id
                and entry["requestHeader"]["requestApiKeyName"] != "API_VERSIONS"]
    wait_until(lambda: requests_of("odd-librdkafka"), 30, "librdkafka's request lines")
    for client_id in ("odd-ours", "odd-librdkafka"):
        entries = requests_of(client_id)
        assert entries and all(entry["principal"] == f"User:{name}" for entry in entries), (client_id, entries[:2])


def test_a_listener_requiring_client_certificates_refuses_a_client_without_one(secured):
    mtls = secured.profiles["ssl"].with_(bootstrap=f"127.0.0.1:{secured.ports['MTLS']}")
    with Admin(mtls.bootstrap, client_id="mtls-alice", **mtls.ours()) as admin:
        admin.list_topics()
    with pytest.raises((ConnectionError, AdminTimeoutError)) as info:
        with Admin(mtls.bootstrap, request_timeout_ms=10000, retries=1, **mtls.with_(keystore=None).ours()) as admin:
            admin.list_topics()
    assert isinstance(refused_by(info.value), ConnectionError), info.value
    listing = kcat(mtls.with_(keystore=None), "-L", "-m", "2")
    assert listing.returncode != 0
    assert any(entry["requestHeader"].get("clientId") == "mtls-alice" and entry["principal"].startswith("User:CN=alice")
               for entry in request_log(secured.log()))
