"""Authentication: SaslHandshake (17), SaslAuthenticate (36).

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
