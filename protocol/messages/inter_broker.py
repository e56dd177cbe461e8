"""Controller and coordinator to broker: LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6),
ControlledShutdown (7, broker to controller), WriteTxnMarkers (27) and AlterIsr (56, partition leader to
controller, KIP-497).

Kafka 2.8's message layouts, every version, in the form of ``protocol.schema``.
"""

from ..schema import Field as F, Message


LEADER_AND_ISR_PARTITION_STATE = [
    F('topic_name', 'string', '0-1', ignorable=True),
    F('partition_index', 'int32', '0+'),
    F('controller_epoch', 'int32', '0+'),
    F('leader', 'int32', '0+'),
    F('leader_epoch', 'int32', '0+'),
    F('isr', '[]int32', '0+'),
    F('partition_epoch', 'int32', '0+'),
    F('replicas', '[]int32', '0+'),
    F('adding_replicas', '[]int32', '3+', ignorable=True),
    F('removing_replicas', '[]int32', '3+', ignorable=True),
    F('is_new', 'bool', '1+', default=False, ignorable=True),
]

LEADER_AND_ISR_REQUEST = Message(
    'LeaderAndIsrRequest', api_key=4, kind='request', valid="0-5", flexible='4+', fields=[
    F('controller_id', 'int32', '0+'),
    F('controller_epoch', 'int32', '0+'),
    F('broker_epoch', 'int64', '2+', default=-1, ignorable=True),
    F('type', 'int8', '5+'),
    F('ungrouped_partition_states', '[]LeaderAndIsrPartitionState', '0-1', fields=LEADER_AND_ISR_PARTITION_STATE),
    F('topic_states', '[]LeaderAndIsrTopicState', '2+', fields=[
        F('topic_name', 'string', '2+'),
        F('topic_id', 'uuid', '5+', ignorable=True),
        F('partition_states', '[]LeaderAndIsrPartitionState', '2+', fields=LEADER_AND_ISR_PARTITION_STATE),
    ]),
    F('live_leaders', '[]LeaderAndIsrLiveLeader', '0+', fields=[
        F('broker_id', 'int32', '0+'),
        F('host_name', 'string', '0+'),
        F('port', 'int32', '0+'),
    ]),
])


LEADER_AND_ISR_PARTITION_ERROR = [
    F('topic_name', 'string', '0-4', ignorable=True),
    F('partition_index', 'int32', '0+'),
    F('error_code', 'int16', '0+'),
]

LEADER_AND_ISR_RESPONSE = Message(
    'LeaderAndIsrResponse', api_key=4, kind='response', valid="0-5", flexible='4+', fields=[
    F('error_code', 'int16', '0+'),
    F('partition_errors', '[]LeaderAndIsrPartitionError', '0-4', fields=LEADER_AND_ISR_PARTITION_ERROR),
    F('topics', '[]LeaderAndIsrTopicError', '5+', fields=[
        F('topic_id', 'uuid', '5+'),
        F('partition_errors', '[]LeaderAndIsrPartitionError', '5+', fields=LEADER_AND_ISR_PARTITION_ERROR),
    ]),
])


STOP_REPLICA_REQUEST = Message(
    'StopReplicaRequest', api_key=5, kind='request', valid="0-3", flexible='2+', fields=[
    F('controller_id', 'int32', '0+'),
    F('controller_epoch', 'int32', '0+'),
    F('broker_epoch', 'int64', '1+', default=-1, ignorable=True),
    F('delete_partitions', 'bool', '0-2'),
    F('ungrouped_partitions', '[]StopReplicaPartitionV0', '0', fields=[
        F('topic_name', 'string', '0'),
        F('partition_index', 'int32', '0'),
    ]),
    F('topics', '[]StopReplicaTopicV1', '1-2', fields=[
        F('name', 'string', '1-2'),
        F('partition_indexes', '[]int32', '1-2'),
    ]),
    F('topic_states', '[]StopReplicaTopicState', '3+', fields=[
        F('topic_name', 'string', '3+'),
        F('partition_states', '[]StopReplicaPartitionState', '3+', fields=[
            F('partition_index', 'int32', '3+'),
            F('leader_epoch', 'int32', '3+', default=-1),
            F('delete_partition', 'bool', '3+'),
        ]),
    ]),
])


