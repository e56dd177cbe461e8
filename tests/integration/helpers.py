"""Helpers shared by the integration tests: running a coroutine with a bound, topics made and read back
through SimpleClient, a topic known by every broker, the request log's entries, a kafka-python group
consumer that knows its topics before it joins, the console scripts run as a user runs them, and an
idempotent confluent-kafka producer writing numbered records in a thread."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
import shutil
import subprocess
import sys
import threading
import time

from odradek.broker.log.log_manager import DELETE_DIR_SUFFIX
from odradek.clients.simple_client import SimpleClient
from odradek.protocol.messages import MetadataRequest


def run(coro, timeout: float = 200):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def wait_until(condition, timeout: float = 90.0, what: str = "condition", interval: float = 0.2):
    """Poll ``condition`` until it returns something truthy (returned); fail naming ``what`` after ``timeout``
    seconds, an upper bound for the cluster to converge, never a speed assertion."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


async def create_topic(servers: str, name: str, partitions: int) -> None:
    async with SimpleClient(servers) as client:
        assert (await client.create_topics({name: (partitions, 1)}))[name] == 0
        await client.wait_for_leaders(name)


async def known_by_every_broker(servers: str, topic: str) -> bool:
    """Whether each live broker's metadata lists ``topic`` with a leader for every partition: Kafka answers
    CreateTopics once the broker asked knows it, and a client that then asks another broker (kafka-python's
    least loaded node) may find it unknown there for a moment."""
    async with SimpleClient(servers) as client:
        brokers = (await client.metadata([])).brokers
        for node_id in brokers:
            answer = await client.send(node_id, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(
                name=topic)]))
            found = [t for t in answer.topics if t.name == topic and t.error_code == 0]
            if not found or not found[0].partitions or any(p.leader_id < 0 for p in found[0].partitions):
                return False
    return True


def request_log(text: str) -> list[dict]:
    """The request log's entries (``Completed request:{json}`` lines of kafka.request.logger) in a broker log.

    A log read while the broker writes it can end in a line cut short: only lines that end in a newline count."""
    prefix = "Completed request:"
    entries = []
    for line in text.split("\n")[:-1]:
        start = line.find(prefix)
        if start >= 0:
            entries.append(json.loads(line[start + len(prefix):line.rindex("}") + 1]))
    return entries


def kafka_python_group_consumer(*topics: str, **configs):
    """kafka-python's KafkaConsumer subscribed to ``topics`` that has their metadata before it first joins.

    kafka-python 3.0.12 joins before its first metadata answer; leading the group then, it assigns nothing
    ("No partition metadata") and rejoins when the metadata comes, its rejoin flag clear. If that join ends
    after a poll()'s deadline, need_rejoin() is False at the next poll and the finished join is never applied:
    no assignment and no heartbeats until its session expires (Java's rejoinNeededOrPending() counts a pending
    join, and its leader refreshes metadata before assigning). The broker's part is Kafka 2.8's."""
    import kafka

    consumer = kafka.KafkaConsumer(*topics, **configs)

    def knows_topics() -> bool:
        consumer.topics()  # a metadata round trip each time: the coordinator's snapshot of the topics follows it
        return all(consumer.partitions_for_topic(topic) for topic in topics)

    wait_until(knows_topics, 60, f"kafka-python's metadata of {', '.join(topics)}")
    return consumer


async def read_all(servers: str, topic: str, partitions: int) -> dict[int, list]:
    """Every record of every partition, fetched from the leaders."""
    result = {}
    async with SimpleClient(servers) as client:
        for partition in range(partitions):
            end = (await client.list_offsets(topic, partition, -1))[0]
            records, offset = [], 0
            while offset < end:
                fetched = await client.fetch(topic, partition, offset, max_bytes=4 << 20)
                assert fetched.error_code == 0
                records += fetched.records
                offset = records[-1].offset + 1
            result[partition] = records
    return result


async def raw_fetch(client: SimpleClient, topic: str, offset: int, version: int, *, partition: int = 0,
                    max_bytes: int = 1 << 20):
    """One partition's answer to a sessionless consumer Fetch sent at exactly ``version`` to its leader."""
    from odradek.protocol.messages import FetchRequest
    conn = await client._leader_connection(topic, partition)
    request = FetchRequest(replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=max_bytes, isolation_level=0,
                           session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                               FetchRequest.FetchTopic.FetchPartition(partition=partition, fetch_offset=offset,
                                                                       partition_max_bytes=max_bytes)])])
    response = await conn.send(request, version=version)
    [topic_answer] = response.responses
    [answer] = topic_answer.partitions
    return answer


