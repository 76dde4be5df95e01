"""DeleteGroups (key 42): versions 0-2; flexible from v2."""

from ..schema import Api, F, Struct, INT16, INT32, STRING

API = Api(
    42,
    'DeleteGroups',
    (0, 2),
    flexible=2,
    request=Struct(
        F('groups_names', [STRING]),
    ),
    response=Struct(
        F('throttle_time_ms', INT32),
        F('results', [Struct(
                F('group_id', STRING),
                F('error_code', INT16),
            name='DeletableGroupResult')]),
    ),
)
