"""DescribeGroups (key 15): versions 0-5; flexible from v5."""

from ..schema import Api, F, Struct, BOOL, BYTES, INT16, INT32, STRING

API = Api(
    15,
    'DescribeGroups',
    (0, 5),
    flexible=5,
    request=Struct(
        F('groups', [STRING]),
        F('include_authorized_operations', BOOL, v='3+'),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='1+'),
        F('groups', [Struct(
                F('error_code', INT16),
                F('group_id', STRING),
                F('group_state', STRING),
                F('protocol_type', STRING),
                F('protocol_data', STRING),
                F('members', [Struct(
                        F('member_id', STRING),
                        F('group_instance_id', STRING, v='4+', null='4+', default=None),
                        F('client_id', STRING),
                        F('client_host', STRING),
                        F('member_metadata', BYTES),
                        F('member_assignment', BYTES),
                    name='DescribedGroupMember')]),
                F('authorized_operations', INT32, v='3+', default=-2147483648),
            name='DescribedGroup')]),
    ),
)
