"""The workload: producers writing unique values and a read_committed consumer, each in a thread of its own,
recording into a History (Jepsen's queue workload, with assign instead of subscribe).

- ``ck``: confluent-kafka, idempotent, acks=all;
- ``od``: our ``Producer`` (odradek.clients), idempotent, acks=all;
- ``tx``: confluent-kafka transactional: transactions of 2-3 values over distinct partitions, about one
  in four aborted on purpose;
- a confluent-kafka read_committed consumer assigned every partition from the start, polling throughout.

Client timeouts are short (5 s requests) so a silent black hole is noticed within a fault, and delivery
timeouts long (60 s) so most sends end acknowledged once the cluster heals.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException
from confluent_kafka import Producer as CkProducer
from confluent_kafka import TopicPartition

from odradek.clients import Producer as OurProducer

from .history import ABORTED, COMMITTED, UNKNOWN, History, Read, Txn

log = logging.getLogger(__name__)
# librdkafka's own log (every refused connection while a broker is down) goes to a logger, not stderr: kept
# by pytest with the test's logs, silent in the soak
logging.getLogger("jepsen.librdkafka").addHandler(logging.NullHandler())
CK_COMMON = {"socket.timeout.ms": 5000, "retry.backoff.ms": 100,
               "topic.metadata.refresh.interval.ms": 3000, "socket.connection.setup.timeout.ms": 5000,
               "reconnect.backoff.max.ms": 1000, "logger": logging.getLogger("jepsen.librdkafka")}
CK_TIMEOUTS = {**CK_COMMON, "request.timeout.ms": 5000}


class Worker:
    """A thread that calls ``step()`` ``rate`` times a second until stopped, then ``finish()``."""
    name = "worker"

    def __init__(self, history: History, rate: float) -> None:
        self.history = history
        self.interval = 1.0 / rate
        self.stopping = threading.Event()
        self.crash: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"jepsen-{self.name}")

    def start(self) -> "Worker":
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self.setup()
            next_at = time.monotonic()
            while not self.stopping.is_set():
                self.step()
                next_at = max(next_at + self.interval, time.monotonic() - 1.0)  # no burst after a stall
                self.stopping.wait(max(0.0, next_at - time.monotonic()))
        except BaseException as e:  # reported by the scenario: a crashed worker makes the run invalid
            self.crash = e
            log.exception("%s crashed", self.name)
        finally:
            try:
                self.finish()
            except Exception as e:
                self.history.note(f"{self.name}: closing failed: {e!r}")

    def stop(self, timeout: float = 90.0) -> None:
        self.stopping.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.history.note(f"{self.name} did not stop within {timeout:g} s")

    def setup(self) -> None:
        pass

    def step(self) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        pass


def close_ck_producer(producer: CkProducer, timeout: float, history: History, who: str) -> None:
    """Flush and close (its threads would go on reconnecting after the lab is gone); a producer in a fatal state
    raises its error from both."""
    for step in (lambda: producer.flush(timeout), producer.close):
        try:
            step()
        except KafkaException as e:
            history.note(f"{who}: closing: {e.args[0]}")


class ProducerWorker(Worker):
    """Value n goes to partition n % partitions, so each partition gets this producer's values in order."""

    def __init__(self, history: History, rate: float, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(history, rate)
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.n = 0

    def step(self) -> None:
        value = f"{self.name}-{self.n}".encode()
        partition = self.n % self.partitions
        self.history.invoke(self.name, value, partition, self.n)
        self.n += 1
        self.send(value, partition)

    def send(self, value: bytes, partition: int) -> None:
        raise NotImplementedError


class CkIdempotentProducer(ProducerWorker):
    name = "ck"

    def setup(self) -> None:
        self.fatal: KafkaError | None = None
        self.producer = self._make()

    def _make(self) -> CkProducer:
        return CkProducer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all",
                           "linger.ms": 5, "message.timeout.ms": 60000, "error_cb": self._error, **CK_TIMEOUTS})

    def _error(self, err: KafkaError) -> None:
        if err.fatal():
            self.fatal = err

    def _delivered(self, err: KafkaError | None, msg) -> None:
        self.history.complete(msg.value(), err is None, msg.offset() if err is None else None,
                              None if err is None else str(err))

    def send(self, value: bytes, partition: int) -> None:
        while True:
            try:
                self.producer.produce(self.topic, value, partition=partition, on_delivery=self._delivered)
                break
            except BufferError:
                self.producer.poll(0.1)
        self.producer.poll(0)
        if self.fatal is not None:  # e.g. a gap it cannot resolve: the producer is dead, start another
            self.history.note(f"ck: fatal error {self.fatal}; new producer")
            close_ck_producer(self.producer, 5, self.history, "ck")
            self.history.pending_to_info(f"ck producer died: {self.fatal}")
            self.fatal = None
            self.producer = self._make()

    def finish(self) -> None:
        if hasattr(self, "producer"):
            close_ck_producer(self.producer, 75, self.history, "ck")
            self.history.pending_to_info("ck: not answered by the end")


class OurIdempotentProducer(ProducerWorker):
    name = "od"

    def setup(self) -> None:
        self.producer = OurProducer(bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=True,
                                    linger_ms=5, request_timeout_ms=5000, delivery_timeout_ms=60000,
                                    retry_backoff_ms=100, max_block_ms=60000)

    def send(self, value: bytes, partition: int) -> None:
        complete = self.history.complete
        try:
            future = self.producer.send(self.topic, value=value, partition=partition)
        except Exception as e:
            complete(value, False, error=repr(e))
            return
        future.add_callback(lambda md, v=value: complete(v, True, md.offset))
        future.add_errback(lambda e, v=value: complete(v, False, error=repr(e)))

    def finish(self) -> None:
        if hasattr(self, "producer"):
            try:
                self.producer.flush(75)
            finally:
                self.producer.close(5)
                self.history.pending_to_info("od: not answered by the end")


