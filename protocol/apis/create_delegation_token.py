"""CreateDelegationToken (key 38): we serve v0-3; flexible from v2.

KIP-48: a token for ``owner`` (v3+; default: the requester) that ``renewers``
may renew, living at most ``max_lifetime_ms`` (-1: the broker's maximum).
The answer carries the token's id, HMAC and timestamps.

Version notes: v1 answers before throttling; v2 flexible; v3 owner and
token requester principals.
"""

from ..schema import BYTES, INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    38,
    "CreateDelegationToken",
    (0, 3),
    flexible=2,
    request=Struct(
        F("owner_principal_type", STRING, "3+", null="3+"),
        F("owner_principal_name", STRING, "3+", null="3+"),
        F("renewers", [Struct(
            F("principal_type", STRING),
            F("principal_name", STRING),
            name="CreatableRenewers",
        )]),
        F("max_lifetime_ms", INT64),
    ),
    response=Struct(
        F("error_code", INT16),
        F("principal_type", STRING),
        F("principal_name", STRING),
        F("token_requester_principal_type", STRING, "3+"),
        F("token_requester_principal_name", STRING, "3+"),
        F("issue_timestamp_ms", INT64),
        F("expiry_timestamp_ms", INT64),
        F("max_timestamp_ms", INT64),
        F("token_id", STRING),
        F("hmac", BYTES),
        F("throttle_time_ms", INT32),
    ),
)
