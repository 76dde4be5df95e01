"""SaslAuthenticate (key 36): versions 0-2; flexible from v2."""

from ..schema import Api, F, Struct, BYTES, INT16, INT64, STRING

API = Api(
    36,
    'SaslAuthenticate',
    (0, 2),
    flexible=2,
    request=Struct(
        F('auth_bytes', BYTES),
    ),
    response=Struct(
        F('error_code', INT16),
        F('error_message', STRING, null='0+'),
        F('auth_bytes', BYTES),
        F('session_lifetime_ms', INT64, v='1+'),
    ),
)
