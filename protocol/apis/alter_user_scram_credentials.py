"""AlterUserScramCredentials (key 51): we serve v0; flexible from v0 (always).

KIP-554: delete some users' credentials (user and mechanism) and create or
replace others. An upsertion carries what the client derived from the
password, never the password itself: the salt it drew, the iteration count
and the salted password (PBKDF2 of the password); the broker keeps only the
stored key and server key computed from it. The answer has one result per
user (error code and message). Mechanism numbers are Kafka's
``ScramMechanism`` types: 1 is SCRAM-SHA-256, 2 SCRAM-SHA-512.
"""

from ..schema import BYTES, INT8, INT16, INT32, STRING, Api, F, Struct

API = Api(
    51,
    "AlterUserScramCredentials",
    (0, 0),
    flexible=0,
    request=Struct(
        F("deletions", [Struct(
            F("name", STRING),
            F("mechanism", INT8),
            name="ScramCredentialDeletion",
        )]),
        F("upsertions", [Struct(
            F("name", STRING),
            F("mechanism", INT8),
            F("iterations", INT32),
            F("salt", BYTES),
            F("salted_password", BYTES),
            name="ScramCredentialUpsertion",
        )]),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("results", [Struct(
            F("user", STRING),
            F("error_code", INT16),
            F("error_message", STRING, null="0+"),
            name="AlterUserScramCredentialsResult",
        )]),
    ),
)
