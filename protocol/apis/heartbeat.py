"""Heartbeat (key 12): versions 0-4; flexible from v4."""

from ..schema import Api, F, Struct, INT16, INT32, STRING

API = Api(
    12,
    'Heartbeat',
    (0, 4),
    flexible=4,
    request=Struct(
        F('group_id', STRING),
        F('generation_id', INT32),
        F('member_id', STRING),
        F('group_instance_id', STRING, v='3+', null='3+', default=None),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='1+'),
        F('error_code', INT16),
    ),
)
