"""Produce (api key 0).

Kafka 2.8's message layouts, every version, in the form of ``protocol.schema``.
"""

from ..schema import Field as F, Message


PRODUCE_REQUEST = Message(
    'ProduceRequest', api_key=0, kind='request', valid="0-9", flexible='9+', fields=[
    F('transactional_id', 'string', '3+', nullable='3+', default=None),
    F('acks', 'int16', '0+'),
    F('timeout_ms', 'int32', '0+'),
    F('topic_data', '[]TopicProduceData', '0+', fields=[
        F('name', 'string', '0+'),
        F('partition_data', '[]PartitionProduceData', '0+', fields=[
            F('index', 'int32', '0+'),
            F('records', 'records', '0+', nullable='0+'),
        ]),
    ]),
])


PRODUCE_RESPONSE = Message(
    'ProduceResponse', api_key=0, kind='response', valid="0-9", flexible='9+', fields=[
    F('responses', '[]TopicProduceResponse', '0+', fields=[
        F('name', 'string', '0+'),
        F('partition_responses', '[]PartitionProduceResponse', '0+', fields=[
            F('index', 'int32', '0+'),
            F('error_code', 'int16', '0+'),
            F('base_offset', 'int64', '0+'),
            F('log_append_time_ms', 'int64', '2+', default=-1, ignorable=True),
            F('log_start_offset', 'int64', '5+', default=-1, ignorable=True),
            F('record_errors', '[]BatchIndexAndErrorMessage', '8+', ignorable=True, fields=[
                F('batch_index', 'int32', '8+'),
                F('batch_index_error_message', 'string', '8+', nullable='8+', default=None),
            ]),
            F('error_message', 'string', '8+', nullable='8+', default=None, ignorable=True),
        ]),
    ]),
    F('throttle_time_ms', 'int32', '1+', default=0, ignorable=True),
])
