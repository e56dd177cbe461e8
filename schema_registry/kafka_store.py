"""The `_schemas` topic: one compacted partition that every registry process reads to the end and applies to its
``RegistryState``, in order; the writer appends to it and waits until its own reader has applied what it wrote,
so the state it decides the next write on is never behind its own writes."""

from __future__ import annotations

import asyncio
import logging

from ..clients.simple_client import SimpleClient
from .records import NOOP, Record, noop_record
from .state import RegistryState

log = logging.getLogger(__name__)

TOPIC_CONFIGS = {"cleanup.policy": "compact"}
TOPIC_ALREADY_EXISTS = 36


class StoreError(Exception):
    pass


class KafkaStore:
    def __init__(self, client: SimpleClient, reader_client: SimpleClient, state: RegistryState,
                 topic: str = "_schemas", timeout: float = 30.0) -> None:
        self.client = client
        # The reader's long-polling fetches go on connections of their own: a broker serves one request per
        # connection at a time, so a write sharing them would wait behind a parked fetch.
        self.reader_client = reader_client
        self.state = state
        self.topic = topic
        self.timeout = timeout
        self.position = 0  # the next offset to apply
        self._key_bytes: dict[tuple, bytes] = {}  # Record.identity -> the key bytes the topic has for it
        self._advanced = asyncio.Condition()
        self._reader: asyncio.Task | None = None

    async def start(self) -> None:
        """Create the topic when missing (one partition, the brokers' default replication factor, compacted),
        start reading it and return once everything already in it is applied."""
        codes = await self.client.create_topics({self.topic: (1, -1)}, configs=TOPIC_CONFIGS)
        code = codes.get(self.topic, 0)
        if code not in (0, TOPIC_ALREADY_EXISTS):
            raise StoreError(f"cannot create {self.topic}: error {code}")
        await self.client.wait_for_leaders(self.topic, timeout=self.timeout)
        self._reader = asyncio.create_task(self._read_loop(), name="schemas-reader")
        await self.catch_up()

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)

    async def _read_loop(self) -> None:
        while True:
            try:
                fetched = await self.reader_client.fetch(self.topic, 0, self.position, max_wait_ms=500)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # leader moving, broker restarting: retry
                log.warning("reading %s: %s", self.topic, exc)
                await asyncio.sleep(0.5)
                continue
            if fetched.error_code:
                log.warning("reading %s: error %d", self.topic, fetched.error_code)
                await asyncio.sleep(0.5)
                continue
            if not fetched.records:
                continue
            for raw in fetched.records:
                record = Record.decode(raw.key, raw.value)
                if record is not None and record.keytype != NOOP:
                    self.state.apply(record)
                    self._key_bytes.setdefault(record.identity, raw.key)
            async with self._advanced:
                self.position = fetched.records[-1].offset + 1
                self._advanced.notify_all()

    async def wait_for(self, offset: int) -> None:
        """Return once the record at ``offset`` is applied."""
        async with self._advanced:
            async with asyncio.timeout(self.timeout):  # not wait_for: DESIGN.md, "Deadlines"
                await self._advanced.wait_for(lambda: self.position > offset)

    async def catch_up(self) -> None:
        """Apply everything written before this call (the partition's end offset now)."""
        end, _ = await self.client.list_offsets(self.topic, 0, -1)
        if end > 0:
            await self.wait_for(end - 1)

    async def append(self, records: list[Record]) -> None:
        """Write the records (all-replica acks) and return once this process has applied them."""
        encoded = []
        for record in records:
            key, value = record.encode()
            encoded.append((self._key_bytes.get(record.identity, key), value))
        result = await self.client.produce(self.topic, 0, encoded, acks=-1)
        if result.error_code or result.base_offset < 0:
            raise StoreError(f"writing to {self.topic}: error {result.error_code}")
        await self.wait_for(result.base_offset + len(records) - 1)

    async def append_noop(self) -> None:
        """A new writer's first write: once it is applied, every write of earlier writers is too."""
        await self.append([noop_record()])
