"""The controller's per-broker sender: requests queued together are written before the first is answered, their
callbacks run in order, and a connection failure sends the unanswered ones again, in order, on a new connection.
The connection is a scripted stand-in (the real-socket test is tests/integration/test_controller.py)."""

import asyncio
import gc
import logging

from odradek.controller.channel_manager import ControllerChannelManager
from odradek.controller.zk_data import BrokerInfo
from odradek.protocol.api_keys import ApiKey
from tests.fakes.polling import until


class ScriptedConnection:
    """Records what is written; ``script(body)`` says how each request ends: an awaitable's result, or raise."""

    def __init__(self, number: int, script, on_close=None) -> None:
        self.number, self.script, self.on_close = number, script, on_close
        self.written: list[str] = []
        self.closed = False

    def version_for(self, api_key: int) -> int:
        return 7

    async def send(self, body, *, version=None, timeout=None):
        self.written.append(body)
        return await self.script(self.number, body)

    async def close(self) -> None:
        self.closed = True
        if self.on_close is not None:
            self.on_close()


class Harness:
    def __init__(self, script, on_close=None) -> None:
        self.on_close = on_close
        self.connections: list[ScriptedConnection] = []
        self.answers: list[str] = []
        self.script = script

    async def connect(self, host, port, client_id=None, timeout=None):
        conn = ScriptedConnection(len(self.connections), self.script, self.on_close)
        self.connections.append(conn)
        return conn

    def channel(self) -> ControllerChannelManager:
        channel = ControllerChannelManager(0, "PLAINTEXT", backoff_ms=1, max_backoff_ms=1, connect=self.connect)
        channel.add_broker(BrokerInfo(7, [("PLAINTEXT", "127.0.0.1", 9092)]))
        return channel

    def queue(self, channel: ControllerChannelManager, *names: str) -> None:
        for name in names:
            channel.send(7, ApiKey.UPDATE_METADATA, lambda version, name=name: f"{name}@v{version}",
                         lambda broker, key, response: self.answers.append(response))


def test_requests_queued_together_are_written_before_the_first_is_answered_and_answered_in_order():
    async def main():
        first_answer = asyncio.Event()

        async def script(connection, body):
            if body.startswith("a"):
                await first_answer.wait()
            return f"answer to {body}"

        harness = Harness(script)
        channel = harness.channel()
        harness.queue(channel, "a", "b", "c")
        await until(lambda: harness.connections and len(harness.connections[0].written) == 3, "three writes")
        assert harness.connections[0].written == ["a@v7", "b@v7", "c@v7"]
        assert harness.answers == []  # b and c are answered, but their callbacks wait for a's
        first_answer.set()
        await until(lambda: len(harness.answers) == 3, "three answers")
        assert harness.answers == ["answer to a@v7", "answer to b@v7", "answer to c@v7"]
        await channel.shutdown()

    asyncio.run(main())


def test_a_failed_connection_sends_the_unanswered_requests_again_in_order():
    async def main():
        async def script(connection, body):
            if connection == 0 and body.startswith("b"):
                raise ConnectionError("connection reset")
            if connection == 0 and body.startswith("c"):
                await asyncio.Event().wait()  # its answer never comes on the broken connection
            return f"answer to {body} on {connection}"

        harness = Harness(script)
        channel = harness.channel()
        harness.queue(channel, "a", "b", "c")
        await until(lambda: len(harness.answers) == 3, "three answers")
        assert harness.answers == ["answer to a@v7 on 0", "answer to b@v7 on 1", "answer to c@v7 on 1"]
        assert harness.connections[0].closed
        assert harness.connections[1].written == ["b@v7", "c@v7"]  # a, answered, is not sent again
        await channel.shutdown()

    asyncio.run(main())


def test_a_request_that_cannot_be_built_is_dropped_alone():
    async def main():
        async def script(connection, body):
            return f"answer to {body}"

        harness = Harness(script)
        channel = harness.channel()
        harness.queue(channel, "a")
        channel.send(7, ApiKey.UPDATE_METADATA, lambda version: 1 / 0,
                     lambda broker, key, response: harness.answers.append(response))
        harness.queue(channel, "c")
        await until(lambda: len(harness.answers) == 2, "two answers")
        await asyncio.sleep(0.05)
        assert harness.answers == ["answer to a@v7", "answer to c@v7"]
        assert [c.written for c in harness.connections] == [["a@v7", "c@v7"]]
        await channel.shutdown()

    asyncio.run(main())


def test_the_other_bodies_of_a_request_dropped_for_an_undecodable_answer_are_awaited():
    """StopReplica below v3 is one body per partition, all written before the first answer. When one answer
    cannot be decoded the request is dropped; the failures of its later bodies are taken, not left for
    asyncio to report as never retrieved, and the next request is still answered."""
    async def main():
        loop = asyncio.get_running_loop()
        unretrieved: list[str] = []
        loop.set_exception_handler(lambda loop, context: unretrieved.append(context["message"]))

        async def script(connection, body):
            if body == "s1":
                raise ValueError("an answer that cannot be decoded")
            if body == "s2":
                raise RuntimeError("the second body's answer fails too")
            return f"answer to {body}"

        harness = Harness(script)
        channel = harness.channel()
        channel.send(7, ApiKey.STOP_REPLICA, lambda version: ["s1", "s2"],
                     lambda broker, key, response: harness.answers.append(response))
        harness.queue(channel, "next")
        await until(lambda: harness.answers == ["answer to next@v7"], "the next request's answer")
        await channel.shutdown()
        gc.collect()
        await asyncio.sleep(0)
        assert [c.written for c in harness.connections] == [["s1", "s2", "next@v7"]]
        assert not [m for m in unretrieved if "never retrieved" in m]

    # the dropped request's logged traceback would keep the sends alive in pytest's log capture
    channel_log = logging.getLogger("odradek.controller.channel_manager")
    channel_log.propagate = False
    try:
        asyncio.run(main())
    finally:
        channel_log.propagate = True


def test_a_sender_cancelled_as_its_failed_connection_finishes_closing_stops():
    """Python 3.11's asyncio.wait_for returns the inner result when a cancellation meets an inner already done,
    swallowing it: a sender cancelled right as the close of a failed connection finished went on retrying, and
    the controller's shutdown waited for it (two controller tests hung 120 s in CI)."""
    async def main():
        async def script(connection, body):
            raise ConnectionError("connection reset")

        loop = asyncio.get_running_loop()
        # the cancel is queued before the callbacks that would wake the one closing: they meet
        harness = Harness(script, on_close=lambda: loop.call_soon(sender.task.cancel))
        channel = harness.channel()
        sender = channel._senders[7]
        harness.queue(channel, "a")
        done, _ = await asyncio.wait([sender.task], timeout=5)
        assert sender.task in done and sender.task.cancelled()

    asyncio.run(main())
