"""JoinGroup (key 11): versions 0-9; flexible from v6."""

from ..schema import Api, F, Struct, BOOL, BYTES, INT16, INT32, STRING

API = Api(
    11,
    'JoinGroup',
    (0, 9),
    flexible=6,
    request=Struct(
        F('group_id', STRING),
        F('session_timeout_ms', INT32),
        F('rebalance_timeout_ms', INT32, v='1+', default=-1),
        F('member_id', STRING),
        F('group_instance_id', STRING, v='5+', null='5+', default=None),
        F('protocol_type', STRING),
        F('protocols', [Struct(
                F('name', STRING),
                F('metadata', BYTES),
            name='JoinGroupRequestProtocol')]),
        F('reason', STRING, v='8+', null='8+', default=None),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='2+'),
        F('error_code', INT16),
        F('generation_id', INT32, default=-1),
        F('protocol_type', STRING, v='7+', null='7+', default=None),
        F('protocol_name', STRING, null='7+'),
        F('leader', STRING),
        F('skip_assignment', BOOL, v='9+'),
        F('member_id', STRING),
        F('members', [Struct(
                F('member_id', STRING),
                F('group_instance_id', STRING, v='5+', null='5+', default=None),
                F('metadata', BYTES),
            name='JoinGroupResponseMember')]),
    ),
)
