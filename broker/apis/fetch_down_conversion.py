"""Down-conversion of fetched records for Fetch v0-3, as Kafka 2.8's KafkaApis.maybeConvertFetchedData.

The log stores v2 batches only (``log.message.format.version`` >= 0.11, Kafka 2.8's default), so a
fetch below v4 always gets converted records: v0-1 read magic 0, v2-3 magic 1
(``protocol/records/legacy_conversion.down_convert_fetched``: control batches and headers dropped,
records before the fetch offset dropped from uncompressed batches, the codec kept, Kafka's sizing of the
partition's data with a partial message or overflow bytes at its end). v0-3 have no isolation level, so
aborted transactions' records are delivered as read_uncommitted consumers see them.

With ``message.downconversion.enable=false`` on the topic (or ``log.message.downconversion.enable`` on
the broker) a consumer's partition gets UNSUPPORTED_VERSION instead; followers are always served. A zstd
batch cannot be converted: UNSUPPORTED_COMPRESSION_TYPE (``fetch.py`` already cut the records before
the first one). Kafka's partition error responses carry -1 for the high watermark, last stable offset
and log start offset.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ...protocol.errors import UnsupportedCompressionTypeError, UnsupportedVersionError  # type: ignore[attr-defined]
from ...protocol.records.errors import UnsupportedCodecError
from ...protocol.records.legacy_conversion import down_convert_fetched

if TYPE_CHECKING:
    from ..log import LogManager

MAX_MAGIC_0_FETCH_VERSION = 1
MAX_DOWN_CONVERSION_FETCH_VERSION = 3  # v4 (KIP-98) reads magic 2


def target_magic(version: int) -> int | None:
    """The message format a Fetch version can read, when it is below v2's; None from v4 on."""
    if version <= MAX_MAGIC_0_FETCH_VERSION:
        return 0
    if version <= MAX_DOWN_CONVERSION_FETCH_VERSION:
        return 1
    return None


def _enabled(value: Any) -> bool:
    return str(value).strip().lower() != "false"


class FetchDownConverter:
    def __init__(self, log_manager: LogManager) -> None:
        self.log_manager = log_manager

    def down_conversion_enabled(self, topic: str) -> bool:
        """The topic's message.downconversion.enable, else the broker's log.message.downconversion.enable."""
        value = self.log_manager.topic_configs.get(topic, {}).get("message.downconversion.enable")
        if value is None or value == "":
            value = self.log_manager.topic_defaults.get("message.downconversion.enable", "true")
        return _enabled(value)

    @staticmethod
    def has_work(response: Any, version: int) -> bool:
        """True when ``convert`` would touch some partition of ``response``."""
        return target_magic(version) is not None and any(
            not data.error_code and data.records for topic in response.responses for data in topic.partitions)

    async def convert_off_loop(self, response: Any, version: int, request: Any) -> Any:
        """``convert`` in an executor thread, so a big conversion (about 70 ms per MiB of uncompressed
        batches, up to a second for a MiB of compressed small records) does not stall the event loop."""
        await asyncio.get_running_loop().run_in_executor(None, self.convert, response, version, request)
        return response

    def convert(self, response: Any, version: int, request: Any) -> None:
        """Rewrite ``response``'s partitions in place for a Fetch ``version`` below 4."""
        magic = target_magic(version)
        if magic is None:
            return
        offsets = {(t.topic, p.partition): p.fetch_offset for t in request.topics for p in t.partitions}
        from_follower = request.replica_id >= 0
        for topic in response.responses:
            enabled = None
            for data in topic.partitions:
                if data.error_code or not data.records:
                    continue  # nothing to convert (Kafka's hasCompatibleMagic is true for no batches)
                if enabled is None:
                    enabled = from_follower or self.down_conversion_enabled(topic.topic)
                if not enabled:
                    _fail(data, UnsupportedVersionError.code)
                    continue
                try:
                    data.records = down_convert_fetched(data.records, magic,
                                                        offsets[(topic.topic, data.partition_index)])
                except UnsupportedCodecError:
                    _fail(data, UnsupportedCompressionTypeError.code)


def _fail(data: Any, code: int) -> None:
    """Kafka's errorResponse for one partition."""
    data.error_code = code
    data.high_watermark = data.last_stable_offset = data.log_start_offset = -1
    data.aborted_transactions = None
    data.records = b""
