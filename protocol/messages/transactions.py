"""Idempotence and transactions: InitProducerId (22), AddPartitionsToTxn (24), AddOffsetsToTxn (25),
EndTxn (26), TxnOffsetCommit (28), DescribeProducers (61).

Kafka 2.8's message layouts, every version, in the form of ``protocol.schema``.
"""

from ..schema import Field as F, Message


INIT_PRODUCER_ID_REQUEST = Message(
    'InitProducerIdRequest', api_key=22, kind='request', valid="0-4", flexible='2+', fields=[
    F('transactional_id', 'string', '0+', nullable='0+'),
    F('transaction_timeout_ms', 'int32', '0+'),
    F('producer_id', 'int64', '3+', default=-1),
    F('producer_epoch', 'int16', '3+', default=-1),
])


INIT_PRODUCER_ID_RESPONSE = Message(
    'InitProducerIdResponse', api_key=22, kind='response', valid="0-4", flexible='2+', fields=[
    F('throttle_time_ms', 'int32', '0+', ignorable=True),
    F('error_code', 'int16', '0+'),
    F('producer_id', 'int64', '0+', default=-1),
    F('producer_epoch', 'int16', '0+'),
])


ADD_PARTITIONS_TO_TXN_TOPIC = [
    F('name', 'string', '0+'),
    F('partitions', '[]int32', '0+'),
]

ADD_PARTITIONS_TO_TXN_REQUEST = Message(
    'AddPartitionsToTxnRequest', api_key=24, kind='request', valid="0-3", flexible='3+', fields=[
    F('transactional_id', 'string', '0+'),
    F('producer_id', 'int64', '0+'),
    F('producer_epoch', 'int16', '0+'),
    F('topics', '[]AddPartitionsToTxnTopic', '0+', fields=ADD_PARTITIONS_TO_TXN_TOPIC),
])


ADD_PARTITIONS_TO_TXN_PARTITION_RESULT = [
    F('partition_index', 'int32', '0+'),
    F('error_code', 'int16', '0+'),
]

ADD_PARTITIONS_TO_TXN_TOPIC_RESULT = [
    F('name', 'string', '0+'),
    F('results', '[]AddPartitionsToTxnPartitionResult', '0+', fields=ADD_PARTITIONS_TO_TXN_PARTITION_RESULT),
]

ADD_PARTITIONS_TO_TXN_RESPONSE = Message(
    'AddPartitionsToTxnResponse', api_key=24, kind='response', valid="0-3", flexible='3+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('results', '[]AddPartitionsToTxnTopicResult', '0+', fields=ADD_PARTITIONS_TO_TXN_TOPIC_RESULT),
])


ADD_OFFSETS_TO_TXN_REQUEST = Message(
    'AddOffsetsToTxnRequest', api_key=25, kind='request', valid="0-3", flexible='3+', fields=[
    F('transactional_id', 'string', '0+'),
    F('producer_id', 'int64', '0+'),
    F('producer_epoch', 'int16', '0+'),
    F('group_id', 'string', '0+'),
])


ADD_OFFSETS_TO_TXN_RESPONSE = Message(
    'AddOffsetsToTxnResponse', api_key=25, kind='response', valid="0-3", flexible='3+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('error_code', 'int16', '0+'),
])


END_TXN_REQUEST = Message(
    'EndTxnRequest', api_key=26, kind='request', valid="0-3", flexible='3+', fields=[
    F('transactional_id', 'string', '0+'),
    F('producer_id', 'int64', '0+'),
    F('producer_epoch', 'int16', '0+'),
    F('committed', 'bool', '0+'),
])


END_TXN_RESPONSE = Message(
    'EndTxnResponse', api_key=26, kind='response', valid="0-3", flexible='3+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('error_code', 'int16', '0+'),
])


TXN_OFFSET_COMMIT_REQUEST = Message(
    'TxnOffsetCommitRequest', api_key=28, kind='request', valid="0-3", flexible='3+', fields=[
    F('transactional_id', 'string', '0+'),
    F('group_id', 'string', '0+'),
    F('producer_id', 'int64', '0+'),
    F('producer_epoch', 'int16', '0+'),
    F('generation_id', 'int32', '3+', default=-1),
    F('member_id', 'string', '3+', default=''),
    F('group_instance_id', 'string', '3+', nullable='3+', default=None),
    F('topics', '[]TxnOffsetCommitRequestTopic', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]TxnOffsetCommitRequestPartition', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('committed_offset', 'int64', '0+'),
            F('committed_leader_epoch', 'int32', '2+', default=-1, ignorable=True),
            F('committed_metadata', 'string', '0+', nullable='0+'),
        ]),
    ]),
])


TXN_OFFSET_COMMIT_RESPONSE = Message(
    'TxnOffsetCommitResponse', api_key=28, kind='response', valid="0-3", flexible='3+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('topics', '[]TxnOffsetCommitResponseTopic', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]TxnOffsetCommitResponsePartition', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('error_code', 'int16', '0+'),
        ]),
    ]),
])


DESCRIBE_PRODUCERS_REQUEST = Message(
    'DescribeProducersRequest', api_key=61, kind='request', valid="0-0", flexible='0+', fields=[
    F('topics', '[]TopicRequest', '0+', fields=[
        F('name', 'string', '0+'),
        F('partition_indexes', '[]int32', '0+'),
    ]),
])


DESCRIBE_PRODUCERS_RESPONSE = Message(
    'DescribeProducersResponse', api_key=61, kind='response', valid="0-0", flexible='0+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('topics', '[]TopicResponse', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]PartitionResponse', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+', default=None),
            F('active_producers', '[]ProducerState', '0+', fields=[
                F('producer_id', 'int64', '0+'),
                F('producer_epoch', 'int32', '0+'),
                F('last_sequence', 'int32', '0+', default=-1),
                F('last_timestamp', 'int64', '0+', default=-1),
                F('coordinator_epoch', 'int32', '0+'),
                F('current_txn_start_offset', 'int64', '0+', default=-1),
            ]),
        ]),
    ]),
])
