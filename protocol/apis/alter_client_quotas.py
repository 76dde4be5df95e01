"""AlterClientQuotas (key 49): we serve v0-1; flexible from v1.

KIP-546: set or remove quotas (``producer_byte_rate``, ``consumer_byte_rate``
...) of client entities. An entity is a list of ``(entity_type, entity_name)``
pairs: ``user``, ``client-id`` or ``ip``, a null name meaning that type's
default entity. Each op sets ``key`` to ``value``, or removes the key when
``remove`` is true. ``validate_only`` checks without storing. The answer has
one entry per entity of the request, with its own error.

Version notes: v1 is the first flexible version.
"""

from ..schema import BOOL, FLOAT64, INT16, INT32, STRING, Api, F, Struct

_ENTITY = F("entity", [Struct(
    F("entity_type", STRING),
    F("entity_name", STRING, null="0+"),
    name="EntityData",
)])

API = Api(
    49,
    "AlterClientQuotas",
    (0, 1),
    flexible=1,
    request=Struct(
        F("entries", [Struct(
            _ENTITY,
            F("ops", [Struct(
                F("key", STRING),
                F("value", FLOAT64),
                F("remove", BOOL),
                name="OpData",
            )]),
            name="EntryData",
        )]),
        F("validate_only", BOOL),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("entries", [Struct(
            F("error_code", INT16),
            F("error_message", STRING, null="0+"),
            _ENTITY,
            name="EntryData",
        )]),
    ),
)
