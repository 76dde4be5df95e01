"""DescribeUserScramCredentials (key 50): we serve v0; flexible from v0 (always).

KIP-554: the SCRAM credentials of some users (``users``), or of every user
when ``users`` is null or empty. Each result names the user and lists its
credentials as (mechanism, iterations) pairs, never salts or keys; a user
without credentials gets RESOURCE_NOT_FOUND, a user named twice
DUPLICATE_RESOURCE. Mechanism numbers are Kafka's ``ScramMechanism`` types:
1 is SCRAM-SHA-256, 2 SCRAM-SHA-512.
"""

from ..schema import INT8, INT16, INT32, STRING, Api, F, Struct

API = Api(
    50,
    "DescribeUserScramCredentials",
    (0, 0),
    flexible=0,
    request=Struct(
        F("users", [Struct(
            F("name", STRING),
            name="UserName",
        )], null="0+"),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, null="0+"),
        F("results", [Struct(
            F("user", STRING),
            F("error_code", INT16),
            F("error_message", STRING, null="0+"),
            F("credential_infos", [Struct(
                F("mechanism", INT8),
                F("iterations", INT32),
                name="CredentialInfo",
            )]),
            name="DescribeUserScramCredentialsResult",
        )]),
    ),
)
