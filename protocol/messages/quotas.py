"""Client quotas: DescribeClientQuotas (48), AlterClientQuotas (49).

Kafka 2.8's message layouts, every version, in the form of ``protocol.schema``.
"""

from ..schema import Field as F, Message


DESCRIBE_CLIENT_QUOTAS_REQUEST = Message(
    'DescribeClientQuotasRequest', api_key=48, kind='request', valid="0-1", flexible='1+', fields=[
    F('components', '[]ComponentData', '0+', fields=[
        F('entity_type', 'string', '0+'),
        F('match_type', 'int8', '0+'),  # 0 exact name, 1 the default, 2 any specified name
        F('match', 'string', '0+', nullable='0+'),
    ]),
    F('strict', 'bool', '0+'),
])


DESCRIBE_CLIENT_QUOTAS_RESPONSE = Message(
    'DescribeClientQuotasResponse', api_key=48, kind='response', valid="0-1", flexible='1+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('error_code', 'int16', '0+'),
    F('error_message', 'string', '0+', nullable='0+'),
    F('entries', '[]EntryData', '0+', nullable='0+', fields=[
        F('entity', '[]EntityData', '0+', fields=[
            F('entity_type', 'string', '0+'),
            F('entity_name', 'string', '0+', nullable='0+'),
        ]),
        F('values', '[]ValueData', '0+', fields=[
            F('key', 'string', '0+'),
            F('value', 'float64', '0+'),
        ]),
    ]),
])


ALTER_CLIENT_QUOTAS_REQUEST = Message(
    'AlterClientQuotasRequest', api_key=49, kind='request', valid="0-1", flexible='1+', fields=[
    F('entries', '[]EntryData', '0+', fields=[
        F('entity', '[]EntityData', '0+', fields=[
            F('entity_type', 'string', '0+'),
            F('entity_name', 'string', '0+', nullable='0+'),
        ]),
        F('ops', '[]OpData', '0+', fields=[
            F('key', 'string', '0+'),
            F('value', 'float64', '0+'),
            F('remove', 'bool', '0+'),
        ]),
    ]),
    F('validate_only', 'bool', '0+'),
])


ALTER_CLIENT_QUOTAS_RESPONSE = Message(
    'AlterClientQuotasResponse', api_key=49, kind='response', valid="0-1", flexible='1+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('entries', '[]EntryData', '0+', fields=[
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('entity', '[]EntityData', '0+', fields=[
            F('entity_type', 'string', '0+'),
            F('entity_name', 'string', '0+', nullable='0+'),
        ]),
    ]),
])
