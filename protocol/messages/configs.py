"""Configuration: DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44).

Kafka 2.8's message layouts, every version, in the form of ``protocol.schema``.
"""

from ..schema import Field as F, Message


DESCRIBE_CONFIGS_REQUEST = Message(
    'DescribeConfigsRequest', api_key=32, kind='request', valid="0-4", flexible='4+', fields=[
    F('resources', '[]DescribeConfigsResource', '0+', fields=[
        F('resource_type', 'int8', '0+'),
        F('resource_name', 'string', '0+'),
        F('configuration_keys', '[]string', '0+', nullable='0+'),
    ]),
    F('include_synonyms', 'bool', '1+', default=False),
    F('include_documentation', 'bool', '3+', default=False),
])


DESCRIBE_CONFIGS_RESPONSE = Message(
    'DescribeConfigsResponse', api_key=32, kind='response', valid="0-4", flexible='4+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('results', '[]DescribeConfigsResult', '0+', fields=[
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('resource_type', 'int8', '0+'),
        F('resource_name', 'string', '0+'),
        F('configs', '[]DescribeConfigsResourceResult', '0+', fields=[
            F('name', 'string', '0+'),
            F('value', 'string', '0+', nullable='0+'),
            F('read_only', 'bool', '0+'),
            F('is_default', 'bool', '0'),
            F('config_source', 'int8', '1+', default=-1, ignorable=True),
            F('is_sensitive', 'bool', '0+'),
            F('synonyms', '[]DescribeConfigsSynonym', '1+', ignorable=True, fields=[
                F('name', 'string', '1+'),
                F('value', 'string', '1+', nullable='0+'),
                F('source', 'int8', '1+'),
            ]),
            F('config_type', 'int8', '3+', default=0, ignorable=True),
            F('documentation', 'string', '3+', nullable='0+', ignorable=True),
        ]),
    ]),
])


ALTER_CONFIGS_REQUEST = Message(
    'AlterConfigsRequest', api_key=33, kind='request', valid="0-2", flexible='2+', fields=[
    F('resources', '[]AlterConfigsResource', '0+', fields=[
        F('resource_type', 'int8', '0+'),
        F('resource_name', 'string', '0+'),
        F('configs', '[]AlterableConfig', '0+', fields=[
            F('name', 'string', '0+'),
            F('value', 'string', '0+', nullable='0+'),
        ]),
    ]),
    F('validate_only', 'bool', '0+'),
])


ALTER_CONFIGS_RESPONSE = Message(
    'AlterConfigsResponse', api_key=33, kind='response', valid="0-2", flexible='2+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('responses', '[]AlterConfigsResourceResponse', '0+', fields=[
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('resource_type', 'int8', '0+'),
        F('resource_name', 'string', '0+'),
    ]),
])


INCREMENTAL_ALTER_CONFIGS_REQUEST = Message(
    'IncrementalAlterConfigsRequest', api_key=44, kind='request', valid="0-1", flexible='1+', fields=[
    F('resources', '[]AlterConfigsResource', '0+', fields=[
        F('resource_type', 'int8', '0+'),
        F('resource_name', 'string', '0+'),
        F('configs', '[]AlterableConfig', '0+', fields=[
            F('name', 'string', '0+'),
            F('config_operation', 'int8', '0+'),
            F('value', 'string', '0+', nullable='0+'),
        ]),
    ]),
    F('validate_only', 'bool', '0+'),
])


INCREMENTAL_ALTER_CONFIGS_RESPONSE = Message(
    'IncrementalAlterConfigsResponse', api_key=44, kind='response', valid="0-1", flexible='1+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('responses', '[]AlterConfigsResourceResponse', '0+', fields=[
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('resource_type', 'int8', '0+'),
        F('resource_name', 'string', '0+'),
    ]),
])
