"""Topic administration: CreateTopics (19), DeleteTopics (20), DeleteRecords (21), CreatePartitions (37),
ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46), DescribeLogDirs (35),
AlterReplicaLogDirs (34).

Kafka 2.8's message layouts, every version, in the form of ``protocol.schema``.
"""

from ..schema import Field as F, Message


CREATE_TOPICS_REQUEST = Message(
    'CreateTopicsRequest', api_key=19, kind='request', valid="0-7", flexible='5+', fields=[
    F('topics', '[]CreatableTopic', '0+', fields=[
        F('name', 'string', '0+'),
        F('num_partitions', 'int32', '0+'),
        F('replication_factor', 'int16', '0+'),
        F('assignments', '[]CreatableReplicaAssignment', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('broker_ids', '[]int32', '0+'),
        ]),
        F('configs', '[]CreateableTopicConfig', '0+', fields=[
            F('name', 'string', '0+'),
            F('value', 'string', '0+', nullable='0+'),
        ]),
    ]),
    F('timeout_ms', 'int32', '0+', default=60000),
    F('validate_only', 'bool', '1+', default=False),
])


CREATE_TOPICS_RESPONSE = Message(
    'CreateTopicsResponse', api_key=19, kind='response', valid="0-7", flexible='5+', fields=[
    F('throttle_time_ms', 'int32', '2+', ignorable=True),
    F('topics', '[]CreatableTopicResult', '0+', fields=[
        F('name', 'string', '0+'),
        F('topic_id', 'uuid', '7+', ignorable=True),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '1+', nullable='0+', ignorable=True),
        F('topic_config_error_code', 'int16', '5+', tag=0, tagged='5+', ignorable=True),
        F('num_partitions', 'int32', '5+', default=-1, ignorable=True),
        F('replication_factor', 'int16', '5+', default=-1, ignorable=True),
        F('configs', '[]CreatableTopicConfigs', '5+', nullable='5+', ignorable=True, fields=[
            F('name', 'string', '5+'),
            F('value', 'string', '5+', nullable='5+'),
            F('read_only', 'bool', '5+'),
            F('config_source', 'int8', '5+', default=-1, ignorable=True),
            F('is_sensitive', 'bool', '5+'),
        ]),
    ]),
])


DELETE_TOPICS_REQUEST = Message(
    'DeleteTopicsRequest', api_key=20, kind='request', valid="0-6", flexible='4+', fields=[
    F('topics', '[]DeleteTopicState', '6+', fields=[
        F('name', 'string', '6+', nullable='6+', default=None),
        F('topic_id', 'uuid', '6+'),
    ]),
    F('topic_names', '[]string', '0-5', ignorable=True),
    F('timeout_ms', 'int32', '0+'),
])


DELETE_TOPICS_RESPONSE = Message(
    'DeleteTopicsResponse', api_key=20, kind='response', valid="0-6", flexible='4+', fields=[
    F('throttle_time_ms', 'int32', '1+', ignorable=True),
    F('responses', '[]DeletableTopicResult', '0+', fields=[
        F('name', 'string', '0+', nullable='6+'),
        F('topic_id', 'uuid', '6+', ignorable=True),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '5+', nullable='5+', default=None, ignorable=True),
    ]),
])


DELETE_RECORDS_REQUEST = Message(
    'DeleteRecordsRequest', api_key=21, kind='request', valid="0-2", flexible='2+', fields=[
    F('topics', '[]DeleteRecordsTopic', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]DeleteRecordsPartition', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('offset', 'int64', '0+'),
        ]),
    ]),
    F('timeout_ms', 'int32', '0+'),
])


DELETE_RECORDS_RESPONSE = Message(
    'DeleteRecordsResponse', api_key=21, kind='response', valid="0-2", flexible='2+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('topics', '[]DeleteRecordsTopicResult', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]DeleteRecordsPartitionResult', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('low_watermark', 'int64', '0+'),
            F('error_code', 'int16', '0+'),
        ]),
    ]),
])


CREATE_PARTITIONS_REQUEST = Message(
    'CreatePartitionsRequest', api_key=37, kind='request', valid="0-3", flexible='2+', fields=[
    F('topics', '[]CreatePartitionsTopic', '0+', fields=[
        F('name', 'string', '0+'),
        F('count', 'int32', '0+'),
        F('assignments', '[]CreatePartitionsAssignment', '0+', nullable='0+', fields=[
            F('broker_ids', '[]int32', '0+'),
        ]),
    ]),
    F('timeout_ms', 'int32', '0+'),
    F('validate_only', 'bool', '0+'),
])


CREATE_PARTITIONS_RESPONSE = Message(
    'CreatePartitionsResponse', api_key=37, kind='response', valid="0-3", flexible='2+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('results', '[]CreatePartitionsTopicResult', '0+', fields=[
        F('name', 'string', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+', default=None),
    ]),
])


