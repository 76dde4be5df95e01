"""ExpireDelegationToken (key 40): we serve v0-2; flexible from v2.

KIP-48: expire the token with ``hmac`` after ``expiry_time_period_ms`` (a
negative period: at once).

Version notes: v1 answers before throttling; v2 flexible.
"""

from ..schema import BYTES, INT16, INT32, INT64, Api, F, Struct

API = Api(
    40,
    "ExpireDelegationToken",
    (0, 2),
    flexible=2,
    request=Struct(F("hmac", BYTES), F("expiry_time_period_ms", INT64)),
    response=Struct(F("error_code", INT16), F("expiry_timestamp_ms", INT64), F("throttle_time_ms", INT32)),
)
