"""ApiVersions (key 18): we serve v0-4; flexible from v3.

Version notes:

* v0 is the bare list of (api_key, min_version, max_version); v1 adds
  ``throttle_time_ms``; v2 has the same layout and marks a client that knows
  the broker throttles after answering (KIP-219).
* v3 (KIP-511) is the first flexible version: the request names the client
  software, and the response may carry the feature tables of KIP-584 and
  ``zk_migration_ready`` (KIP-866) as tagged fields.
* v4 has the v3 layout; it exists so that a broker may advertise a supported
  feature whose ``min_version`` is 0 (KAFKA-17011), which v3 clients reject.

The response header is always v0, even for flexible versions (see
``Api.response_header_version``), and a request at a version we do not know
is answered UNSUPPORTED_VERSION in the v0 layout, listing our ApiVersions
range so the client can retry.
"""

from ..schema import BOOL, INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    18,
    "ApiVersions",
    (0, 4),
    flexible=3,
    request=Struct(
        F("client_software_name", STRING, v="3+"),
        F("client_software_version", STRING, v="3+"),
    ),
    response=Struct(
        F("error_code", INT16),
        F("api_keys", [Struct(
            F("api_key", INT16),
            F("min_version", INT16),
            F("max_version", INT16),
            name="ApiVersion",
        )]),
        F("throttle_time_ms", INT32, v="1+"),
        F("supported_features", [Struct(
            F("name", STRING),
            F("min_version", INT16),
            F("max_version", INT16),
            name="SupportedFeatureKey",
        )], v="3+", tag=0),
        F("finalized_features_epoch", INT64, v="3+", tag=1, default=-1),
        F("finalized_features", [Struct(
            F("name", STRING),
            F("max_version_level", INT16),
            F("min_version_level", INT16),
            name="FinalizedFeatureKey",
        )], v="3+", tag=2),
        F("zk_migration_ready", BOOL, v="3+", tag=3),
    ),
)
