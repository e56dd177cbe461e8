"""ProducerIdManager: hands out producer ids from blocks claimed in ZooKeeper (Kafka 2.8's).

Each broker claims a block of 1000 ids at ``/latest_producer_id_block`` with a versioned write, so
ids are unique across the cluster and across restarts without asking ZooKeeper for every id.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..controller.zk_client import KafkaZkClient


class ProducerIdManager:
    def __init__(self, broker_id: int, zk: KafkaZkClient) -> None:
        self.broker_id = broker_id
        self.zk = zk
        self._next = 0
        self._end = -1  # inclusive end of the current block; -1 = no block yet
        self._lock = asyncio.Lock()

    async def generate_producer_id(self) -> int:
        async with self._lock:
            if self._next > self._end:
                loop = asyncio.get_running_loop()
                block = await loop.run_in_executor(None, self.zk.allocate_producer_id_block, self.broker_id)
                self._next, self._end = block.block_start, block.block_end
            producer_id = self._next
            self._next += 1
            return producer_id
