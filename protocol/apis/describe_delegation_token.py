"""DescribeDelegationToken (key 41): we serve v0-3; flexible from v2.

KIP-48: the tokens of the given ``owners`` (null: every token the requester
may see), each with its owner, timestamps, id, HMAC and renewers.

Version notes: v1 answers before throttling; v2 flexible; v3 the token
requester principal.
"""

from ..schema import BYTES, INT16, INT32, INT64, STRING, Api, F, Struct

_PRINCIPAL = (F("principal_type", STRING), F("principal_name", STRING))

API = Api(
    41,
    "DescribeDelegationToken",
    (0, 3),
    flexible=2,
    request=Struct(
        F("owners", [Struct(*_PRINCIPAL, name="DescribeDelegationTokenOwner")], null="0+"),
    ),
    response=Struct(
        F("error_code", INT16),
        F("tokens", [Struct(
            *_PRINCIPAL,
            F("token_requester_principal_type", STRING, "3+"),
            F("token_requester_principal_name", STRING, "3+"),
            F("issue_timestamp", INT64),
            F("expiry_timestamp", INT64),
            F("max_timestamp", INT64),
            F("token_id", STRING),
            F("hmac", BYTES),
            F("renewers", [Struct(*_PRINCIPAL, name="DescribedDelegationTokenRenewer")]),
            name="DescribedDelegationToken",
        )]),
        F("throttle_time_ms", INT32),
    ),
)
