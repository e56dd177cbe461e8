"""FetchDownConverter: which Fetch versions convert, and message.downconversion.enable (topic over broker)."""

from __future__ import annotations

from types import SimpleNamespace

from odradek.broker.apis.fetch_down_conversion import FetchDownConverter, target_magic
from odradek.protocol.messages import FetchRequest, FetchResponse
from odradek.protocol.records import RecordBatchBuilder
from odradek.protocol.records.legacy_records import iter_messages

_Topic = FetchResponse.FetchableTopicResponse


def stored() -> bytes:
    builder = RecordBatchBuilder()
    builder.append(1000, b"k", b"v")
    return builder.build()


def request(replica_id: int = -1) -> FetchRequest:
    part = FetchRequest.FetchTopic.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    return FetchRequest(replica_id=replica_id, topics=[FetchRequest.FetchTopic(topic="t", partitions=[part])])


def response(error_code: int = 0) -> FetchResponse:
    data = _Topic.PartitionData(partition_index=0, error_code=error_code, high_watermark=1, last_stable_offset=1,
                                log_start_offset=0, records=stored() if not error_code else b"")
    return FetchResponse(responses=[_Topic(topic="t", partitions=[data])])


def converter(broker: str | None = None, topic: str | None = None) -> FetchDownConverter:
    defaults = {} if broker is None else {"message.downconversion.enable": broker}
    overrides = {} if topic is None else {"t": {"message.downconversion.enable": topic}}
    return FetchDownConverter(SimpleNamespace(topic_defaults=defaults, topic_configs=overrides))


def test_versions_and_their_formats():
    assert [target_magic(v) for v in range(6)] == [0, 0, 1, 1, None, None]


def test_fetch_v0_to_v3_get_legacy_messages_and_v4_the_batches():
    for version, magic in ((0, 0), (1, 0), (2, 1), (3, 1)):
        answer = response()
        converter().convert(answer, version, request())
        [message] = iter_messages(bytes(answer.responses[0].partitions[0].records))
        assert (message.magic, message.offset, message.value) == (magic, 0, b"v")
    answer = response()
    converter().convert(answer, 4, request())
    assert bytes(answer.responses[0].partitions[0].records) == stored()


def test_disabled_down_conversion_is_unsupported_version_for_consumers_only():
    for conv in (converter(broker="false"), converter(broker="true", topic="false")):
        answer = response()
        conv.convert(answer, 3, request())
        data = answer.responses[0].partitions[0]
        assert (data.error_code, data.high_watermark, data.log_start_offset, data.records) == (35, -1, -1, b"")
        follower = response()
        conv.convert(follower, 3, request(replica_id=1))
        assert follower.responses[0].partitions[0].error_code == 0
    answer = response()
    converter(broker="false", topic="true").convert(answer, 3, request())
    assert answer.responses[0].partitions[0].error_code == 0


def test_partitions_with_errors_or_no_records_are_left_alone():
    answer = response(error_code=6)
    converter(broker="false").convert(answer, 1, request())
    assert answer.responses[0].partitions[0].error_code == 6


def test_conversion_runs_off_the_event_loop_only_when_there_is_work():
    import asyncio
    import threading
    assert not FetchDownConverter.has_work(response(), 4)
    assert not FetchDownConverter.has_work(response(error_code=6), 3)
    assert FetchDownConverter.has_work(response(), 3)
    threads = []
    conv = converter()
    original = conv.convert
    conv.convert = lambda *args: (threads.append(threading.current_thread()), original(*args))  # type: ignore

    async def go():
        return await conv.convert_off_loop(response(), 2, request())
    answer = asyncio.run(go())
    assert threads and threads[0] is not threading.main_thread()
    [message] = iter_messages(bytes(answer.responses[0].partitions[0].records))
    assert message.magic == 1
