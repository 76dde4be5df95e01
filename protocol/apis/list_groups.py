"""ListGroups (key 16): versions 0-4; flexible from v3."""

from ..schema import Api, F, Struct, INT16, INT32, STRING

API = Api(
    16,
    'ListGroups',
    (0, 4),
    flexible=3,
    request=Struct(
        F('states_filter', [STRING], v='4+'),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='1+'),
        F('error_code', INT16),
        F('groups', [Struct(
                F('group_id', STRING),
                F('protocol_type', STRING),
                F('group_state', STRING, v='4+'),
            name='ListedGroup')]),
    ),
)