async def raw_produce(client: SimpleClient, topic: str, records: bytes, version: int, *, partition: int = 0,
                      acks: int = -1):
    """One partition's answer to a Produce of ``records`` (any bytes) sent at exactly ``version``."""
    from odradek.protocol.messages import ProduceRequest
    conn = await client._leader_connection(topic, partition)
    data = ProduceRequest.TopicProduceData
    request = ProduceRequest(transactional_id=None, acks=acks, timeout_ms=10_000, topic_data=[data(
        name=topic, partition_data=[data.PartitionProduceData(index=partition, records=records)])])
    response = await conn.send(request, version=version)
    [topic_answer] = response.responses
    [answer] = topic_answer.partition_responses
    return answer


async def send_from(host: str, port: int, body, version: int):
    """One request to the broker at 127.0.0.1:``port`` from the local address ``host`` (127.0.0.2 is
    another client address on loopback), over a raw connection; returns the response body."""
    from odradek.protocol.header import decode_response, encode_request
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(host, 0))
    try:
        writer.write(encode_request(body, version, 7, "forger"))
        size = int.from_bytes(await reader.readexactly(4), "big")
        return decode_response(await reader.readexactly(size), body.MESSAGE.api_key, version)[1]
    finally:
        writer.close()


def partition_dirs(broker, topic: str) -> list[str]:
    """A broker's live partition directories of ``topic``. One renamed ``...-delete`` is already deleted for
    the broker (Kafka's asynchronous delete: its files go file.delete.delay.ms later, 60 s by default)."""
    return [d.name for d in broker.log_dirs.glob(f"{topic}-*") if not d.name.endswith(DELETE_DIR_SUFFIX)]


def first_consumed(config: dict, topic: str, group: str, timeout: float = 60.0):
    """(error, value) of the first message or error a confluent-kafka consumer (``config``: librdkafka
    properties) gets from ``topic`` in ``group``; an authorization refusal arrives as such an error."""
    from confluent_kafka import Consumer
    consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None:
                return message.error(), message.value()
        raise AssertionError(f"nothing consumed from {topic} within {timeout} s")
    finally:
        consumer.close()


def delivery_errors(config: dict, topic: str) -> list:
    """The delivery error (None: delivered) of one record a confluent-kafka producer with ``config`` sends."""
    from confluent_kafka import Producer
    errors: list = []
    producer = Producer({"message.timeout.ms": 10000, **config})
    producer.produce(topic, value=b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    return errors


def console_tool(name: str, *args: str, stdin: str | None = None, check: bool = True,
                 timeout: float = 120) -> subprocess.CompletedProcess:
    """Run odradek-<name> as a user would (the module when the script is not on PATH). The script beside this
    interpreter comes first, so a venv's own install is used even when it is not on PATH."""
    script = shutil.which(f"odradek-{name}", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    module = name.replace("-", "_")
    command = [script] if script else [sys.executable, "-m", f"odradek.tools.{module}"]
    done = subprocess.run(command + list(args), input=stdin, capture_output=True, text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, f"exit {done.returncode}: {done.stdout}{done.stderr}"
    return done


class IdempotentProducerLoad:
    """confluent-kafka's acks=all idempotent producer writing numbered records ("record-%08d", record n to
    partition n % partitions, with key "key-<n % keys>" when ``keys`` is given) in a thread until the block
    ends; acknowledged values in ``acked``, delivery errors in ``failed``, fatal producer errors in ``fatal``;
    ``config`` adds librdkafka settings.
    RDKAFKA_DEBUG (e.g. "eos,msg") turns on librdkafka's debug log."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, timeout_s: float = 120,
                 config: dict | None = None, keys: int | None = None) -> None:
        from confluent_kafka import Producer
        debug = {"debug": os.environ["RDKAFKA_DEBUG"]} if os.environ.get("RDKAFKA_DEBUG") else {}
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                  "linger.ms": 5, "message.timeout.ms": int(timeout_s * 1000),
                                  "error_cb": self._error, **debug,
                                  **(config or {})})  # config: e.g. security.protocol, sasl.*
        self.topic, self.partitions, self.timeout_s, self.keys = topic, partitions, timeout_s, keys
        self.acked: set[bytes] = set()
        self.failed: list[str] = []
        self.fatal: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _error(self, error) -> None:
        if error.fatal():
            self.fatal.append(str(error))

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.acked.add(msg.value())
        else:
            self.failed.append(str(err))

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            try:
                key = None if self.keys is None else b"key-%d" % (n % self.keys)
                self.producer.produce(self.topic, value=b"record-%08d" % n, key=key, partition=n % self.partitions,
                                      on_delivery=self._delivered)
                n += 1
            except BufferError:  # local queue full: poll below serves deliveries, then try the same record
                pass
            self.producer.poll(0)
            if n % 50 == 0:
                time.sleep(0.01)
        self.producer.flush(self.timeout_s)

    def __enter__(self) -> "IdempotentProducerLoad":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(self.timeout_s + 30)
