"""ListConfigResources (key 74): we serve v0-1; flexible from v0.

KIP-1000 added it as ListClientMetricsResources (v0: the client-metrics
resources only); KIP-1142 made it list every resource that has configs, of
the ``resource_types`` asked for (v1+; empty: every type the broker lists).

Version notes: v1 resource_types in the request, resource_type per entry.
"""

from ..schema import INT8, INT16, INT32, STRING, Api, F, Struct

API = Api(
    74,
    "ListConfigResources",
    (0, 1),
    flexible=0,
    request=Struct(F("resource_types", [INT8], "1+")),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("config_resources", [Struct(
            F("resource_name", STRING),
            F("resource_type", INT8, "1+", default=16),  # v0 lists client-metrics resources only
            name="ConfigResource",
        )]),
    ),
)
