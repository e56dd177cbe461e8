"""Access control lists: DescribeAcls (29), CreateAcls (30), DeleteAcls (31).

Kafka 2.8's message layouts, every version, in the form of ``protocol.schema``. v1 adds the
resource pattern type (3 = LITERAL before it), v2 is flexible. The enum fields carry the codes of
``protocol.acl``.
"""

from ..schema import Field as F, Message


DESCRIBE_ACLS_REQUEST = Message(
    'DescribeAclsRequest', api_key=29, kind='request', valid="0-2", flexible='2+', fields=[
    F('resource_type_filter', 'int8', '0+'),
    F('resource_name_filter', 'string', '0+', nullable='0+'),
    F('pattern_type_filter', 'int8', '1+', default=3),
    F('principal_filter', 'string', '0+', nullable='0+'),
    F('host_filter', 'string', '0+', nullable='0+'),
    F('operation', 'int8', '0+'),
    F('permission_type', 'int8', '0+'),
])


DESCRIBE_ACLS_RESPONSE = Message(
    'DescribeAclsResponse', api_key=29, kind='response', valid="0-2", flexible='2+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('error_code', 'int16', '0+'),
    F('error_message', 'string', '0+', nullable='0+', default=None),
    F('resources', '[]DescribeAclsResource', '0+', fields=[
        F('resource_type', 'int8', '0+'),
        F('resource_name', 'string', '0+'),
        F('pattern_type', 'int8', '1+', default=3),
        F('acls', '[]AclDescription', '0+', fields=[
            F('principal', 'string', '0+'),
            F('host', 'string', '0+'),
            F('operation', 'int8', '0+'),
            F('permission_type', 'int8', '0+'),
        ]),
    ]),
])


CREATE_ACLS_REQUEST = Message(
    'CreateAclsRequest', api_key=30, kind='request', valid="0-2", flexible='2+', fields=[
    F('creations', '[]AclCreation', '0+', fields=[
        F('resource_type', 'int8', '0+'),
        F('resource_name', 'string', '0+'),
        F('resource_pattern_type', 'int8', '1+', default=3),
        F('principal', 'string', '0+'),
        F('host', 'string', '0+'),
        F('operation', 'int8', '0+'),
        F('permission_type', 'int8', '0+'),
    ]),
])


CREATE_ACLS_RESPONSE = Message(
    'CreateAclsResponse', api_key=30, kind='response', valid="0-2", flexible='2+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('results', '[]AclCreationResult', '0+', fields=[
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+', default=None),
    ]),
])


DELETE_ACLS_REQUEST = Message(
    'DeleteAclsRequest', api_key=31, kind='request', valid="0-2", flexible='2+', fields=[
    F('filters', '[]DeleteAclsFilter', '0+', fields=[
        F('resource_type_filter', 'int8', '0+'),
        F('resource_name_filter', 'string', '0+', nullable='0+'),
        F('pattern_type_filter', 'int8', '1+', default=3),
        F('principal_filter', 'string', '0+', nullable='0+'),
        F('host_filter', 'string', '0+', nullable='0+'),
        F('operation', 'int8', '0+'),
        F('permission_type', 'int8', '0+'),
    ]),
])


DELETE_ACLS_RESPONSE = Message(
    'DeleteAclsResponse', api_key=31, kind='response', valid="0-2", flexible='2+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('filter_results', '[]DeleteAclsFilterResult', '0+', fields=[
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+', default=None),
        F('matching_acls', '[]DeleteAclsMatchingAcl', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+', default=None),
            F('resource_type', 'int8', '0+'),
            F('resource_name', 'string', '0+'),
            F('pattern_type', 'int8', '1+', default=3),
            F('principal', 'string', '0+'),
            F('host', 'string', '0+'),
            F('operation', 'int8', '0+'),
            F('permission_type', 'int8', '0+'),
        ]),
    ]),
])
