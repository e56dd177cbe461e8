"""How each client family reaches a secured listener, and one round trip with each (admin, produce, consume
with a group), for the security tests. ``Profile`` holds the settings once; each family gets them in its own
names: kafka-python's and aiokafka's keywords, librdkafka's properties (confluent-kafka, kcat), Kafka's
client properties (our tools' --command-config) and our clients' keywords."""

from __future__ import annotations

import asyncio
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from tests.compat.client_drivers import kcat_path

RECORDS = [b"one", b"two", b"three"]
DEADLINE_S = 60.0  # upper bound for a client to finish its round trip; never a speed assertion


@dataclass(frozen=True)
class Profile:
    name: str
    bootstrap: str
    protocol: str
    cafile: str | None = None
    keystore: str | None = None  # PEM: key + certificate, for mutual TLS
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None

    def with_(self, **changes: Any) -> "Profile":
        return Profile(**{**self.__dict__, **changes})

    def ours(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"security_protocol": self.protocol}
        if self.cafile:
            kwargs.update(ssl_cafile=self.cafile)
        if self.keystore:
            kwargs.update(ssl_certfile=self.keystore, ssl_keyfile=self.keystore)
        if self.mechanism:
            kwargs.update(sasl_mechanism=self.mechanism, sasl_plain_username=self.username,
                          sasl_plain_password=self.password)
        return kwargs

    kafka_python = ours  # the same keyword names

    def aiokafka(self) -> dict[str, Any]:
        from aiokafka.helpers import create_ssl_context
        kwargs = {k: v for k, v in self.ours().items() if not k.startswith("ssl_")}
        if self.cafile:
            kwargs["ssl_context"] = create_ssl_context(cafile=self.cafile, certfile=self.keystore, keyfile=self.keystore)
        return kwargs

    def librdkafka(self) -> dict[str, str]:
        config = {"bootstrap.servers": self.bootstrap, "security.protocol": self.protocol}
        if self.cafile:
            config["ssl.ca.location"] = self.cafile
        if self.keystore:
            config.update({"ssl.certificate.location": self.keystore, "ssl.key.location": self.keystore})
        if self.mechanism:
            config.update({"sasl.mechanism": self.mechanism, "sasl.username": self.username or "",
                           "sasl.password": self.password or ""})
        return config

    def properties(self) -> str:
        """Kafka's client properties (what a Java client's config file holds)."""
        lines = [f"security.protocol={self.protocol}"]
        if self.cafile:
            lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={self.cafile}"]
        if self.keystore:
            lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={self.keystore}"]
        if self.mechanism:
            module = "plain.PlainLoginModule" if self.mechanism == "PLAIN" else "scram.ScramLoginModule"
            lines += [f"sasl.mechanism={self.mechanism}",
                      f'sasl.jaas.config=org.apache.kafka.common.security.{module} required '
                      f'username="{self.username}" password="{self.password}";']
        return "\n".join(lines) + "\n"


def round_trip(family: str, profile: Profile, topic: str, group: str) -> list[bytes]:
    """Create ``topic`` (kcat: list it), produce RECORDS, consume them back in ``group``; returns the values."""
    return {"kafka-python": _kafka_python, "confluent-kafka": _confluent, "aiokafka": _aiokafka,
            "kcat": _kcat}[family](profile, topic, group)


def _kafka_python(profile: Profile, topic: str, group: str) -> list[bytes]:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic
    admin = KafkaAdminClient(bootstrap_servers=profile.bootstrap, **profile.kafka_python())
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=profile.bootstrap, **profile.kafka_python())
    for value in RECORDS:
        producer.send(topic, value).get(timeout=DEADLINE_S)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=profile.bootstrap, group_id=group, auto_offset_reset="earliest",
                             consumer_timeout_ms=int(DEADLINE_S * 1000), **profile.kafka_python())
    try:
        values = []
        for record in consumer:
            values.append(record.value)
            if len(values) == len(RECORDS):
                break
        consumer.commit()
        return values
    finally:
        consumer.close()


def _confluent(profile: Profile, topic: str, group: str) -> list[bytes]:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    config = profile.librdkafka()
    admin = AdminClient(config)  # held: the futures fail if the client is collected first
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(DEADLINE_S)
    producer = Producer(config)
    for value in RECORDS:
        producer.produce(topic, value)
    assert producer.flush(DEADLINE_S) == 0
    consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values, deadline = [], time.monotonic() + DEADLINE_S
    try:
        while len(values) < len(RECORDS) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def _aiokafka(profile: Profile, topic: str, group: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def go() -> list[bytes]:
        admin = AIOKafkaAdminClient(bootstrap_servers=profile.bootstrap, **profile.aiokafka())
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, 1, 1)])
        finally:
            await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=profile.bootstrap, **profile.aiokafka())
        await producer.start()
        try:
            for value in RECORDS:
                await producer.send_and_wait(topic, value)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=profile.bootstrap, group_id=group,
                                    auto_offset_reset="earliest", **profile.aiokafka())
        await consumer.start()
        values: list[bytes] = []
        try:
            async with asyncio.timeout(DEADLINE_S):
                while len(values) < len(RECORDS):
                    for records in (await consumer.getmany(timeout_ms=500)).values():
                        values += [r.value for r in records]
            await consumer.commit()
        finally:
            await consumer.stop()
        return values

    return asyncio.run(go())


def kcat(profile: Profile, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    options = [a for key, value in profile.librdkafka().items() if key != "bootstrap.servers"
               for a in ("-X", f"{key}={value}")]
    return subprocess.run([kcat_path(), "-b", profile.bootstrap, *options, *args], input=stdin, capture_output=True,
                          timeout=DEADLINE_S + 30)


def _kcat(profile: Profile, topic: str, group: str) -> list[bytes]:
    from odradek.clients import Admin, NewTopic
    with Admin(profile.bootstrap, **profile.ours()) as admin:  # kcat creates no topics
        admin.create_topics([NewTopic(topic, 1, 1)])
    listing = kcat(profile, "-L", "-t", topic)
    assert listing.returncode == 0 and f'topic "{topic}" with 1 partitions' in listing.stdout.decode(), listing
    produced = kcat(profile, "-P", "-t", topic, stdin=b"\n".join(RECORDS) + b"\n")
    assert produced.returncode == 0, produced.stderr
    consumed = kcat(profile, "-X", "auto.offset.reset=earliest", "-G", group, "-c", str(len(RECORDS)), "-f", "%s\n",
                    topic)
    assert consumed.returncode == 0, consumed.stderr
    return consumed.stdout.splitlines()
