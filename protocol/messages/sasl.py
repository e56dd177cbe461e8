"""Authentication: SaslHandshake (17), SaslAuthenticate (36), DescribeUserScramCredentials (50),
AlterUserScramCredentials (51).

Kafka 2.8's message layouts, every version, in the form of ``protocol.schema``.
"""

from ..schema import Field as F, Message


SASL_HANDSHAKE_REQUEST = Message(
    'SaslHandshakeRequest', api_key=17, kind='request', valid="0-1", fields=[
    F('mechanism', 'string', '0+'),
])


SASL_HANDSHAKE_RESPONSE = Message(
    'SaslHandshakeResponse', api_key=17, kind='response', valid="0-1", fields=[
    F('error_code', 'int16', '0+'),
    F('mechanisms', '[]string', '0+'),
])


SASL_AUTHENTICATE_REQUEST = Message(
    'SaslAuthenticateRequest', api_key=36, kind='request', valid="0-2", flexible='2+', fields=[
    F('auth_bytes', 'bytes', '0+'),
])


SASL_AUTHENTICATE_RESPONSE = Message(
    'SaslAuthenticateResponse', api_key=36, kind='response', valid="0-2", flexible='2+', fields=[
    F('error_code', 'int16', '0+'),
    F('error_message', 'string', '0+', nullable='0+'),
    F('auth_bytes', 'bytes', '0+'),
    F('session_lifetime_ms', 'int64', '1+', default=0, ignorable=True),
])


DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST = Message(
    'DescribeUserScramCredentialsRequest', api_key=50, kind='request', valid="0-0", flexible='0+', fields=[
    F('users', '[]UserName', '0+', nullable='0+', fields=[
        F('name', 'string', '0+'),
    ]),
])


DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE = Message(
    'DescribeUserScramCredentialsResponse', api_key=50, kind='response', valid="0-0", flexible='0+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('error_code', 'int16', '0+'),
    F('error_message', 'string', '0+', nullable='0+'),
    F('results', '[]DescribeUserScramCredentialsResult', '0+', fields=[
        F('user', 'string', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('credential_infos', '[]CredentialInfo', '0+', fields=[
            F('mechanism', 'int8', '0+'),
            F('iterations', 'int32', '0+'),
        ]),
    ]),
])


ALTER_USER_SCRAM_CREDENTIALS_REQUEST = Message(
    'AlterUserScramCredentialsRequest', api_key=51, kind='request', valid="0-0", flexible='0+', fields=[
    F('deletions', '[]ScramCredentialDeletion', '0+', fields=[
        F('name', 'string', '0+'),
        F('mechanism', 'int8', '0+'),
    ]),
    F('upsertions', '[]ScramCredentialUpsertion', '0+', fields=[
        F('name', 'string', '0+'),
        F('mechanism', 'int8', '0+'),
        F('iterations', 'int32', '0+'),
        F('salt', 'bytes', '0+'),
        F('salted_password', 'bytes', '0+'),
    ]),
])


ALTER_USER_SCRAM_CREDENTIALS_RESPONSE = Message(
    'AlterUserScramCredentialsResponse', api_key=51, kind='response', valid="0-0", flexible='0+', fields=[
    F('throttle_time_ms', 'int32', '0+'),
    F('results', '[]AlterUserScramCredentialsResult', '0+', fields=[
        F('user', 'string', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
    ]),
])
