"""Reading partitions: Fetch (1), ListOffsets (2), OffsetForLeaderEpoch (23).

Kafka 2.8's message layouts, every version, in the form of ``protocol.schema``.
"""

from ..schema import Field as F, Message


FETCH_REQUEST = Message(
    'FetchRequest', api_key=1, kind='request', valid="0-12", flexible='12+', fields=[
    F('cluster_id', 'string', '12+', nullable='12+', tag=0, tagged='12+', default=None, ignorable=True),
    F('replica_id', 'int32', '0+', default=-1),
    F('max_wait_ms', 'int32', '0+'),
    F('min_bytes', 'int32', '0+'),
    F('max_bytes', 'int32', '3+', default=2147483647, ignorable=True),
    F('isolation_level', 'int8', '4+', default=0, ignorable=True),
    F('session_id', 'int32', '7+', default=0, ignorable=True),
    F('session_epoch', 'int32', '7+', default=-1, ignorable=True),
    F('topics', '[]FetchTopic', '0+', fields=[
        F('topic', 'string', '0+'),
        F('partitions', '[]FetchPartition', '0+', fields=[
            F('partition', 'int32', '0+'),
            F('current_leader_epoch', 'int32', '9+', default=-1, ignorable=True),
            F('fetch_offset', 'int64', '0+'),
            F('last_fetched_epoch', 'int32', '12+', default=-1),
            F('log_start_offset', 'int64', '5+', default=-1, ignorable=True),
            F('partition_max_bytes', 'int32', '0+'),
        ]),
    ]),
    F('forgotten_topics_data', '[]ForgottenTopic', '7+', fields=[
        F('topic', 'string', '7+'),
        F('partitions', '[]int32', '7+'),
    ]),
    F('rack_id', 'string', '11+', default='', ignorable=True),
])


FETCH_RESPONSE = Message(
    'FetchResponse', api_key=1, kind='response', valid="0-12", flexible='12+', fields=[
    F('throttle_time_ms', 'int32', '1+', ignorable=True),
    F('error_code', 'int16', '7+', ignorable=True),
    F('session_id', 'int32', '7+', default=0),
    F('responses', '[]FetchableTopicResponse', '0+', fields=[
        F('topic', 'string', '0+'),
        F('partitions', '[]PartitionData', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('error_code', 'int16', '0+'),
            F('high_watermark', 'int64', '0+'),
            F('last_stable_offset', 'int64', '4+', default=-1, ignorable=True),
            F('log_start_offset', 'int64', '5+', default=-1, ignorable=True),
            F('diverging_epoch', 'EpochEndOffset', '12+', tag=0, tagged='12+', fields=[
                F('epoch', 'int32', '12+', default=-1),
                F('end_offset', 'int64', '12+', default=-1),
            ]),
            F('current_leader', 'LeaderIdAndEpoch', '12+', tag=1, tagged='12+', fields=[
                F('leader_id', 'int32', '12+', default=-1),
                F('leader_epoch', 'int32', '12+', default=-1),
            ]),
            F('snapshot_id', 'SnapshotId', '12+', tag=2, tagged='12+', fields=[
                F('end_offset', 'int64', '0+', default=-1),
                F('epoch', 'int32', '0+', default=-1),
            ]),
            F('aborted_transactions', '[]AbortedTransaction', '4+', nullable='4+', ignorable=True, fields=[
                F('producer_id', 'int64', '4+'),
                F('first_offset', 'int64', '4+'),
            ]),
            F('preferred_read_replica', 'int32', '11+', default=-1),
            F('records', 'records', '0+', nullable='0+'),
        ]),
    ]),
])


LIST_OFFSETS_REQUEST = Message(
    'ListOffsetsRequest', api_key=2, kind='request', valid="0-6", flexible='6+', fields=[
    F('replica_id', 'int32', '0+'),
    F('isolation_level', 'int8', '2+'),
    F('topics', '[]ListOffsetsTopic', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]ListOffsetsPartition', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('current_leader_epoch', 'int32', '4+', default=-1, ignorable=True),
            F('timestamp', 'int64', '0+'),
            F('max_num_offsets', 'int32', '0', default=1),
        ]),
    ]),
])


LIST_OFFSETS_RESPONSE = Message(
    'ListOffsetsResponse', api_key=2, kind='response', valid="0-6", flexible='6+', fields=[
    F('throttle_time_ms', 'int32', '2+', ignorable=True),
    F('topics', '[]ListOffsetsTopicResponse', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]ListOffsetsPartitionResponse', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('error_code', 'int16', '0+'),
            F('old_style_offsets', '[]int64', '0'),
            F('timestamp', 'int64', '1+', default=-1),
            F('offset', 'int64', '1+', default=-1),
            F('leader_epoch', 'int32', '4+', default=-1),
        ]),
    ]),
])


OFFSET_FOR_LEADER_EPOCH_REQUEST = Message(
    'OffsetForLeaderEpochRequest', api_key=23, kind='request', valid="0-4", flexible='4+', fields=[
    F('replica_id', 'int32', '3+', default=-2, ignorable=True),
    F('topics', '[]OffsetForLeaderTopic', '0+', fields=[
        F('topic', 'string', '0+'),
        F('partitions', '[]OffsetForLeaderPartition', '0+', fields=[
            F('partition', 'int32', '0+'),
            F('current_leader_epoch', 'int32', '2+', default=-1, ignorable=True),
            F('leader_epoch', 'int32', '0+'),
        ]),
    ]),
])


OFFSET_FOR_LEADER_EPOCH_RESPONSE = Message(
    'OffsetForLeaderEpochResponse', api_key=23, kind='response', valid="0-4", flexible='4+', fields=[
    F('throttle_time_ms', 'int32', '2+', ignorable=True),
    F('topics', '[]OffsetForLeaderTopicResult', '0+', fields=[
        F('topic', 'string', '0+'),
        F('partitions', '[]EpochEndOffset', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('partition', 'int32', '0+'),
            F('leader_epoch', 'int32', '1+', default=-1, ignorable=True),
            F('end_offset', 'int64', '0+', default=-1),
        ]),
    ]),
])
