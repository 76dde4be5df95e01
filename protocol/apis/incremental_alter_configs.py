"""IncrementalAlterConfigs (key 44): we serve v0-1; flexible from v1.

Changes single config keys (KIP-339); ``config_operation`` is 0 SET,
1 DELETE, 2 APPEND or 3 SUBTRACT (the last two for list-valued configs).

Version notes:

* v1 is the first flexible version; the layout is otherwise that of v0.
"""

from ..schema import BOOL, INT8, INT16, INT32, STRING, Api, F, Struct

API = Api(
    44,
    "IncrementalAlterConfigs",
    (0, 1),
    flexible=1,
    request=Struct(
        F("resources", [Struct(
            F("resource_type", INT8),
            F("resource_name", STRING),
            F("configs", [Struct(
                F("name", STRING),
                F("config_operation", INT8),
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
