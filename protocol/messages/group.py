"""Group membership: FindCoordinator (10), JoinGroup (11), Heartbeat (12), LeaveGroup (13),
SyncGroup (14), DescribeGroups (15), ListGroups (16), DeleteGroups (42).

Kafka 2.8's message layouts, every version, in the form of ``protocol.schema``.
"""

from ..schema import Field as F, Message


FIND_COORDINATOR_REQUEST = Message(
    'FindCoordinatorRequest', api_key=10, kind='request', valid="0-3", flexible='3+', fields=[
    F('key', 'string', '0+'),
    F('key_type', 'int8', '1+', default=0),
])


FIND_COORDINATOR_RESPONSE = Message(
    'FindCoordinatorResponse', api_key=10, kind='response', valid="0-3", flexible='3+', fields=[
    F('throttle_time_ms', 'int32', '1+', ignorable=True),
    F('error_code', 'int16', '0+'),
    F('error_message', 'string', '1+', nullable='1+', ignorable=True),
    F('node_id', 'int32', '0+'),
    F('host', 'string', '0+'),
    F('port', 'int32', '0+'),
])


JOIN_GROUP_REQUEST = Message(
    'JoinGroupRequest', api_key=11, kind='request', valid="0-7", flexible='6+', fields=[
    F('group_id', 'string', '0+'),
    F('session_timeout_ms', 'int32', '0+'),
    F('rebalance_timeout_ms', 'int32', '1+', default=-1, ignorable=True),
    F('member_id', 'string', '0+'),
    F('group_instance_id', 'string', '5+', nullable='5+', default=None),
    F('protocol_type', 'string', '0+'),
    F('protocols', '[]JoinGroupRequestProtocol', '0+', fields=[
        F('name', 'string', '0+'),
        F('metadata', 'bytes', '0+'),
    ]),
])


JOIN_GROUP_RESPONSE = Message(
    'JoinGroupResponse', api_key=11, kind='response', valid="0-7", flexible='6+', fields=[
    F('throttle_time_ms', 'int32', '2+', ignorable=True),
    F('error_code', 'int16', '0+'),
    F('generation_id', 'int32', '0+', default=-1),
    F('protocol_type', 'string', '7+', nullable='7+', default=None, ignorable=True),
    F('protocol_name', 'string', '0+', nullable='7+'),
    F('leader', 'string', '0+'),
    F('member_id', 'string', '0+'),
    F('members', '[]JoinGroupResponseMember', '0+', fields=[
        F('member_id', 'string', '0+'),
        F('group_instance_id', 'string', '5+', nullable='5+', default=None),
        F('metadata', 'bytes', '0+'),
    ]),
])


HEARTBEAT_REQUEST = Message(
    'HeartbeatRequest', api_key=12, kind='request', valid="0-4", flexible='4+', fields=[
    F('group_id', 'string', '0+'),
    F('generation_id', 'int32', '0+'),
    F('member_id', 'string', '0+'),
    F('group_instance_id', 'string', '3+', nullable='3+', default=None),
])


HEARTBEAT_RESPONSE = Message(
    'HeartbeatResponse', api_key=12, kind='response', valid="0-4", flexible='4+', fields=[
    F('throttle_time_ms', 'int32', '1+', ignorable=True),
    F('error_code', 'int16', '0+'),
])


LEAVE_GROUP_REQUEST = Message(
    'LeaveGroupRequest', api_key=13, kind='request', valid="0-4", flexible='4+', fields=[
    F('group_id', 'string', '0+'),
    F('member_id', 'string', '0-2'),
    F('members', '[]MemberIdentity', '3+', fields=[
        F('member_id', 'string', '3+'),
        F('group_instance_id', 'string', '3+', nullable='3+', default=None),
    ]),
])


LEAVE_GROUP_RESPONSE = Message(
    'LeaveGroupResponse', api_key=13, kind='response', valid="0-4", flexible='4+', fields=[
    F('throttle_time_ms', 'int32', '1+', ignorable=True),
    F('error_code', 'int16', '0+'),
    F('members', '[]MemberResponse', '3+', fields=[
        F('member_id', 'string', '3+'),
        F('group_instance_id', 'string', '3+', nullable='3+'),
        F('error_code', 'int16', '3+'),
    ]),
])


