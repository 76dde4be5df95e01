"""DescribeConfigs (key 32): we serve v0-4; flexible from v4.

Describes the configs of resources (``resource_type`` 2 = topic, 4 =
broker, 8 = broker logger); null ``configuration_keys`` means all of them.

Version notes:

* v0 answers ``is_default`` per config. v1 drops it for ``config_source``
  and adds ``include_synonyms`` with the answered ``synonyms`` (KIP-226).
* v2 has the v1 layout (KIP-219 throttling).
* v3 (KIP-569) adds ``include_documentation`` and answers each config's
  ``config_type`` and ``documentation``.
* v4 is the first flexible version.

Kafka 4.0 no longer serves v0 (KIP-896); we still do.
"""

from ..schema import BOOL, INT8, INT16, INT32, STRING, Api, F, Struct

API = Api(
    32,
    "DescribeConfigs",
    (0, 4),
    flexible=4,
    request=Struct(
        F("resources", [Struct(
            F("resource_type", INT8),
            F("resource_name", STRING),
            F("configuration_keys", [STRING], null="0+"),
            name="DescribeConfigsResource",
        )]),
        F("include_synonyms", BOOL, v="1+"),
        F("include_documentation", BOOL, v="3+"),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("results", [Struct(
            F("error_code", INT16),
            F("error_message", STRING, null="0+"),
            F("resource_type", INT8),
            F("resource_name", STRING),
            F("configs", [Struct(
                F("name", STRING),
                F("value", STRING, null="0+"),
                F("read_only", BOOL),
                F("config_source", INT8, v="1+", default=-1),
                F("is_default", BOOL, v="0"),
                F("is_sensitive", BOOL),
                F("synonyms", [Struct(
                    F("name", STRING),
                    F("value", STRING, null="1+"),
                    F("source", INT8),
                    name="DescribeConfigsSynonym",
                )], v="1+"),
                F("config_type", INT8, v="3+"),
                F("documentation", STRING, v="3+", null="3+"),
                name="DescribeConfigsResourceResult",
            )]),
            name="DescribeConfigsResult",
        )]),
    ),
)
