"""OffsetForLeaderEpoch (key 23): versions 0-4; flexible from v4."""

from ..schema import Api, F, Struct, INT16, INT32, INT64, STRING

API = Api(
    23,
    'OffsetForLeaderEpoch',
    (0, 4),
    flexible=4,
    request=Struct(
        F('replica_id', INT32, v='3+', default=-2),
        F('topics', [Struct(
                F('topic', STRING),
                F('partitions', [Struct(
                        F('partition', INT32),
                        F('current_leader_epoch', INT32, v='2+', default=-1),
                        F('leader_epoch', INT32),
                    name='OffsetForLeaderPartition')]),
            name='OffsetForLeaderTopic')]),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='2+'),
        F('topics', [Struct(
                F('topic', STRING),
                F('partitions', [Struct(
                        F('error_code', INT16),
                        F('partition', INT32),
                        F('leader_epoch', INT32, v='1+', default=-1),
                        F('end_offset', INT64, default=-1),
                    name='EpochEndOffset')]),
            name='OffsetForLeaderTopicResult')]),
    ),
)
