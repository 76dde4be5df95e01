"""SaslAuthenticate (key 36): we serve v0-2; flexible from v2.

Carries one SASL token each way after a v1 SaslHandshake (KIP-152).

Version notes:

* v1 adds ``session_lifetime_ms`` to the response (KIP-368): 0 means the
  session never needs re-authentication.
* v2 is the first flexible version.
"""

from ..schema import BYTES, INT16, INT64, STRING, Api, F, Struct

API = Api(
    36,
    "SaslAuthenticate",
    (0, 2),
    flexible=2,
    request=Struct(
        F("auth_bytes", BYTES),
    ),
    response=Struct(
        F("error_code", INT16),
        F("error_message", STRING, null="0+"),
        F("auth_bytes", BYTES),
        F("session_lifetime_ms", INT64, v="1+"),
    ),
)
