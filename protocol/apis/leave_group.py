"""LeaveGroup (key 13): versions 0-5; flexible from v4."""

from ..schema import Api, F, Struct, INT16, INT32, STRING

API = Api(
    13,
    'LeaveGroup',
    (0, 5),
    flexible=4,
    request=Struct(
        F('group_id', STRING),
        F('member_id', STRING, v='0-2'),
        F('members', [Struct(
                F('member_id', STRING, v='3+'),
                F('group_instance_id', STRING, v='3+', null='3+', default=None),
                F('reason', STRING, v='5+', null='5+', default=None),
            name='MemberIdentity')], v='3+'),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='1+'),
        F('error_code', INT16),
        F('members', [Struct(
                F('member_id', STRING, v='3+'),
                F('group_instance_id', STRING, v='3+', null='3+'),
                F('error_code', INT16, v='3+'),
            name='MemberResponse')], v='3+'),
    ),
)