class TransactionalProducer(Worker):
    """One transaction per step: 2-3 values on distinct partitions, committed or (about 1 in 4) aborted."""
    name = "tx"

    def __init__(self, history: History, rate: float, bootstrap: str, topic: str, partitions: int,
                 transactional_id: str, rng: random.Random) -> None:
        super().__init__(history, rate)
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.transactional_id, self.rng = transactional_id, rng
        self.number = 0
        self.seq = 0

    def setup(self) -> None:
        self.producer = self._make()

    def _make(self) -> CkProducer:
        producer = CkProducer({"bootstrap.servers": self.bootstrap, "transactional.id": self.transactional_id,
                               "transaction.timeout.ms": 30000, "message.timeout.ms": 30000, "linger.ms": 5,
                               **CK_TIMEOUTS})
        self._retry(lambda: producer.init_transactions(10), "init_transactions", deadline=time.monotonic() + 120)
        return producer

    def _retry(self, call: Callable[[], None], what: str, deadline: float) -> None:
        while True:
            try:
                call()
                return
            except KafkaException as e:
                err = e.args[0]
                if not err.retriable() or time.monotonic() > deadline:
                    raise
                self.history.note(f"tx: {what} retried after {err}")

    def _delivered(self, err: KafkaError | None, msg) -> None:
        self.history.complete(msg.value(), err is None, msg.offset() if err is None else None,
                              None if err is None else str(err))

    def step(self) -> None:
        number, self.number = self.number, self.number + 1
        width = self.rng.randint(2, min(3, self.partitions))
        partitions = self.rng.sample(range(self.partitions), width)
        intent = COMMITTED if self.rng.random() < 0.75 else ABORTED
        values = [f"tx-{number}-{i}".encode() for i in range(width)]
        txn = Txn(number, values, intent, time.time())
        with self.history.lock:
            self.history.txns[number] = txn
        try:
            self.producer.begin_transaction()
            for value, partition in zip(values, partitions):
                self.history.invoke("tx", value, partition, self.seq, txn=number)
                self.seq += 1
                self.producer.produce(self.topic, value, partition=partition, on_delivery=self._delivered)
            self.producer.poll(0)
            txn.outcome = self._finish(intent)
        except KafkaException as e:
            txn.error = str(e.args[0])
            txn.outcome = self._recover(intent, e.args[0])
        txn.completed = time.time()

    def _finish(self, intent: str) -> str:
        deadline = time.monotonic() + 60
        if intent == ABORTED:
            self._retry(lambda: self.producer.abort_transaction(10), "abort", deadline)
            return ABORTED
        self._retry(lambda: self.producer.commit_transaction(10), "commit", deadline)
        return COMMITTED

    def _recover(self, intent: str, err: KafkaError) -> str:
        """After a failed commit or abort: abort if the client allows it, else a new producer (which fences
        the old one). A transaction we never asked to commit cannot have been committed."""
        if err.txn_requires_abort():
            try:
                self._retry(lambda: self.producer.abort_transaction(10), "abort", time.monotonic() + 60)
                return ABORTED
            except KafkaException as e:
                err = e.args[0]
        self.history.note(f"tx: {err}; new transactional producer")
        close_ck_producer(self.producer, 1, self.history, "tx")
        self.producer = self._make()
        return ABORTED if intent == ABORTED else UNKNOWN

    def finish(self) -> None:
        if hasattr(self, "producer"):
            close_ck_producer(self.producer, 10, self.history, "tx")
            self.history.pending_to_info("tx: not answered by the end")


class ReadCommittedConsumer(Worker):
    """Polls every partition from the start with isolation.level=read_committed, recording each record read."""
    name = "reader"

    def __init__(self, history: History, bootstrap: str, topic: str, partitions: int, group: str) -> None:
        super().__init__(history, rate=50)
        self.bootstrap, self.topic, self.partitions, self.group = bootstrap, topic, partitions, group

    def setup(self) -> None:
        self.consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                                  "isolation.level": "read_committed", "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest", "fetch.wait.max.ms": 200, **CK_COMMON})
        self.consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)])

    def step(self) -> None:
        for msg in self.consumer.consume(500, 0.05):
            if msg.error():
                if msg.error().code() != KafkaError._PARTITION_EOF:
                    self.history.note(f"reader: {msg.error()}")
                continue
            read = Read(msg.partition(), msg.offset(), msg.value(), time.time())
            with self.history.lock:
                self.history.reads.append(read)

    def finish(self) -> None:
        if hasattr(self, "consumer"):
            self.consumer.close()


def read_committed_to_end(bootstrap: str, topic: str, partitions: int, group: str,
                          timeout: float = 60.0) -> dict[int, list[tuple[int, bytes]]]:
    """A fresh read_committed consumer's view of every partition, from the start to the end (its
    partition-EOF events); run once nothing writes any more."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed",
                         "enable.auto.commit": False, "enable.partition.eof": True, **CK_COMMON})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    found: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                raise AssertionError(f"the final read_committed read did not reach the end of partitions "
                                     f"{sorted(set(range(partitions)) - at_end)} within {timeout:g} s")
            for msg in consumer.consume(1000, 0.5):
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        at_end.add(msg.partition())
                    continue
                at_end.discard(msg.partition())
                found[msg.partition()].append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    return found
