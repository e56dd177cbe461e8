"""A consumer-group member in a process of its own, so a test can SIGKILL it:
``python group_member.py CLIENT BOOTSTRAP GROUP TOPIC CLIENT_ID SESSION_MS REBALANCE_MS`` with CLIENT one of
``CLIENTS``. It polls until its stdin closes, then closes the consumer (which leaves the group), printing
``assigned <p,p,...>`` each time its assignment changes and ``closed`` at the end."""

from __future__ import annotations

import asyncio
import sys
import threading


def _odradek(bootstrap, group, topic, client_id, session_ms, rebalance_ms):
    from odradek.clients import Consumer

    consumer = Consumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id=client_id,
                        session_timeout_ms=session_ms, heartbeat_interval_ms=1000, max_poll_interval_ms=rebalance_ms)
    return (lambda: consumer.poll(timeout_ms=100), lambda: {tp.partition for tp in consumer.assignment()},
            consumer.close)


def _confluent(bootstrap, group, topic, client_id, session_ms, rebalance_ms):
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                                         "session.timeout.ms": session_ms, "max.poll.interval.ms": rebalance_ms,
                                         "heartbeat.interval.ms": 1000})
    consumer.subscribe([topic])
    return (lambda: consumer.poll(0.1), lambda: {tp.partition for tp in consumer.assignment()}, consumer.close)


def _kafka_python(bootstrap, group, topic, client_id, session_ms, rebalance_ms):
    import logging

    from helpers import kafka_python_group_consumer  # this script's folder is first on sys.path

    # its group coordinator's INFO lines go to stderr, which the test shows when it fails
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    logging.getLogger("kafka.coordinator").setLevel(logging.INFO)

    consumer = kafka_python_group_consumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id=client_id,
                                           session_timeout_ms=session_ms, heartbeat_interval_ms=1000,
                                           max_poll_interval_ms=rebalance_ms)
    return (lambda: consumer.poll(100), lambda: {tp.partition for tp in consumer.assignment()}, consumer.close)


def _aiokafka(bootstrap, group, topic, client_id, session_ms, rebalance_ms):
    import aiokafka

    loop = asyncio.new_event_loop()

    async def start():
        consumer = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id=client_id,
                                             session_timeout_ms=session_ms, heartbeat_interval_ms=1000,
                                             max_poll_interval_ms=rebalance_ms)
        await consumer.start()
        return consumer

    consumer = loop.run_until_complete(start())
    return (lambda: loop.run_until_complete(consumer.getmany(timeout_ms=100)),
            lambda: {tp.partition for tp in consumer.assignment()},
            lambda: loop.run_until_complete(consumer.stop()))


CLIENTS = {"odradek": _odradek, "confluent": _confluent, "kafka-python": _kafka_python, "aiokafka": _aiokafka}


def main(argv: list[str]) -> None:
    client, bootstrap, group, topic, client_id, session_ms, rebalance_ms = argv
    poll, assignment, close = CLIENTS[client](bootstrap, group, topic, client_id, int(session_ms), int(rebalance_ms))
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    shown = None
    while not stop.is_set():
        poll()
        assigned = assignment()
        if assigned != shown:
            shown = assigned
            print("assigned " + ",".join(map(str, sorted(assigned))), flush=True)
    close()
    print("closed", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
