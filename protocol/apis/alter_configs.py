"""AlterConfigs (key 33): we serve v0-2; flexible from v2.

Replaces the whole dynamic config of each resource with the given
``configs`` (a config left out returns to its default); IncrementalAlterConfigs
is the per-key alternative.

Version notes:

* v1 has the v0 layout (KIP-219 throttling).
* v2 is the first flexible version.
"""

from ..schema import BOOL, INT8, INT16, INT32, STRING, Api, F, Struct

API = Api(
    33,
    "AlterConfigs",
    (0, 2),
    flexible=2,
    request=Struct(
        F("resources", [Struct(
            F("resource_type", INT8),
            F("resource_name", STRING),
            F("configs", [Struct(
                F("name", STRING),
                F("value", STRING, null="0+"),
                name="AlterableConfig",
            )]),
            name="AlterConfigsResource",
        )]),
        F("validate_only", BOOL),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("responses", [Struct(
            F("error_code", INT16),
            F("error_message", STRING, null="0+"),
            F("resource_type", INT8),
            F("resource_name", STRING),
            name="AlterConfigsResourceResponse",
        )]),
    ),
)
