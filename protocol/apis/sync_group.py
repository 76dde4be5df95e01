"""SyncGroup (key 14): versions 0-5; flexible from v4."""

from ..schema import Api, F, Struct, BYTES, INT16, INT32, STRING

API = Api(
    14,
    'SyncGroup',
    (0, 5),
    flexible=4,
    request=Struct(
        F('group_id', STRING),
        F('generation_id', INT32),
        F('member_id', STRING),
        F('group_instance_id', STRING, v='3+', null='3+', default=None),
        F('protocol_type', STRING, v='5+', null='5+', default=None),
        F('protocol_name', STRING, v='5+', null='5+', default=None),
        F('assignments', [Struct(
                F('member_id', STRING),
                F('assignment', BYTES),
            name='SyncGroupRequestAssignment')]),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='1+'),
        F('error_code', INT16),
        F('protocol_type', STRING, v='5+', null='5+', default=None),
        F('protocol_name', STRING, v='5+', null='5+', default=None),
        F('assignment', BYTES),
    ),
)
