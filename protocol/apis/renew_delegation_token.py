"""RenewDelegationToken (key 39): we serve v0-2; flexible from v2.

KIP-48: push the expiry of the token with ``hmac`` out by ``renew_period_ms``.

Version notes: v1 answers before throttling; v2 flexible.
"""

from ..schema import BYTES, INT16, INT32, INT64, Api, F, Struct

API = Api(
    39,
    "RenewDelegationToken",
    (0, 2),
    flexible=2,
    request=Struct(F("hmac", BYTES), F("renew_period_ms", INT64)),
    response=Struct(F("error_code", INT16), F("expiry_timestamp_ms", INT64), F("throttle_time_ms", INT32)),
)
