"""DescribeClientQuotas (key 48): we serve v0-1; flexible from v1.

KIP-546: the quotas of the entities (user, client-id, ip) a filter matches.
Each filter component names an entity type and how to match it:
``match_type`` 0 is an exact name (``match``), 1 the default entity (no
``match``), 2 any named entity; ``strict`` leaves out entities with types
the filter does not mention. ``entries`` is null in an error answer.

Version notes: v1 is the first flexible version.
"""

from ..schema import BOOL, FLOAT64, INT8, INT16, INT32, STRING, Api, F, Struct

API = Api(
    48,
    "DescribeClientQuotas",
    (0, 1),
    flexible=1,
    request=Struct(
        F("components", [Struct(
            F("entity_type", STRING),
            F("match_type", INT8),
            F("match", STRING, null="0+"),
            name="ComponentData",
        )]),
        F("strict", BOOL),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, null="0+"),
        F("entries", [Struct(
            F("entity", [Struct(
                F("entity_type", STRING),
                F("entity_name", STRING, null="0+"),
                name="EntityData",
            )]),
            F("values", [Struct(
                F("key", STRING),
                F("value", FLOAT64),
                name="ValueData",
            )]),
            name="EntryData",
        )], null="0+"),
    ),
)
