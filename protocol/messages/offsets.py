"""Committed offsets: OffsetCommit (8), OffsetFetch (9), OffsetDelete (47).

Kafka 2.8's message layouts, every version, in the form of ``protocol.schema``.
"""

from ..schema import Field as F, Message


OFFSET_COMMIT_REQUEST = Message(
    'OffsetCommitRequest', api_key=8, kind='request', valid="0-8", flexible='8+', fields=[
    F('group_id', 'string', '0+'),
    F('generation_id_or_member_epoch', 'int32', '1+', default=-1, ignorable=True),
    F('member_id', 'string', '1+', ignorable=True),
    F('group_instance_id', 'string', '7+', nullable='7+', default=None),
    F('retention_time_ms', 'int64', '2-4', default=-1, ignorable=True),
    F('topics', '[]OffsetCommitRequestTopic', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]OffsetCommitRequestPartition', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('committed_offset', 'int64', '0+'),
            F('committed_leader_epoch', 'int32', '6+', default=-1, ignorable=True),
            F('commit_timestamp', 'int64', '1', default=-1),
            F('committed_metadata', 'string', '0+', nullable='0+'),
        ]),
    ]),
])


OFFSET_COMMIT_RESPONSE = Message(
    'OffsetCommitResponse', api_key=8, kind='response', valid="0-8", flexible='8+', fields=[
    F('throttle_time_ms', 'int32', '3+', ignorable=True),
    F('topics', '[]OffsetCommitResponseTopic', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]OffsetCommitResponsePartition', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('error_code', 'int16', '0+'),
        ]),
    ]),
])


OFFSET_FETCH_REQUEST = Message(
    'OffsetFetchRequest', api_key=9, kind='request', valid="0-7", flexible='6+', fields=[
    F('group_id', 'string', '0+'),
    F('topics', '[]OffsetFetchRequestTopic', '0+', nullable='2+', fields=[
        F('name', 'string', '0+'),
        F('partition_indexes', '[]int32', '0+'),
    ]),
    F('require_stable', 'bool', '7+', default=False),
])


OFFSET_FETCH_RESPONSE = Message(
    'OffsetFetchResponse', api_key=9, kind='response', valid="0-7", flexible='6+', fields=[
    F('throttle_time_ms', 'int32', '3+', ignorable=True),
    F('topics', '[]OffsetFetchResponseTopic', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]OffsetFetchResponsePartition', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('committed_offset', 'int64', '0+'),
            F('committed_leader_epoch', 'int32', '5+', default=-1, ignorable=True),
            F('metadata', 'string', '0+', nullable='0+'),
            F('error_code', 'int16', '0+'),
        ]),
    ]),
    F('error_code', 'int16', '2+', default=0, ignorable=True),
])


OFFSET_DELETE_REQUEST = Message(
    'OffsetDeleteRequest', api_key=47, kind='request', valid="0-0", fields=[
    F('group_id', 'string', '0+'),
    F('topics', '[]OffsetDeleteRequestTopic', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]OffsetDeleteRequestPartition', '0+', fields=[
            F('partition_index', 'int32', '0+'),
        ]),
    ]),
])


OFFSET_DELETE_RESPONSE = Message(
    'OffsetDeleteResponse', api_key=47, kind='response', valid="0-0", fields=[
    F('error_code', 'int16', '0+'),
    F('throttle_time_ms', 'int32', '0+', ignorable=True),
    F('topics', '[]OffsetDeleteResponseTopic', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]OffsetDeleteResponsePartition', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('error_code', 'int16', '0+'),
        ]),
    ]),
])
