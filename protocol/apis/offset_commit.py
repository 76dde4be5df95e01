"""OffsetCommit (key 8): versions 0-8; flexible from v8."""

from ..schema import Api, F, Struct, INT16, INT32, INT64, STRING

API = Api(
    8,
    'OffsetCommit',
    (0, 8),
    flexible=8,
    request=Struct(
        F('group_id', STRING),
        F('generation_id_or_member_epoch', INT32, v='1+', default=-1),
        F('member_id', STRING, v='1+'),
        F('group_instance_id', STRING, v='7+', null='7+', default=None),
        F('retention_time_ms', INT64, v='2-4', default=-1),
        F('topics', [Struct(
                F('name', STRING),
                F('partitions', [Struct(
                        F('partition_index', INT32),
                        F('committed_offset', INT64),
                        F('committed_leader_epoch', INT32, v='6+', default=-1),
                        F('commit_timestamp', INT64, v='1', default=-1),
                        F('committed_metadata', STRING, null='0+'),
                    name='OffsetCommitRequestPartition')]),
            name='OffsetCommitRequestTopic')]),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='3+'),
        F('topics', [Struct(
                F('name', STRING),
                F('partitions', [Struct(
                        F('partition_index', INT32),
                        F('error_code', INT16),
                    name='OffsetCommitResponsePartition')]),
            name='OffsetCommitResponseTopic')]),
    ),
)