STOP_REPLICA_RESPONSE = Message(
    'StopReplicaResponse', api_key=5, kind='response', valid="0-3", flexible='2+', fields=[
    F('error_code', 'int16', '0+'),
    F('partition_errors', '[]StopReplicaPartitionError', '0+', fields=[
        F('topic_name', 'string', '0+'),
        F('partition_index', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
    ]),
])


UPDATE_METADATA_PARTITION_STATE = [
    F('topic_name', 'string', '0-4', ignorable=True),
    F('partition_index', 'int32', '0+'),
    F('controller_epoch', 'int32', '0+'),
    F('leader', 'int32', '0+'),
    F('leader_epoch', 'int32', '0+'),
    F('isr', '[]int32', '0+'),
    F('zk_version', 'int32', '0+'),
    F('replicas', '[]int32', '0+'),
    F('offline_replicas', '[]int32', '4+', ignorable=True),
]

UPDATE_METADATA_REQUEST = Message(
    'UpdateMetadataRequest', api_key=6, kind='request', valid="0-7", flexible='6+', fields=[
    F('controller_id', 'int32', '0+'),
    F('controller_epoch', 'int32', '0+'),
    F('broker_epoch', 'int64', '5+', default=-1, ignorable=True),
    F('ungrouped_partition_states', '[]UpdateMetadataPartitionState', '0-4', fields=UPDATE_METADATA_PARTITION_STATE),
    F('topic_states', '[]UpdateMetadataTopicState', '5+', fields=[
        F('topic_name', 'string', '5+'),
        F('topic_id', 'uuid', '7+', ignorable=True),
        F('partition_states', '[]UpdateMetadataPartitionState', '5+', fields=UPDATE_METADATA_PARTITION_STATE),
    ]),
    F('live_brokers', '[]UpdateMetadataBroker', '0+', fields=[
        F('id', 'int32', '0+'),
        F('v0_host', 'string', '0', ignorable=True),
        F('v0_port', 'int32', '0', ignorable=True),
        F('endpoints', '[]UpdateMetadataEndpoint', '1+', ignorable=True, fields=[
            F('port', 'int32', '1+'),
            F('host', 'string', '1+'),
            F('listener', 'string', '3+', ignorable=True),
            F('security_protocol', 'int16', '1+'),
        ]),
        F('rack', 'string', '2+', nullable='0+', ignorable=True),
    ]),
])


UPDATE_METADATA_RESPONSE = Message(
    'UpdateMetadataResponse', api_key=6, kind='response', valid="0-7", flexible='6+', fields=[
    F('error_code', 'int16', '0+'),
])


CONTROLLED_SHUTDOWN_REQUEST = Message(
    'ControlledShutdownRequest', api_key=7, kind='request', valid="0-3", flexible='3+', fields=[
    F('broker_id', 'int32', '0+'),
    F('broker_epoch', 'int64', '2+', default=-1, ignorable=True),
])


CONTROLLED_SHUTDOWN_RESPONSE = Message(
    'ControlledShutdownResponse', api_key=7, kind='response', valid="0-3", flexible='3+', fields=[
    F('error_code', 'int16', '0+'),
    F('remaining_partitions', '[]RemainingPartition', '0+', fields=[
        F('topic_name', 'string', '0+'),
        F('partition_index', 'int32', '0+'),
    ]),
])


WRITE_TXN_MARKERS_REQUEST = Message(
    'WriteTxnMarkersRequest', api_key=27, kind='request', valid="0-1", flexible='1+', fields=[
    F('markers', '[]WritableTxnMarker', '0+', fields=[
        F('producer_id', 'int64', '0+'),
        F('producer_epoch', 'int16', '0+'),
        F('transaction_result', 'bool', '0+'),
        F('topics', '[]WritableTxnMarkerTopic', '0+', fields=[
            F('name', 'string', '0+'),
            F('partition_indexes', '[]int32', '0+'),
        ]),
        F('coordinator_epoch', 'int32', '0+'),
    ]),
])


WRITE_TXN_MARKERS_RESPONSE = Message(
    'WriteTxnMarkersResponse', api_key=27, kind='response', valid="0-1", flexible='1+', fields=[
    F('markers', '[]WritableTxnMarkerResult', '0+', fields=[
        F('producer_id', 'int64', '0+'),
        F('topics', '[]WritableTxnMarkerTopicResult', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]WritableTxnMarkerPartitionResult', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
            ]),
        ]),
    ]),
])


# Kafka 2.8's AlterIsr v0 (later renamed AlterPartition): a partition leader asks the controller to write an ISR.
ALTER_ISR_REQUEST = Message(
    'AlterIsrRequest', api_key=56, kind='request', valid="0", flexible='0+', fields=[
    F('broker_id', 'int32', '0+'),
    F('broker_epoch', 'int64', '0+', default=-1),
    F('topics', '[]TopicData', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]PartitionData', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('leader_epoch', 'int32', '0+'),
            F('new_isr', '[]int32', '0+'),
            F('current_isr_version', 'int32', '0+'),
        ]),
    ]),
])


ALTER_ISR_RESPONSE = Message(
    'AlterIsrResponse', api_key=56, kind='response', valid="0", flexible='0+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('error_code', 'int16', '0+'),
    F('topics', '[]TopicData', '0+', fields=[
        F('name', 'string', '0+'),
        F('partitions', '[]PartitionData', '0+', fields=[
            F('partition_index', 'int32', '0+'),
            F('error_code', 'int16', '0+'),
            F('leader_id', 'int32', '0+'),
            F('leader_epoch', 'int32', '0+'),
            F('isr', '[]int32', '0+'),
            F('current_isr_version', 'int32', '0+'),
        ]),
    ]),
])