ELECT_LEADERS_REQUEST = Message(
    'ElectLeadersRequest', api_key=43, kind='request', valid="0-2", flexible='2+', fields=[
    F('election_type', 'int8', '1+'),
    F('topic_partitions', '[]TopicPartitions', '0+', nullable='0+', fields=[
        F('topic', 'string', '0+'),
        F('partitions', '[]int32', '0+'),
    ]),
    F('timeout_ms', 'int32', '0+', default=60000),
])


ELECT_LEADERS_RESPONSE = Message(
    'ElectLeadersResponse', api_key=43, kind='response', valid="0-2", flexible='2+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('error_code', 'int16', '1+'),
    F('replica_election_results', '[]ReplicaElectionResult', '0+', fields=[
        F('topic', 'string', '0+'),
        F('partition_result', '[]PartitionResult', '0+', fields=[
            F('partition_id', 'int32', '0+'),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
        ]),
    ]),
])


ALTER_PARTITION_REASSIGNMENTS_REQUEST = Message(
    'AlterPartitionReassignmentsRequest', api_key=45, kind='request', valid="0-0", flexible='0+', fields=[
    F('timeout_ms', 'int32', '0+', default=60000),
    F('topics', '[]ReassignableTopic', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]ReassignablePartition', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('replicas', '[]int32', '0+', nullable='0+', default=None),
        ]),
    ]),
])


ALTER_PARTITION_REASSIGNMENTS_RESPONSE = Message(
    'AlterPartitionReassignmentsResponse', api_key=45, kind='response', valid="0-0", flexible='0+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('error_code', 'int16', '0+'),
    F('error_message', 'string', '0+', nullable='0+'),
    F('responses', '[]ReassignableTopicResponse', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]ReassignablePartitionResponse', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
        ]),
    ]),
])


LIST_PARTITION_REASSIGNMENTS_REQUEST = Message(
    'ListPartitionReassignmentsRequest', api_key=46, kind='request', valid="0-0", flexible='0+', fields=[
    F('timeout_ms', 'int32', '0+', default=60000),
    F('topics', '[]ListPartitionReassignmentsTopics', '0+', nullable='0+', default=None, fields=[
        F('name', 'string', '0+'),
        F('partition_indexes', '[]int32', '0+'),
    ]),
])


LIST_PARTITION_REASSIGNMENTS_RESPONSE = Message(
    'ListPartitionReassignmentsResponse', api_key=46, kind='response', valid="0-0", flexible='0+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('error_code', 'int16', '0+'),
    F('error_message', 'string', '0+', nullable='0+'),
    F('topics', '[]OngoingTopicReassignment', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]OngoingPartitionReassignment', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('replicas', '[]int32', '0+'),
            F('adding_replicas', '[]int32', '0+'),
            F('removing_replicas', '[]int32', '0+'),
        ]),
    ]),
])


DESCRIBE_LOG_DIRS_REQUEST = Message(
    'DescribeLogDirsRequest', api_key=35, kind='request', valid="0-2", flexible='2+', fields=[
    F('topics', '[]DescribableLogDirTopic', '0+', nullable='0+', fields=[
        F('topic', 'string', '0+'),
        F('partitions', '[]int32', '0+'),
    ]),
])


DESCRIBE_LOG_DIRS_RESPONSE = Message(
    'DescribeLogDirsResponse', api_key=35, kind='response', valid="0-2", flexible='2+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('results', '[]DescribeLogDirsResult', '0+', fields=[
        F('error_code', 'int16', '0+'),
        F('log_dir', 'string', '0+'),
        F('topics', '[]DescribeLogDirsTopic', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]DescribeLogDirsPartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('partition_size', 'int64', '0+'),
                F('offset_lag', 'int64', '0+'),
                F('is_future_key', 'bool', '0+'),
            ]),
        ]),
    ]),
])


ALTER_REPLICA_LOG_DIRS_REQUEST = Message(
    'AlterReplicaLogDirsRequest', api_key=34, kind='request', valid="0-2", flexible='2+', fields=[
    F('dirs', '[]AlterReplicaLogDir', '0+', fields=[
        F('path', 'string', '0+'),
        F('topics', '[]AlterReplicaLogDirTopic', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
    ]),
])


ALTER_REPLICA_LOG_DIRS_RESPONSE = Message(
    'AlterReplicaLogDirsResponse', api_key=34, kind='response', valid="0-2", flexible='2+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('results', '[]AlterReplicaLogDirTopicResult', '0+', fields=[
        F('topic_name', 'string', '0+'),
        F('partitions', '[]AlterReplicaLogDirPartitionResult', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('error_code', 'int16', '0+'),
        ]),
    ]),
])
