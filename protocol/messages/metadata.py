"""Cluster discovery: Metadata (3), ApiVersions (18), DescribeCluster (60).

Kafka 2.8's message layouts, every version, in the form of ``protocol.schema``.
"""

from ..schema import Field as F, Message


METADATA_REQUEST = Message(
    'MetadataRequest', api_key=3, kind='request', valid="0-11", flexible='9+', fields=[
    F('topics', '[]MetadataRequestTopic', '0+', nullable='1+', fields=[
        F('topic_id', 'uuid', '10+', ignorable=True),
        F('name', 'string', '0+', nullable='10+'),
    ]),
    F('allow_auto_topic_creation', 'bool', '4+', default=True),
    F('include_cluster_authorized_operations', 'bool', '8-10'),
    F('include_topic_authorized_operations', 'bool', '8+'),
])


METADATA_RESPONSE = Message(
    'MetadataResponse', api_key=3, kind='response', valid="0-11", flexible='9+', fields=[
    F('throttle_time_ms', 'int32', '3+', ignorable=True),
    F('brokers', '[]MetadataResponseBroker', '0+', fields=[
        F('node_id', 'int32', '0+'),
        F('host', 'string', '0+'),
        F('port', 'int32', '0+'),
        F('rack', 'string', '1+', nullable='1+', default=None, ignorable=True),
    ]),
    F('cluster_id', 'string', '2+', nullable='2+', default=None, ignorable=True),
    F('controller_id', 'int32', '1+', default=-1, ignorable=True),
    F('topics', '[]MetadataResponseTopic', '0+', fields=[
        F('error_code', 'int16', '0+'),
        F('name', 'string', '0+'),
        F('topic_id', 'uuid', '10+', ignorable=True),
        F('is_internal', 'bool', '1+', default=False, ignorable=True),
        F('partitions', '[]MetadataResponsePartition', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('partition_index', 'int32', '0+'),
            F('leader_id', 'int32', '0+'),
            F('leader_epoch', 'int32', '7+', default=-1, ignorable=True),
            F('replica_nodes', '[]int32', '0+'),
            F('isr_nodes', '[]int32', '0+'),
            F('offline_replicas', '[]int32', '5+', ignorable=True),
        ]),
        F('topic_authorized_operations', 'int32', '8+', default=-2147483648),
    ]),
    F('cluster_authorized_operations', 'int32', '8-10', default=-2147483648),
])


API_VERSIONS_REQUEST = Message(
    'ApiVersionsRequest', api_key=18, kind='request', valid="0-3", flexible='3+', fields=[
    F('client_software_name', 'string', '3+', ignorable=True),
    F('client_software_version', 'string', '3+', ignorable=True),
])


API_VERSIONS_RESPONSE = Message(
    'ApiVersionsResponse', api_key=18, kind='response', valid="0-3", flexible='3+', fields=[
    F('error_code', 'int16', '0+'),
    F('api_keys', '[]ApiVersion', '0+', fields=[
        F('api_key', 'int16', '0+'),
        F('min_version', 'int16', '0+'),
        F('max_version', 'int16', '0+'),
    ]),
    F('throttle_time_ms', 'int32', '1+', ignorable=True),
    F('supported_features', '[]SupportedFeatureKey', '3+', tag=0, tagged='3+', fields=[
        F('name', 'string', '3+'),
        F('min_version', 'int16', '3+'),
        F('max_version', 'int16', '3+'),
    ]),
    F('finalized_features_epoch', 'int64', '3+', tag=1, tagged='3+', default=-1, ignorable=True),
    F('finalized_features', '[]FinalizedFeatureKey', '3+', tag=2, tagged='3+', fields=[
        F('name', 'string', '3+'),
        F('max_version_level', 'int16', '3+'),
        F('min_version_level', 'int16', '3+'),
    ]),
])


DESCRIBE_CLUSTER_REQUEST = Message(
    'DescribeClusterRequest', api_key=60, kind='request', valid="0-0", flexible='0+', fields=[
    F('include_cluster_authorized_operations', 'bool', '0+'),
])


DESCRIBE_CLUSTER_RESPONSE = Message(
    'DescribeClusterResponse', api_key=60, kind='response', valid="0-0", flexible='0+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('error_code', 'int16', '0+'),
    F('error_message', 'string', '0+', nullable='0+', default=None),
    F('cluster_id', 'string', '0+'),
    F('controller_id', 'int32', '0+', default=-1),
    F('brokers', '[]DescribeClusterBroker', '0+', fields=[
        F('broker_id', 'int32', '0+'),
        F('host', 'string', '0+'),
        F('port', 'int32', '0+'),
        F('rack', 'string', '0+', nullable='0+', default=None),
    ]),
    F('cluster_authorized_operations', 'int32', '0+', default=-2147483648),
])
