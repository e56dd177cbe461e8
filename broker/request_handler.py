"""KafkaRequestHandlerPool: ``num.io.threads`` tasks taking requests off the channel.

Each task runs ``receive -> KafkaApis.handle -> send_response``. A handler that awaits (a delayed
produce, a long fetch) holds only its own task; with every task waiting, the channel fills and the
processors stop reading, which is the backpressure Kafka gets from its handler threads.
"""

from __future__ import annotations

import asyncio
import logging

from .kafka_apis import KafkaApis
from .network.request_channel import RequestChannel, Response

log = logging.getLogger(__name__)


class KafkaRequestHandlerPool:
    def __init__(self, channel: RequestChannel, apis: KafkaApis, num_threads: int) -> None:
        self.channel = channel
        self.apis = apis
        self.num_threads = num_threads
        self.tasks: list[asyncio.Task] = []
        self.busy = 0  # handlers between receive and send_response (for draining on shutdown)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.tasks = [loop.create_task(self._run(), name=f"kafka-request-handler-{i}")
                      for i in range(self.num_threads)]

    async def _run(self) -> None:
        receive = self.channel.receive_request
        handle = self.apis.handle
        send = self.channel.send_response
        while True:
            request = await receive()
            self.busy += 1
            try:
                try:
                    response = await handle(request)
                except asyncio.CancelledError:
                    raise
                except Exception:  # handle() has its own error path; this is a bug guard
                    log.exception("KafkaApis.handle failed on %r", request)
                    response = Response.close(request, "internal error")
                send(response)
            finally:
                self.busy -= 1

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.tasks = []