SYNC_GROUP_REQUEST = Message(
    'SyncGroupRequest', api_key=14, kind='request', valid="0-5", flexible='4+', fields=[
    F('group_id', 'string', '0+'),
    F('generation_id', 'int32', '0+'),
    F('member_id', 'string', '0+'),
    F('group_instance_id', 'string', '3+', nullable='3+', default=None),
    F('protocol_type', 'string', '5+', nullable='5+', default=None, ignorable=True),
    F('protocol_name', 'string', '5+', nullable='5+', default=None, ignorable=True),
    F('assignments', '[]SyncGroupRequestAssignment', '0+', fields=[
        F('member_id', 'string', '0+'),
        F('assignment', 'bytes', '0+'),
    ]),
])


SYNC_GROUP_RESPONSE = Message(
    'SyncGroupResponse', api_key=14, kind='response', valid="0-5", flexible='4+', fields=[
    F('throttle_time_ms', 'int32', '1+', ignorable=True),
    F('error_code', 'int16', '0+'),
    F('protocol_type', 'string', '5+', nullable='5+', default=None, ignorable=True),
    F('protocol_name', 'string', '5+', nullable='5+', default=None, ignorable=True),
    F('assignment', 'bytes', '0+'),
])


DESCRIBE_GROUPS_REQUEST = Message(
    'DescribeGroupsRequest', api_key=15, kind='request', valid="0-5", flexible='5+', fields=[
    F('groups', '[]string', '0+'),
    F('include_authorized_operations', 'bool', '3+'),
])


DESCRIBE_GROUPS_RESPONSE = Message(
    'DescribeGroupsResponse', api_key=15, kind='response', valid="0-5", flexible='5+', fields=[
    F('throttle_time_ms', 'int32', '1+', ignorable=True),
    F('groups', '[]DescribedGroup', '0+', fields=[
        F('error_code', 'int16', '0+'),
        F('group_id', 'string', '0+'),
        F('group_state', 'string', '0+'),
        F('protocol_type', 'string', '0+'),
        F('protocol_data', 'string', '0+'),
        F('members', '[]DescribedGroupMember', '0+', fields=[
            F('member_id', 'string', '0+'),
            F('group_instance_id', 'string', '4+', nullable='4+', default=None, ignorable=True),
            F('client_id', 'string', '0+'),
            F('client_host', 'string', '0+'),
            F('member_metadata', 'bytes', '0+'),
            F('member_assignment', 'bytes', '0+'),
        ]),
        F('authorized_operations', 'int32', '3+', default=-2147483648),
    ]),
])


LIST_GROUPS_REQUEST = Message(
    'ListGroupsRequest', api_key=16, kind='request', valid="0-4", flexible='3+', fields=[
    F('states_filter', '[]string', '4+'),
])


LIST_GROUPS_RESPONSE = Message(
    'ListGroupsResponse', api_key=16, kind='response', valid="0-4", flexible='3+', fields=[
    F('throttle_time_ms', 'int32', '1+', ignorable=True),
    F('error_code', 'int16', '0+'),
    F('groups', '[]ListedGroup', '0+', fields=[
        F('group_id', 'string', '0+'),
        F('protocol_type', 'string', '0+'),
        F('group_state', 'string', '4+', ignorable=True),
    ]),
])


DELETE_GROUPS_REQUEST = Message(
    'DeleteGroupsRequest', api_key=42, kind='request', valid="0-2", flexible='2+', fields=[
    F('groups_names', '[]string', '0+'),
])


DELETE_GROUPS_RESPONSE = Message(
    'DeleteGroupsResponse', api_key=42, kind='response', valid="0-2", flexible='2+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('results', '[]DeletableGroupResult', '0+', fields=[
        F('group_id', 'string', '0+'),
        F('error_code', 'int16', '0+'),
    ]),
])
